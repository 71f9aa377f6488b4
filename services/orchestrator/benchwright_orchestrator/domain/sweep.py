"""A run's trials: which (task, trial) pairs of the current sweep are settled, which
are still to send, and when a task's k trials add up to its outcome.

The sweep's rules live here, not in the pipeline: a resumed or recovered sweep
asks this part of the run, so nothing is held twice. ``Run`` applies its events
and calls in; this class knows nothing of events.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from benchwright_shared.contracts import TaskOutcome
from benchwright_shared.outcomes import is_infra_error
from benchwright_shared.scoring import Settled, aggregate, summarize

__all__ = ["SPEND_FIELDS", "TrialSweep", "trial_fields"]

SPEND_FIELDS = ("cost_micros", "prompt_tokens", "completion_tokens", "calls")
# What ``Run.MaterializeTaskResult`` records of a reported trial, besides its invocation.
_TRIAL_FIELDS = frozenset(
    {
        "task_id",
        "index",
        "trial",
        "score",
        "score_meta",
        "outcome",
        "output",
        "error_type",
        "error",
        "duration_ms",
        "cached_calls",
        *SPEND_FIELDS,
    }
)


def trial_fields(result: TaskOutcome) -> dict[str, Any]:
    """A reported trial as its ``MaterializeTaskResult`` records it: a trial that ran
    out of time broke the task duration limit."""
    fields = result.model_dump(include=set(_TRIAL_FIELDS))
    if fields["error_type"] == "timeout":
        fields["error_type"] = "limit_exceeded:task.duration"
    return fields


@dataclass
class TrialSweep:
    """The results of one Materialize sweep (a retried Materialize starts a new one).

    State is plain JSON (index and trial keys are strings) because the run's
    snapshots store it as such.
    """

    # The launch's frozen trials config: ``{"plan": {"k": ...}, "aggregator": {...}}``.
    trials: dict[str, Any]
    # The Materialize invocation the sweep belongs to (0: none started yet).
    invocation: int = 0
    # index -> trial -> [score, score_meta, duration_ms, error_type, *spend]; the spend
    # (``SPEND_FIELDS``) only when the proxy metered the trial.
    trial_results: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    aggregated: dict[str, str] = field(default_factory=dict)  # index -> outcome
    # index -> [score, group, trial scores]: what the summary's intervals need.
    detail: dict[str, list[Any]] = field(default_factory=dict)
    # index -> True for a task that ended ``err`` because of the platform.
    infra: dict[str, bool] = field(default_factory=dict)

    @property
    def k(self) -> int:
        """Trials per task."""
        return int(self.trials["plan"]["k"])

    def begin(self, invocation: int) -> None:
        """Start the sweep of Materialize invocation ``invocation`` from nothing."""
        self.invocation = invocation
        self.trial_results, self.aggregated, self.detail, self.infra = {}, {}, {}, {}

    def settled(self, index: int, trial: int) -> bool:
        """Whether this sweep has a result for ``(index, trial)`` (scored, or err)."""
        return str(index) in self.aggregated or str(trial) in self.trial_results.get(str(index), {})

    def unsent(self, indices: Iterable[int]) -> list[tuple[int, int]]:
        """The (index, trial) pairs of ``indices`` without a result in this sweep."""
        return [(i, t) for i in indices for t in range(self.k) if not self.settled(i, t)]

    def takes(self, index: int, trial: int, invocation: int) -> bool:
        """Whether a reported result is new to this sweep: not of another sweep (an
        earlier Materialize), not already on record (a redelivered or late batch),
        and a trial the plan has."""
        return (
            invocation == self.invocation and 0 <= trial < self.k and not self.settled(index, trial)
        )

    def record_trial(
        self,
        index: int,
        invocation: int,
        trial: int,
        score: float | None,
        score_meta: dict[str, Any],
        duration_ms: int,
        error_type: str | None,
        spend: dict[str, int | None],
    ) -> None:
        """Keep one trial's result (one of another sweep is ignored)."""
        if invocation != self.invocation:
            return
        metered = [] if spend["cost_micros"] is None else [spend[f] for f in SPEND_FIELDS]
        self.trial_results.setdefault(str(index), {})[str(trial)] = [
            score,
            score_meta,
            duration_ms,
            error_type,
            *metered,
        ]

    def verdict(self, index: int) -> dict[str, Any] | None:
        """Once all k trials of ``index`` are in: what its aggregate records (score,
        outcome, trial scores, aggregator, infra and the summed spend); else None."""
        trials = self.trial_results.get(str(index), {})
        if len(trials) < self.k:
            return None
        ordered = [trials[t] for t in sorted(trials, key=int)]
        aggregator = self.trials["aggregator"]
        score, outcome = aggregate(aggregator, [(v[0], v[1]) for v in ordered])
        return {
            "score": score,
            "outcome": outcome,
            "trial_scores": [v[0] for v in ordered],
            "aggregator": aggregator["name"],
            "infra": outcome == "err" and any(is_infra_error(v[3]) for v in ordered),
            **_spend(ordered),
        }

    def record_aggregate(
        self,
        index: int,
        invocation: int,
        score: float | None,
        outcome: str,
        trial_scores: list[float | None],
        group: str | None,
        infra: bool,
    ) -> None:
        """Keep a task's outcome (one of another sweep is ignored)."""
        if invocation != self.invocation:
            return
        self.aggregated[str(index)] = outcome
        self.detail[str(index)] = [score, group, list(trial_scores)]
        if infra:
            self.infra[str(index)] = True

    def outcomes(self) -> list[Settled]:
        """Every aggregated task of this sweep, as its summary needs it.

        A task's duration is its slowest trial: the trials ran side by side.
        """
        settled = []
        for index, outcome in self.aggregated.items():
            score, group, trial_scores = self.detail.get(index, (None, None, []))
            trials = self.trial_results.get(index, {}).values()
            settled.append(
                Settled(
                    outcome=outcome,
                    duration_ms=max((int(v[2]) for v in trials), default=0),
                    infra=index in self.infra,
                    score=score,
                    group=group,
                    trial_scores=tuple(trial_scores),
                    task_index=int(index),
                )
            )
        return settled

    def summary(self) -> dict[str, Any]:
        """The sweep's summary (pass rate, intervals, durations ...)."""
        return summarize(self.outcomes())


def _spend(trials: list[list[Any]]) -> dict[str, int | None]:
    """A task's model spend: the sum over its trials of what each recorded. None when
    no trial was metered."""
    metered = [t[4:8] for t in trials if len(t) >= 8 and t[4] is not None]
    if not metered:
        return dict.fromkeys(SPEND_FIELDS)
    return {name: sum(int(m[i] or 0) for m in metered) for i, name in enumerate(SPEND_FIELDS)}
