"""How task outcomes add up: aggregators and the pass-rate summary.

Shared because the orchestrator writes the summary into the log and the
gateway recomputes it live from task rows; both must agree.
"""

from typing import Any


def outcome_for(score: float | None) -> str:
    """pass at score >= 1.0, fail below, err when there is no score."""
    if score is None:
        return "err"
    return "pass" if score >= 1.0 else "fail"


def aggregate_any_pass(scores: list[float | None]) -> tuple[float | None, str]:
    """``any_pass``: the best trial's score; ``err`` only when every trial errored."""
    settled = [s for s in scores if s is not None]
    if not settled:
        return None, "err"
    best = max(settled)
    return best, outcome_for(best)


def percentile(sorted_values: list[int], pct: int) -> int | None:
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return None
    rank = max(1, -(-pct * len(sorted_values) // 100))
    return sorted_values[rank - 1]


def summarize(outcomes: list[tuple[str, int]]) -> dict[str, Any]:
    """Pass rate over passed + failed; errors stay out of the denominator.

    ``outcomes`` holds (outcome, duration_ms) per aggregated task.
    """
    passed = sum(1 for o, _ in outcomes if o == "pass")
    failed = sum(1 for o, _ in outcomes if o == "fail")
    errored = sum(1 for o, _ in outcomes if o == "err")
    durations = sorted(d for _, d in outcomes)
    return {
        "total": len(outcomes),
        "passed": passed,
        "failed": failed,
        "errored": errored,
        "pass_rate": (passed / (passed + failed)) if passed + failed else None,
        "duration_ms_p50": percentile(durations, 50),
        "duration_ms_p95": percentile(durations, 95),
    }
