"""How far a run's pipeline has come: the planned phases, the one under way, how
many times each has run, which are done, and the restarts the Driver has left.

A resumed pipeline asks this part of the run what is left to do, so nothing is
held twice. ``Run`` applies the phase events and calls in; this class knows
nothing of events.
"""

from dataclasses import dataclass, field

from benchwright_orchestrator.plan import MAX_RESTARTS

__all__ = ["PhaseProgress"]


@dataclass
class PhaseProgress:
    """The run's phases so far. State is plain JSON: snapshots store it as such."""

    plan: list[str] = field(default_factory=list)
    current_phase: str | None = None  # started, and neither completed, failed nor restarted
    started_phases: list[str] = field(default_factory=list)  # each start, in order
    completed_phases: list[str] = field(default_factory=list)
    invocations: dict[str, int] = field(default_factory=dict)  # phase -> times started
    # Restarts asked for since launch, or since a person last cleared a halt.
    restarts: int = 0

    def phase_started(self, phase: str) -> int:
        """Start ``phase``; returns its 1-based invocation number in the run."""
        self.current_phase = phase
        self.started_phases.append(phase)
        self.invocations[phase] = self.invocations.get(phase, 0) + 1
        return self.invocations[phase]

    def phase_completed(self, phase: str) -> None:
        self.current_phase = None
        self.completed_phases.append(phase)

    def phase_failed(self) -> None:
        self.current_phase = None

    @property
    def may_restart(self) -> bool:
        """Whether another restart is within the cap (past it, the run is parked)."""
        return self.restarts < MAX_RESTARTS

    def phase_restarted(self, phase: str, restarts: int) -> None:
        self.restarts = restarts
        if self.current_phase == phase:
            self.current_phase = None

    def renew_restarts(self) -> None:
        """A person looked at the run: the Driver gets a fresh restart budget."""
        self.restarts = 0

    def remaining(self, interrupted: str | None) -> list[str]:
        """The planned phases still to run: from the ``interrupted`` one on, or else
        those not yet completed."""
        if interrupted in self.plan:
            return self.plan[self.plan.index(interrupted) :]
        done = set(self.completed_phases)
        return [p for p in self.plan if p not in done]
