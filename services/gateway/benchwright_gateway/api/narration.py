"""A run told in plain words, from its log: no model is asked, so it costs nothing
and says only what the log holds."""

from collections import Counter
from collections.abc import Callable
from typing import Any

from benchwright_shared.contracts.run_events import (
    AgentTextEvent,
    AtomizeArtifact,
    BenchmarkResolved,
    DriverSelected,
    HaltCleared,
    MaterializeTaskAggregated,
    PhaseCompleted,
    PhaseFailed,
    PhaseRestarted,
    PhaseStarted,
    PipelineFinished,
    RunEventData,
    RunHalted,
    RunLaunched,
    RunUpdated,
    TaskLabelled,
)
from benchwright_shared.run_log import parse_run_event, run_event_type

RECENT = 25


# The types a narration tells, each to its sentence (None: nothing to say this time);
# any other type, one a newer orchestrator writes too, is passed over.
SENTENCES: dict[str, Callable[[Any], str | None]] = {}


def _tells[D: RunEventData](
    model: type[D],
) -> Callable[[Callable[[D], str | None]], Callable[[D], str | None]]:
    def register(tell: Callable[[D], str | None]) -> Callable[[D], str | None]:
        SENTENCES[run_event_type(model)] = tell
        return tell

    return register


@_tells(RunLaunched)
def _launched(d: RunLaunched) -> str:
    return f"Launched ({d.mode}): {d.request or d.benchmark_name or d.benchmark_id}."


@_tells(DriverSelected)
def _driver(d: DriverSelected) -> str:
    return f"The {d.driver} Driver took the run" + (f" ({d.note})." if d.note else ".")


@_tells(BenchmarkResolved)
def _resolved(d: BenchmarkResolved) -> str:
    return f"Resolved the benchmark: {d.benchmark_name}, subset {d.subset_slug}."


@_tells(PhaseStarted)
def _started(d: PhaseStarted) -> str:
    return f"Phase {d.phase} started."


@_tells(PhaseCompleted)
def _completed(d: PhaseCompleted) -> str:
    return f"Phase {d.phase} completed."


@_tells(PhaseFailed)
def _failed(d: PhaseFailed) -> str:
    return f"Phase {d.phase} failed: {d.error_type}: {d.detail}."


@_tells(PhaseRestarted)
def _restarted(d: PhaseRestarted) -> str:
    return f"Phase {d.phase} restarted: {d.reason}."


@_tells(AgentTextEvent)
def _agent(d: AgentTextEvent) -> str:
    return f"Driver: {d.text}"


@_tells(AtomizeArtifact)
def _scorer(d: AtomizeArtifact) -> str:
    return f"The scorer is {d.impl_id} ({d.kind})."


@_tells(RunHalted)
def _halted(d: RunHalted) -> str:
    return f"Halted: {d.halt_reason}."


@_tells(HaltCleared)
def _cleared(d: HaltCleared) -> str:
    return "Carried on after the halt."


@_tells(RunUpdated)
def _updated(d: RunUpdated) -> str | None:
    return f"Made {d.visibility}." if d.visibility else None


@_tells(TaskLabelled)
def _labelled(d: TaskLabelled) -> str:
    trial = f" (trial {d.trial})" if d.trial else ""
    return f"{d.labelled_by} labelled task {d.task_id}{trial} {d.grade}."


@_tells(PipelineFinished)
def _finished(d: PipelineFinished) -> str:
    summary = d.summary or {}
    if d.status == "ok":
        return f"Finished: {summary.get('passed', 0)} of {summary.get('total', 0)} tasks passed."
    return f"Ended in error: {d.error_type}: {d.detail}."


def _sentence(data: RunEventData) -> str | None:
    tell = SENTENCES.get(type(data).__name__)
    return tell(data) if tell is not None else None


def narrate(events: list[dict[str, Any]], slice: str) -> dict[str, Any]:
    """``text`` (one line per notable step) and ``outcomes`` (tasks settled so far).

    A type this gateway does not know (a newer orchestrator's) is passed over."""
    entries = [e.data for e in map(parse_run_event, events) if e is not None]
    outcomes = Counter(d.outcome for d in entries if isinstance(d, MaterializeTaskAggregated))
    lines = [s for d in entries if (s := _sentence(d))]
    if slice == "recent":
        lines = lines[-RECENT:]
    settled = sum(outcomes.values())
    if settled and not any(isinstance(d, PipelineFinished) for d in entries):
        tally = ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items()))
        lines.append(f"So far {settled} tasks settled: {tally}.")
    return {"text": "\n".join(lines), "outcomes": dict(outcomes), "events_read": len(events)}
