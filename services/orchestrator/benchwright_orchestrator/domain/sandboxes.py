"""A run's open sandboxes and which sandbox-manager copy holds each.

``Run`` applies the sandbox events and calls in; this class knows nothing of events.
"""

from dataclasses import dataclass, field

__all__ = ["Sandboxes"]


@dataclass
class Sandboxes:
    """Sandboxes the run created and has not yet seen killed or lost."""

    open: dict[str, str] = field(default_factory=dict)  # sandbox id -> backend
    # sandbox id -> the sandbox-manager copy that holds it (recorded since owners were).
    owners: dict[str, str] = field(default_factory=dict)

    def created(self, sandbox_id: str, backend: str, owner: str | None) -> None:
        self.open[sandbox_id] = backend
        if owner:
            self.owners[sandbox_id] = owner

    def closed(self, sandbox_id: str) -> None:
        """Killed, or lost with the copy that held it: either way no longer open."""
        self.open.pop(sandbox_id, None)
