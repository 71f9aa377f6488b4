"""The sandbox-manager's application: sandbox lifecycles, stored and relayed."""

import uuid
from datetime import UTC, datetime
from typing import Any

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import Notification

from benchwright_sandbox_manager.domain import Sandbox
from benchwright_shared.contracts import SandboxCreated, SandboxKilled, SandboxSnapshotted
from benchwright_shared.relay import RelayedApplication

SANDBOX_IDS = uuid.UUID("8d3f2b6e-2c51-4d0e-9a5b-6f1d7c2e9b40")


class SandboxesApplication(RelayedApplication):
    name = "sandbox_manager"

    @staticmethod
    def sandbox_id_for(command_id: str) -> str:
        """The sandbox a ``CreateSandbox`` makes: the same id however often it is delivered,
        so a redelivered command finds its sandbox recorded instead of making a second."""
        return f"sbx_{uuid.uuid5(SANDBOX_IDS, command_id)}"

    def create(
        self,
        *,
        sandbox_id: str,
        command_id: str,
        run_id: str,
        role: str,
        backend: str,
        metadata: dict[str, Any],
        owner: str | None = None,
    ) -> Sandbox:
        """Record a sandbox that is ready: its ``Created`` event, relayed, is the reply."""
        sandbox = Sandbox(
            sandbox_id=sandbox_id,
            command_id=command_id,
            run_id=run_id,
            role=role,
            backend=backend,
            metadata=metadata,
            owner=owner,
        )
        self.save(sandbox)
        return sandbox

    def get(self, sandbox_id: str) -> Sandbox | None:
        try:
            sandbox: Sandbox = self.repository.get(Sandbox.create_id(sandbox_id))
        except (AggregateNotFoundError, ValueError):
            return None
        return sandbox

    def record_snapshot(
        self, sandbox_id: str, *, command_id: str, snapshot_id: str, size_bytes: int, label: str
    ) -> bool:
        """Record a snapshot of the sandbox; False when this command already recorded it."""
        sandbox: Sandbox = self.repository.get(Sandbox.create_id(sandbox_id))
        if not sandbox.snapshot(command_id, snapshot_id, size_bytes, label):
            return False
        self.save(sandbox)
        return True

    def kill(self, sandbox_id: str, *, command_id: str, reason: str, rate: int) -> Sandbox:
        sandbox: Sandbox = self.repository.get(Sandbox.create_id(sandbox_id))
        sandbox.kill(command_id, reason, datetime.now(UTC), rate)
        self.save(sandbox)
        return sandbox


class OpenSandboxes:
    """Which sandboxes are alive on record, and who holds them: the reaper's index.

    Built from the notification log and brought up to date incrementally, so a
    scan costs what was recorded since the last one.
    """

    def __init__(self) -> None:
        self.position = 0
        self.open: dict[str, str | None] = {}  # sandbox id -> owner

    def catch_up(self, app: SandboxesApplication) -> dict[str, str | None]:
        created = f"{Sandbox.__module__}:Sandbox.Created"
        killed = f"{Sandbox.__module__}:Sandbox.Killed"
        while True:
            batch = app.recorder.select_notifications(
                start=self.position, limit=1000, topics=[created, killed], inclusive_of_start=False
            )
            if not batch:
                return dict(self.open)
            for notification in batch:
                event = app.mapper.to_domain_event(notification)
                sandbox_id = f"sbx_{event.originator_id}"
                if notification.topic == created:
                    self.open[sandbox_id] = getattr(event, "owner", None)
                else:
                    self.open.pop(sandbox_id, None)
            self.position = batch[-1].id


def translate_notification(app: Application[Any], notification: Notification) -> tuple[str, bytes]:
    """Relay translator: private Sandbox events -> integration events."""
    event = app.mapper.to_domain_event(notification)
    sandbox: Sandbox = app.repository.get(event.originator_id, version=event.originator_version)
    kind = type(event).__name__
    if kind == "Snapshotted":
        snapshotted = SandboxSnapshotted(
            command_id=event.command_id,  # type: ignore[attr-defined]
            run_id=sandbox.run_id,
            sandbox_id=sandbox.sandbox_id,
            snapshot_id=event.snapshot_id,  # type: ignore[attr-defined]
            size_bytes=event.size_bytes,  # type: ignore[attr-defined]
        )
        return snapshotted.subject, snapshotted.to_bytes()
    common = {
        "command_id": event.command_id,  # type: ignore[attr-defined]
        "run_id": sandbox.run_id,
        "sandbox_id": sandbox.sandbox_id,
        "role": sandbox.role,
        "backend": sandbox.backend,
        "metadata": sandbox.metadata,
    }
    if kind == "Created":
        contract: SandboxCreated | SandboxKilled = SandboxCreated(
            **common,
            created_at=event.timestamp,  # type: ignore[attr-defined]
            owner=getattr(sandbox, "owner", None),
        )
    else:
        contract = SandboxKilled(
            **common,
            reason=event.reason,  # type: ignore[attr-defined]
            duration_ms=event.duration_ms,  # type: ignore[attr-defined]
            cost_micros=event.cost_micros,  # type: ignore[attr-defined]
            killed_at=event.timestamp,  # type: ignore[attr-defined]
        )
    return contract.subject, contract.to_bytes()
