"""The Sandbox aggregate: one sandbox's life, from creation through snapshots to kill."""

import uuid
from datetime import datetime
from typing import Any

from eventsourcing.domain import Aggregate, event


class SandboxError(Exception):
    """Base for sandbox rule violations."""


class SandboxAlreadyKilledError(SandboxError):
    pass


class Sandbox(Aggregate):
    @staticmethod
    def create_id(sandbox_id: str) -> uuid.UUID:
        return uuid.UUID(sandbox_id.removeprefix("sbx_"))

    @event("Created")
    def __init__(
        self,
        sandbox_id: str,
        command_id: str,
        run_id: str,
        role: str,
        backend: str,
        metadata: dict[str, Any],
        owner: str | None = None,
    ) -> None:
        self.sandbox_id = sandbox_id
        # The copy of the sandbox-manager whose process holds it (None: recorded before owners).
        self.owner = owner
        self.run_id = run_id
        self.role = role
        self.backend = backend
        self.metadata = metadata
        self.killed = False
        # command id -> snapshot id, so a repeated SnapshotSandbox records nothing new.
        self.snapshots: dict[str, str] = {}

    def snapshot(self, command_id: str, snapshot_id: str, size_bytes: int, label: str) -> bool:
        """Record a snapshot taken of this sandbox; False if this command already did."""
        if self.killed:
            raise SandboxAlreadyKilledError(self.sandbox_id)
        if command_id in self.snapshots:
            return False
        self._snapshotted(
            command_id=command_id, snapshot_id=snapshot_id, size_bytes=size_bytes, label=label
        )
        return True

    @event("Snapshotted")
    def _snapshotted(self, command_id: str, snapshot_id: str, size_bytes: int, label: str) -> None:
        self.snapshots[command_id] = snapshot_id

    def kill(self, command_id: str, reason: str, now: datetime, rate_micros_per_s: int) -> None:
        if self.killed:
            raise SandboxAlreadyKilledError(self.sandbox_id)
        duration_ms = max(0, int((now - self.created_on).total_seconds() * 1000))
        self._killed(
            command_id=command_id,
            reason=reason,
            duration_ms=duration_ms,
            cost_micros=sandbox_cost_micros(duration_ms, rate_micros_per_s),
        )

    @event("Killed")
    def _killed(self, command_id: str, reason: str, duration_ms: int, cost_micros: int) -> None:
        self.killed = True


def sandbox_cost_micros(duration_ms: int, rate_micros_per_s: int) -> int:
    """Duration times the backend's rate, rounded up to the next micro-dollar."""
    return -(-duration_ms * rate_micros_per_s // 1000)
