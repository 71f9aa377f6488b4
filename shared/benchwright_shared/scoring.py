"""How task outcomes add up: aggregators and the pass-rate summary.

Shared because the orchestrator writes the summary into the log and the
gateway recomputes it live from task rows; both must agree.
"""

from collections.abc import Sequence
from typing import Any


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


def summarize(outcomes: Sequence[tuple[str, int] | tuple[str, int, bool]]) -> dict[str, Any]:
    """Pass rate over passed + failed; errors stay out of the denominator.

    ``outcomes`` holds (outcome, duration_ms) per aggregated task, optionally with
    a third item saying the error was the platform's (``benchwright_shared.outcomes``);
    those are also counted as ``infra_errored``.
    """
    passed = sum(1 for o in outcomes if o[0] == "pass")
    failed = sum(1 for o in outcomes if o[0] == "fail")
    errored = sum(1 for o in outcomes if o[0] == "err")
    infra = sum(1 for o in outcomes if o[0] == "err" and len(o) > 2 and o[2])
    durations = sorted(o[1] for o in outcomes)
    return {
        "total": len(outcomes),
        "passed": passed,
        "failed": failed,
        "errored": errored,
        "infra_errored": infra,
        "pass_rate": (passed / (passed + failed)) if passed + failed else None,
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
