"""A run told in plain words, from its log: no model is asked, so it costs nothing
and says only what the log holds."""

from collections import Counter
from typing import Any

RECENT = 25


def _sentence(event: dict[str, Any]) -> str | None:
    data, kind = event["data"], event["type"]
    if kind == "RunLaunched":
        asked = data.get("request") or data.get("benchmark_name") or data.get("benchmark_id")
        return f"Launched ({data.get('mode', 'pinned')}): {asked}."
    if kind == "DriverSelected":
        return f"The {data['driver']} Driver took the run" + (
            f" ({data['note']})." if data.get("note") else "."
        )
    if kind == "BenchmarkResolved":
        return f"Resolved the benchmark: {data['benchmark_name']}, subset {data['subset_slug']}."
    if kind == "PhaseStarted":
        return f"Phase {data['phase']} started."
    if kind == "PhaseCompleted":
        return f"Phase {data['phase']} completed."
    if kind == "PhaseFailed":
        return f"Phase {data['phase']} failed: {data.get('error_type')}: {data.get('detail')}."
    if kind == "PhaseRestarted":
        return f"Phase {data.get('phase')} restarted: {data.get('reason')}."
    if kind == "AgentTextEvent":
        return f"Driver: {data['text']}"
    if kind == "AtomizeArtifact":
        return f"The scorer is {data['impl_id']} ({data['kind']})."
    if kind == "RunHalted":
        return f"Halted: {data['halt_reason']}."
    if kind == "HaltCleared":
        return "Carried on after the halt."
    if kind == "RunUpdated" and data.get("visibility"):
        return f"Made {data['visibility']}."
    if kind == "PipelineFinished":
        summary = data.get("summary") or {}
        if data["status"] == "ok":
            return (
                f"Finished: {summary.get('passed', 0)} of {summary.get('total', 0)} tasks passed."
            )
        return f"Ended in error: {data.get('error_type')}: {data.get('detail')}."
    return None


def narrate(events: list[dict[str, Any]], slice: str) -> dict[str, Any]:
    """``text`` (one line per notable step) and ``outcomes`` (tasks settled so far)."""
    outcomes = Counter(
        e["data"]["outcome"] for e in events if e["type"] == "MaterializeTaskAggregated"
    )
    lines = [s for e in events if (s := _sentence(e))]
    if slice == "recent":
        lines = lines[-RECENT:]
    settled = sum(outcomes.values())
    if settled and not any(e["type"] == "PipelineFinished" for e in events):
        tally = ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items()))
        lines.append(f"So far {settled} tasks settled: {tally}.")
    return {"text": "\n".join(lines), "outcomes": dict(outcomes), "events_read": len(events)}
