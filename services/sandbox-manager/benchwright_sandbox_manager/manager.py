"""Carries out sandbox commands on a backend and reports what happened.

Creating, snapshotting and killing happen inside the handler (a failure is
redelivered); a sweep (``sweep.py``) and an exec (``execution.py``) can outlast
the consumer's ack wait, so they run in the background and always answer.
"""

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from faststream.nats import NatsBroker

from benchwright_sandbox_manager.application import SandboxesApplication
from benchwright_sandbox_manager.backends import BACKENDS, get_backend
from benchwright_sandbox_manager.domain import Sandbox, SandboxAlreadyKilledError
from benchwright_sandbox_manager.execution import run_exec
from benchwright_sandbox_manager.ports import (
    BackendError,
    IsolationUnavailableError,
    SandboxBackend,
    SandboxLimits,
    UnsafePathError,
    safe_relative_path,
)
from benchwright_sandbox_manager.runtime import runtime_files
from benchwright_sandbox_manager.snapshots import SnapshotNotFoundError, SnapshotStore
from benchwright_sandbox_manager.sweep import sweep
from benchwright_shared.bus import jetstream, publish_event
from benchwright_shared.contracts import (
    CreateSandbox,
    ExecInSandbox,
    KillSandbox,
    RunTasks,
    SandboxCommandFailed,
    SandboxFile,
    SnapshotSandbox,
)
from benchwright_shared.relay import Relay
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore

log = logging.getLogger(__name__)


