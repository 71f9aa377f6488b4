"""A run's phases as a timeline: each attempt of a phase, how long it took, how it ended."""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from benchwright_shared.contracts.run_events import (
    PhaseCompleted,
    PhaseFailed,
    PhaseStarted,
    RunHalted,
)
from benchwright_shared.run_log import run_event_type

STARTED = run_event_type(PhaseStarted)
COMPLETED = run_event_type(PhaseCompleted)
FAILED = run_event_type(PhaseFailed)
HALTED = run_event_type(RunHalted)
# The log entries the timeline is drawn from.
TIMELINE_EVENTS = [STARTED, COMPLETED, FAILED, HALTED]


@dataclass
class PhaseSpan:
    """One attempt of a phase: ``running`` until it completes or fails."""

    phase: str
    started_at: str
    state: str = "running"
    duration_ms: int | None = None
    error_type: str | None = None
    detail: str | None = None


def _elapsed_ms(start: str, end: str) -> int | None:
    try:
        a = datetime.fromisoformat(start.replace("Z", "+00:00"))
        b = datetime.fromisoformat(end.replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(0, int((b - a).total_seconds() * 1000))


def phase_spans(events: Iterable[dict[str, Any]]) -> list[PhaseSpan]:
    """The attempts in log order; a halt ends the attempt it interrupted as ``halted``."""
    spans: list[PhaseSpan] = []
    open_by_phase: dict[str, PhaseSpan] = {}
    for event in events:
        kind, data = event["type"], event.get("data") or {}
        if kind == STARTED:
            span = PhaseSpan(data["phase"], event["ts"])
            spans.append(span)
            open_by_phase[span.phase] = span
        elif kind in (COMPLETED, FAILED) and data.get("phase") in open_by_phase:
            span = open_by_phase.pop(data["phase"])
            span.state = "done" if kind == COMPLETED else "failed"
            span.duration_ms = data.get("duration_ms") or _elapsed_ms(span.started_at, event["ts"])
            span.error_type, span.detail = data.get("error_type"), data.get("detail")
        elif kind == HALTED:
            for span in open_by_phase.values():
                span.state = "halted"
                span.duration_ms = _elapsed_ms(span.started_at, event["ts"])
                span.detail = data.get("halt_reason")
            open_by_phase.clear()
    return spans
