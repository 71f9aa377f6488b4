"""Where a run stands: running or finished (``ok``, ``error``), and whether it is
halted, why, and so whether it waits for a person.

A halt is a flag beside the status, not a status of its own: a run halted by a
limit (``limit_exceeded:...``) or killed by an operator then finishes ``error``;
one parked for review, a pause or the restart cap (``plan.RESUMABLE_HALTS``)
stays ``running`` until a person clears it. ``Run`` applies the events and
calls in; this class knows nothing of events.
"""

from dataclasses import dataclass

from benchwright_orchestrator.plan import is_resumable_halt

__all__ = ["TERMINAL_STATUSES", "Lifecycle"]

TERMINAL_STATUSES = ("ok", "error")


@dataclass
class Lifecycle:
    """The run's status and halt. State is plain JSON: snapshots store it as such."""

    status: str = "running"
    halted: bool = False
    halt_reason: str | None = None

    @property
    def finished(self) -> bool:
        """Whether the run has ended: nothing more happens to its pipeline."""
        return self.status in TERMINAL_STATUSES

    @property
    def waiting(self) -> bool:
        """Parked for a person (review, pause, restart cap), not finished."""
        return self.halted and is_resumable_halt(self.halt_reason) and self.status == "running"

    def halt(self, halt_reason: str) -> None:
        self.halted = True
        self.halt_reason = halt_reason

    def clear(self) -> None:
        self.halted = False
        self.halt_reason = None

    def finish(self, status: str) -> None:
        self.status = status