class SandboxManager:
    def __init__(
        self, settings: Settings, app: SandboxesApplication, store: BlockingStore, relay: Relay
    ) -> None:
        self.settings = settings
        self.app = app
        self.store = store
        self.relay = relay
        service_dir = settings.service_dir("sandbox-manager")
        self.root = service_dir / "sandboxes"
        self.snapshots = SnapshotStore(service_dir / "snapshots")
        self.limits = SandboxLimits.from_settings(settings)
        self._backends: dict[str, SandboxBackend] = {}
        self._running: dict[str, asyncio.Task[None]] = {}
        self.broker: NatsBroker | None = None

    def backend(self, name: str) -> SandboxBackend:
        if name not in self._backends:
            self._backends[name] = get_backend(name, self.root / name, self.settings)
        return self._backends[name]

    async def start(self) -> None:
        """Let every registered backend probe what it needs (bubblewrap, for ``local``)."""
        for name in BACKENDS:
            try:
                await self.backend(name).start()
            except Exception:
                log.exception("sandbox backend %s failed to start", name)

    def bus(self) -> NatsBroker:
        assert self.broker is not None, "the service has not been started"
        return self.broker

    async def fail(self, command_id: str, run_id: str, error_type: str, detail: str) -> None:
        """Answer a command with ``SandboxCommandFailed``."""
        event = SandboxCommandFailed(
            command_id=command_id, run_id=run_id, error_type=error_type, detail=detail
        )
        await publish_event(self.bus(), event, msg_id=f"{command_id}:failed")

    async def live_sandbox(self, command_id: str, run_id: str, sandbox_id: str) -> Sandbox | None:
        """The sandbox a command names, or None once the command has been failed."""
        sandbox = await self.store.run(self.app.get, sandbox_id)
        if sandbox is None:
            await self.fail(command_id, run_id, "no_sandbox", f"no sandbox {sandbox_id!r}")
            return None
        if sandbox.killed:
            await self.fail(command_id, run_id, "sandbox_killed", f"{sandbox_id} was killed")
            return None
        return sandbox

    async def file_content(self, file: SandboxFile) -> bytes:
        """A file's bytes: inline text, or a blob copied from the object store."""
        if file.content is not None:
            return file.content.encode()
        if file.bucket and file.object_name:
            store = await jetstream(self.bus()).object_store(file.bucket)
            result = await store.get(file.object_name)
            return bytes(result.data or b"")
        raise BackendError(f"file {file.path!r} has neither content nor an object reference")

    def _background(self, command_id: str, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` beside the handler; a redelivered command still going is dropped."""
        if command_id in self._running:
            work.close()
            return
        task = asyncio.create_task(work, name=f"command-{command_id}")
        self._running[command_id] = task
        task.add_done_callback(lambda _: self._running.pop(command_id, None))

    # -- create -----------------------------------------------------------------
    async def create(self, command: CreateSandbox) -> None:
        ids = (command.command_id, command.run_id)
        try:
            backend = self.backend(command.backend)
        except KeyError as exc:
            await self.fail(*ids, "unknown_backend", str(exc))
            return
        # Refuse what cannot work before a sandbox exists to be cleaned up.
        try:
            for file in command.files:
                safe_relative_path(file.path)
            archive = self.snapshots.path(command.from_snapshot) if command.from_snapshot else None
        except UnsafePathError as exc:
            await self.fail(*ids, "unsafe_path", str(exc))
            return
        except SnapshotNotFoundError as exc:
            await self.fail(*ids, "snapshot_not_found", str(exc))
            return
        metadata = {
            "benchwright_role": command.role,
            "run_id": command.run_id,
            "account": command.account,
        }
        if command.from_snapshot:
            metadata["from_snapshot"] = command.from_snapshot
        sandbox_id = self.app.new_sandbox_id()
        try:
            await backend.create(sandbox_id)
        except IsolationUnavailableError as exc:
            await self.fail(*ids, "isolation_unavailable", str(exc))
            return
        except Exception as exc:
            await backend.kill(sandbox_id)
            await self.fail(*ids, "sandbox_setup_failed", str(exc))
            return
        metadata["isolation"] = backend.isolation
        try:
            if archive is not None:
                await backend.restore(sandbox_id, archive)
            # The runtime is always this service's own, whatever a snapshot held.
            for name, text in runtime_files().items():
                await backend.put_file(sandbox_id, name, text.encode())
            for file in command.files:
                await backend.put_file(sandbox_id, file.path, await self.file_content(file))
        except Exception as exc:
            await backend.kill(sandbox_id)
            await self.fail(*ids, "sandbox_setup_failed", str(exc))
            return
        # Recorded only once it is set up: the relayed Created event means "ready to use",
        # and a sandbox that never came up leaves nothing behind.
        try:
            await self.store.run(
                lambda: self.app.create(
                    sandbox_id=sandbox_id,
                    command_id=command.command_id,
                    run_id=command.run_id,
                    role=command.role,
                    backend=backend.name,
                    metadata=metadata,
                )
            )
        except BaseException:
            await backend.kill(sandbox_id)  # redelivery will build another
            raise
        self.relay.wake()

    # -- run tasks, exec ----------------------------------------------------------
    def run_tasks(self, command: RunTasks) -> None:
        """Start the sweep in the background; the command is acknowledged at once."""
        self._background(command.command_id, sweep(self, command))

    def exec(self, command: ExecInSandbox) -> None:
        """Start the command in the background; it answers ``SandboxExecFinished``."""
        self._background(command.command_id, run_exec(self, command))

    # -- snapshot -----------------------------------------------------------------
    async def snapshot(self, command: SnapshotSandbox) -> None:
        """Archive the sandbox's files; the ``Snapshotted`` event, relayed, is the answer."""
        ids = (command.command_id, command.run_id)
        sandbox = await self.live_sandbox(*ids, command.sandbox_id)
        if sandbox is None:
            return
        if command.command_id in sandbox.snapshots:
            return  # a repeated command: the first one's event already answered
        backend = self.backend(sandbox.backend)
        scratch = self.snapshots.scratch()
        try:
            await backend.snapshot(command.sandbox_id, scratch)
            snapshot_id, size_bytes = await asyncio.to_thread(self.snapshots.add, scratch)
        except (BackendError, OSError) as exc:
            await asyncio.to_thread(self.snapshots.discard, scratch)
            await self.fail(*ids, "snapshot_failed", str(exc))
            return
        try:
            await self.store.run(
                lambda: self.app.record_snapshot(
                    command.sandbox_id,
                    command_id=command.command_id,
                    snapshot_id=snapshot_id,
                    size_bytes=size_bytes,
                    label=command.label,
                )
            )
        except SandboxAlreadyKilledError:
            await self.fail(*ids, "sandbox_killed", f"{command.sandbox_id} was killed")
            return
        self.relay.wake()

    # -- kill -------------------------------------------------------------------
    async def kill(self, command: KillSandbox) -> None:
        sandbox = await self.store.run(self.app.get, command.sandbox_id)
        if sandbox is None:
            await self.fail(command.command_id, command.run_id, "no_sandbox", command.sandbox_id)
            return
        if sandbox.killed:
            # Answer, so a caller that missed the first kill's reply does not wait it out;
            # a redelivered command's caller already had its answer and ignores this one.
            await self.fail(
                command.command_id, command.run_id, "already_killed", command.sandbox_id
            )
            return
        backend = self.backend(sandbox.backend)
        await backend.kill(command.sandbox_id)
        await self.store.run(
            lambda: self.app.kill(
                command.sandbox_id,
                command_id=command.command_id,
                reason=command.reason,
                rate=backend.rate_micros_per_s,
            )
        )
        self.relay.wake()

    async def stop(self) -> None:
        for task in list(self._running.values()):
            task.cancel()
        await asyncio.gather(*self._running.values(), return_exceptions=True)
        for backend in self._backends.values():
            await backend.close()
