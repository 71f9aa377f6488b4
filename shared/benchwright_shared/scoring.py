"""How task outcomes add up: aggregators and the run's summary (with its intervals).

Shared because the orchestrator writes the summary into the log and the
gateway recomputes it live from task rows; both must agree.
"""

from collections.abc import Sequence
from typing import Any, NamedTuple

from benchwright_shared.stats import LEVEL, bootstrap_mean, wilson, within_task_variance


def outcome_for(score: float | None) -> str:
    """pass at score >= 1.0, fail below, err when there is no score."""
    if score is None:
        return "err"
    return "pass" if score >= 1.0 else "fail"


def percentile(sorted_values: list[int], pct: int) -> int | None:
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return None
    rank = max(1, -(-pct * len(sorted_values) // 100))
    return sorted_values[rank - 1]


class Settled(NamedTuple):
    """One aggregated task of a sweep, as a summary needs it."""

    outcome: str
    duration_ms: int
    # The error was the platform's (``benchwright_shared.outcomes``).
    infra: bool = False
    score: float | None = None
    # The row's group key (its ``category``: an MMLU subject): the unit a cluster
    # bootstrap resamples.
    group: str | None = None
    trial_scores: tuple[float | None, ...] = ()
    task_index: int = 0


def summarize(outcomes: Sequence[Settled | tuple[Any, ...]]) -> dict[str, Any]:
    """Counts, the pass rate over passed + failed (errors stay out of the denominator),
    the mean score, and a 95% interval for each.

    ``outcomes`` holds one ``Settled`` per aggregated task (a bare ``(outcome,
    duration_ms[, infra])`` tuple is read as one). Rows are taken in index order so
    that every caller resamples the same sequence (``benchwright_shared.stats``).
    """
    rows = sorted(
        (o if isinstance(o, Settled) else Settled(*o) for o in outcomes), key=lambda r: r.task_index
    )
    passed = sum(1 for o in rows if o.outcome == "pass")
    failed = sum(1 for o in rows if o.outcome == "fail")
    errored = sum(1 for o in rows if o.outcome == "err")
    infra = sum(1 for o in rows if o.outcome == "err" and o.infra)
    durations = sorted(o.duration_ms for o in rows)
    scored = [o for o in rows if o.outcome != "err" and o.score is not None]
    mean = bootstrap_mean([o.score for o in scored], [o.group for o in scored])  # type: ignore[misc]
    pass_interval = wilson(passed, passed + failed)
    return {
        "total": len(rows),
        "passed": passed,
        "failed": failed,
        "errored": errored,
        "infra_errored": infra,
        "pass_rate": (passed / (passed + failed)) if passed + failed else None,
        "mean_score": mean["estimate"] if mean else None,
        "intervals": {
            "level": LEVEL,
            "pass_rate": (
                {"low": pass_interval[0], "high": pass_interval[1], "method": "wilson"}
                if pass_interval
                else None
            ),
            "mean_score": (
                {k: mean[k] for k in ("low", "high", "method", "resamples", "clusters")}
                if mean
                else None
            ),
        },
        "trial_variance": within_task_variance([o.trial_scores for o in rows]),
        "duration_ms_p50": percentile(durations, 50),
        "duration_ms_p95": percentile(durations, 95),
    }


# -- trials and aggregators --------------------------------------------------------------
DEFAULT_TRIALS: dict[str, Any] = {"plan": {"k": 1}, "aggregator": {"name": "any_pass"}}


# One task's trials: (score or None when the trial errored, the trial's score_meta).
Trials = list[tuple[float | None, dict[str, Any]]]


class AggregatorError(ValueError):
    """An aggregator name or its parameters are not valid."""


def _settled(
    trials: Trials,
) -> list[tuple[float, dict[str, Any]]]:
    return [(s, m) for s, m in trials if s is not None]


def _any_pass(trials: Trials, _: dict[str, Any]) -> float | None:
    settled = _settled(trials)
    return max(s for s, _ in settled) if settled else None


def _all_pass(trials: Trials, _: dict[str, Any]) -> float | None:
    settled = _settled(trials)
    if not settled:
        return None
    # An errored trial is not a pass: all_pass needs every trial to pass.
    return 1.0 if len(settled) == len(trials) and all(s >= 1.0 for s, _ in settled) else 0.0


def _mean(trials: Trials, _: dict[str, Any]) -> float | None:
    settled = _settled(trials)
    return sum(s for s, _ in settled) / len(settled) if settled else None


def _majority_on(trials: Trials, params: dict[str, Any]) -> float | None:
    field = params["field"]
    settled = [(s, m) for s, m in _settled(trials) if field in m]
    if not settled:
        return None
    votes: dict[str, list[float]] = {}
    for score, meta in settled:
        votes.setdefault(repr(meta[field]), []).append(score)
    # The modal answer wins; ties go to the answer seen first.
    winner = max(votes.values(), key=len)
    return winner[0]


def _weighted_mean(trials: Trials, params: dict[str, Any]) -> float | None:
    field = params["weight"]
    weighted = [(s, float(m.get(field, 0))) for s, m in _settled(trials)]
    total = sum(w for _, w in weighted)
    if not weighted or total <= 0:
        return None
    return sum(s * w for s, w in weighted) / total


def _min_above(trials: Trials, params: dict[str, Any]) -> float | None:
    field, threshold = params["field"], float(params["threshold"])
    settled = _settled(trials)
    if not settled:
        return None
    confident = [s for s, m in settled if float(m.get(field, float("-inf"))) > threshold]
    return max(confident) if confident else 0.0


# name -> (function, required parameters)
AGGREGATORS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "any_pass": (_any_pass, ()),
    "all_pass": (_all_pass, ()),
    "mean": (_mean, ()),
    "majority_on": (_majority_on, ("field",)),
    "weighted_mean": (_weighted_mean, ("weight",)),
    "min_above": (_min_above, ("field", "threshold")),
}


def validate_aggregator(spec: dict[str, Any]) -> dict[str, Any]:
    """Check an aggregator spec (``{"name": ..., **params}``); returns it unchanged."""
    name = spec.get("name")
    if name not in AGGREGATORS:
        raise AggregatorError(f"unknown aggregator {name!r}; known: {', '.join(AGGREGATORS)}")
    missing = [p for p in AGGREGATORS[name][1] if p not in spec]
    if missing:
        raise AggregatorError(f"aggregator {name!r} needs {', '.join(missing)}")
    return spec


def aggregate(spec: dict[str, Any], trials: Trials) -> tuple[float | None, str]:
    """Reduce one task's trials (score, score_meta) to its row score and outcome."""
    function, _ = AGGREGATORS[validate_aggregator(spec)["name"]]
    score = function(trials, spec)
    return score, outcome_for(score)
