"""Carries out sandbox commands on a backend and reports what happened."""

import asyncio
import json
import logging
import time

from faststream.nats import NatsBroker

from benchwright_sandbox_manager.application import SandboxesApplication
from benchwright_sandbox_manager.backends import get_backend
from benchwright_sandbox_manager.ports import BackendError, SandboxBackend
from benchwright_sandbox_manager.runtime import runtime_files
from benchwright_shared.bus import jetstream, publish_event
from benchwright_shared.contracts import (
    CreateSandbox,
    KillSandbox,
    RunTasks,
    SandboxCommandFailed,
    SandboxTaskResults,
    SandboxTasksFinished,
    TaskOutcome,
)
from benchwright_shared.relay import Relay
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore

log = logging.getLogger(__name__)

# Results are published in batches: by count, or after a short wait.
BATCH_MAX = 200
BATCH_WAIT_S = 0.25
# NATS's default message cap is 1 MB; stay well under it whatever the outputs weigh.
BATCH_MAX_BYTES = 512 * 1024


class SandboxManager:
    def __init__(
        self, settings: Settings, app: SandboxesApplication, store: BlockingStore, relay: Relay
    ) -> None:
        self.settings = settings
        self.app = app
        self.store = store
        self.relay = relay
        self.root = settings.service_dir("sandbox-manager") / "sandboxes"
        self._backends: dict[str, SandboxBackend] = {}
        self._running: dict[str, asyncio.Task[None]] = {}
        self.broker: NatsBroker | None = None

    def backend(self, name: str) -> SandboxBackend:
        if name not in self._backends:
            self._backends[name] = get_backend(name, self.root / name)
        return self._backends[name]

    async def _fail(self, command_id: str, run_id: str, error_type: str, detail: str) -> None:
        assert self.broker is not None
        event = SandboxCommandFailed(
            command_id=command_id, run_id=run_id, error_type=error_type, detail=detail
        )
        await publish_event(self.broker, event, msg_id=f"{command_id}:failed")

    # -- create -----------------------------------------------------------------
    async def create(self, command: CreateSandbox) -> None:
        try:
            backend = self.backend(command.backend)
        except KeyError as exc:
            await self._fail(command.command_id, command.run_id, "unknown_backend", str(exc))
            return
        metadata = {
            "benchwright_role": command.role,
            "run_id": command.run_id,
            "account": command.account,
        }
        sandbox = await self.store.run(
            lambda: self.app.create(
                command_id=command.command_id,
                run_id=command.run_id,
                role=command.role,
                backend=backend.name,
                metadata=metadata,
            )
        )
        try:
            await backend.create(sandbox.sandbox_id)
            for name, text in runtime_files().items():
                await backend.put_file(sandbox.sandbox_id, name, text.encode())
            for file in command.files:
                await backend.put_file(sandbox.sandbox_id, file.path, await self._content(file))
        except Exception as exc:
            await backend.kill(sandbox.sandbox_id)
            await self._fail(command.command_id, command.run_id, "sandbox_setup_failed", str(exc))
            return
        # The Created event is relayed only now, so a reply means "ready to use".
        self.relay.wake()

    async def _content(self, file: object) -> bytes:
        from benchwright_shared.contracts import SandboxFile

        assert isinstance(file, SandboxFile)
        if file.content is not None:
            return file.content.encode()
        if file.bucket and file.object_name:
            assert self.broker is not None
            store = await jetstream(self.broker).object_store(file.bucket)
            result = await store.get(file.object_name)
            return bytes(result.data or b"")
        raise BackendError(f"file {file.path!r} has neither content nor an object reference")

    # -- run tasks --------------------------------------------------------------
    def run_tasks(self, command: RunTasks) -> None:
        """Start the sweep in the background; the command is acknowledged at once."""
        if command.command_id in self._running:
            return  # a redelivered command whose sweep is still going
        task = asyncio.create_task(self._sweep(command), name=f"sweep-{command.command_id}")
        self._running[command.command_id] = task
        task.add_done_callback(lambda _: self._running.pop(command.command_id, None))

    async def _sweep(self, command: RunTasks) -> None:
        assert self.broker is not None
        sandbox = await self.store.run(self.app.get, command.sandbox_id)
        if sandbox is None or sandbox.killed:
            await self._fail(command.command_id, command.run_id, "no_sandbox", command.sandbox_id)
            return
        backend = self.backend(sandbox.backend)
        argv = [
            "python",
            "-E",
            "-s",
            "bench_runner.py",
            "--impl",
            command.impl_path,
            "--data",
            command.data_path,
            "--concurrency",
            str(command.concurrency),
        ]
        stdin = [json.dumps({"index": t.index, "trial": t.trial}) for t in command.tasks]
        waves = -(-len(command.tasks) // max(1, command.concurrency))
        wall = command.timeout_s * max(1, waves) + 60
        batch: list[TaskOutcome] = []
        batches = completed = batch_bytes = 0
        last_flush = time.monotonic()

        async def flush() -> None:
            nonlocal batch, batches, last_flush, batch_bytes
            if not batch:
                return
            batches += 1
            event = SandboxTaskResults(
                command_id=command.command_id,
                run_id=command.run_id,
                sandbox_id=command.sandbox_id,
                batch=batches,
                results=batch,
            )
            batch = []
            batch_bytes = 0
            last_flush = time.monotonic()
            await publish_event(self.broker, event, msg_id=f"{command.command_id}:{batches}")  # type: ignore[arg-type]

        error_type = detail = None
        try:
            lines = backend.exec_lines(
                command.sandbox_id, argv, stdin_lines=stdin, env=command.env, timeout_s=wall
            )
            async for line in lines:
                if batch_bytes + len(line) > BATCH_MAX_BYTES:
                    await flush()
                batch.append(TaskOutcome.model_validate_json(line))
                batch_bytes += len(line)
                completed += 1
                if len(batch) >= BATCH_MAX or time.monotonic() - last_flush > BATCH_WAIT_S:
                    await flush()
        except BackendError as exc:
            error_type, detail = "sandbox_exec_failed", str(exc)
        except Exception as exc:
            log.exception("sweep %s failed", command.command_id)
            error_type, detail = type(exc).__name__, str(exc)
        await flush()
        finished = SandboxTasksFinished(
            command_id=command.command_id,
            run_id=command.run_id,
            sandbox_id=command.sandbox_id,
            batches=batches,
            completed=completed,
            error_type=error_type,
            detail=detail,
        )
        await publish_event(self.broker, finished, msg_id=f"{command.command_id}:finished")

    # -- kill -------------------------------------------------------------------
    async def kill(self, command: KillSandbox) -> None:
        sandbox = await self.store.run(self.app.get, command.sandbox_id)
        if sandbox is None:
            await self._fail(command.command_id, command.run_id, "no_sandbox", command.sandbox_id)
            return
        if sandbox.killed:
            return  # a repeated kill: the first one's event already answered
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
