"""Carries out sandbox commands on a backend and reports what happened.

This is the one place that talks to the bus: executors (``execution.py``,
``sweep.py``) return results or raise, and the manager publishes the answer,
mapping every failure to ``SandboxCommandFailed`` (or, for a sweep, to its
``SandboxTasksFinished``) here. Creating, snapshotting and killing happen inside
the handler (a failure is redelivered); a sweep and an exec can outlast the
consumer's ack wait, so they run in the background and always answer.

Each process is one copy (``copy_id``) and holds the sandboxes it created:
``SandboxCreated.owner`` names it, commands for them arrive on its own subject,
and a sandbox another copy holds is refused here (``not_held_here``). The
reaper marks the open sandboxes of dead copies killed (``owner_lost``), so they
are billed and never looked for again.

A sandbox held here is killed only here (its commands come to this copy's
subject) or by a reaper that judged this copy dead, which takes a gap in this
copy's heartbeats. So this copy remembers the sandboxes it read as held
(``_held``) and reads the store again only after a kill here or a gap: an exec
costs no store read. A new process is a new copy with nothing remembered.
"""

import asyncio
import contextlib
import hashlib
import logging
import shutil
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from faststream.nats import NatsBroker
from nats.js.errors import BucketNotFoundError, ObjectNotFoundError
from nats.js.object_store import ObjectStore

from benchwright_sandbox_manager.application import OpenSandboxes, SandboxesApplication
from benchwright_sandbox_manager.backends import BACKENDS, get_backend
from benchwright_sandbox_manager.domain import Sandbox, SandboxAlreadyKilledError
from benchwright_sandbox_manager.execution import run_exec
from benchwright_sandbox_manager.ports import (
    BackendError,
    ImageBuilder,
    ImageBuildError,
    IsolationUnavailableError,
    SandboxBackend,
    SandboxLimits,
    UnsafePathError,
    sandbox_dirs,
    sandbox_path,
)
from benchwright_sandbox_manager.presence import StartedTasks
from benchwright_sandbox_manager.runtime import runtime_files
from benchwright_sandbox_manager.snapshots import (
    SNAPSHOT_ID,
    SnapshotNotFoundError,
    SnapshotStore,
)
from benchwright_sandbox_manager.sweep import sweep
from benchwright_shared import subjects
from benchwright_shared.bus import declare_buckets, jetstream, publish_event
from benchwright_shared.contracts import (
    CreateSandbox,
    ExecInSandbox,
    ExportedFile,
    KillSandbox,
    RunTasks,
    SandboxCommandFailed,
    SandboxExecFinished,
    SandboxFile,
    SandboxSweepProgress,
    SandboxTaskResults,
    SandboxTasksFinished,
    SnapshotSandbox,
)
from benchwright_shared.liveness import Membership
from benchwright_shared.refusal import Refused
from benchwright_shared.relay import Relay
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore

log = logging.getLogger(__name__)

SERVICE = "sandbox-manager"
# How often the reaper looks for sandboxes whose holder died.
REAP_EVERY_S = 5.0
# How often a running sweep says it is alive.
PROGRESS_EVERY_S = 5.0


class RetryLater(Exception):
    """Not the command's fault (the store is unreachable, say): let JetStream redeliver it."""


# The status a refusal of each kind carries; any other is 422 (the command cannot be done).
REFUSAL_STATUS = {
    "no_sandbox": 404,
    "snapshot_not_found": 404,
    "unsafe_path": 400,
    "unknown_backend": 400,
    "image_unsupported": 400,
    "build_unsupported": 400,
    "sandbox_killed": 409,
    "already_killed": 409,
    "not_held_here": 409,
    "snapshot_unsupported": 409,
    "isolation_unavailable": 503,
}


class CommandRefused(Refused):
    """A command that cannot be carried out; answered as ``SandboxCommandFailed``, its
    ``error_type`` being the refusal's ``code``."""

    detail: str
    code: str

    def __init__(self, error_type: str, detail: str) -> None:
        super().__init__(REFUSAL_STATUS.get(error_type, 422), None, detail, code=error_type)

    @property
    def error_type(self) -> str:
        return self.code


def sandbox_dirs_of(sandbox: Sandbox) -> tuple[str, ...]:
    """The absolute directories a sandbox was created with (``CreateSandbox.dirs``)."""
    return tuple(sandbox.metadata.get("dirs") or ())


def refusal(exc: BaseException, default: str) -> CommandRefused:
    """The one mapping from what an executor raised to what the caller is told."""
    if isinstance(exc, CommandRefused):
        return exc
    if isinstance(exc, UnsafePathError):
        return CommandRefused("unsafe_path", str(exc))
    if isinstance(exc, IsolationUnavailableError):
        return CommandRefused("isolation_unavailable", str(exc))
    if isinstance(exc, SnapshotNotFoundError):
        return CommandRefused("snapshot_not_found", str(exc))
    if isinstance(exc, ImageBuildError):
        return CommandRefused("image_build_failed", str(exc))
    if isinstance(exc, BackendError):
        return CommandRefused(default, str(exc))
    return CommandRefused(default, f"{type(exc).__name__}: {exc}")


class SandboxManager:
    def __init__(
        self,
        settings: Settings,
        app: SandboxesApplication,
        store: BlockingStore,
        relay: Relay,
        membership: Membership,
    ) -> None:
        self.settings = settings
        self.app = app
        self.store = store
        self.relay = relay
        self.membership = membership
        self.copy_id = membership.copy_id
        service_dir = settings.service_dir(SERVICE)
        # Each copy keeps its sandboxes apart: a dead copy's are swept away whole.
        self.sandboxes_dir = service_dir / "sandboxes"
        self.root = self.sandboxes_dir / self.copy_id
        self.snapshots = SnapshotStore(service_dir / "snapshots")
        self.limits = SandboxLimits.from_settings(settings)
        self._backends: dict[str, SandboxBackend] = {}
        self._running: dict[str, asyncio.Task[None]] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._open = OpenSandboxes()
        # Sandboxes read as held by this copy, with when (``time.monotonic``) they were.
        self._held: dict[str, tuple[Sandbox, float]] = {}
        # Kills begun here: a read that a kill overtook is not remembered.
        self._kills_begun = 0
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
        self._reaper = asyncio.create_task(self._reap_forever(), name=f"reaper-{self.copy_id}")

    def bus(self) -> NatsBroker:
        assert self.broker is not None, "the service has not been started"
        return self.broker

    # -- answering ----------------------------------------------------------------
    async def fail(self, command_id: str, run_id: str, error_type: str, detail: str) -> None:
        """Answer a command with ``SandboxCommandFailed``."""
        event = SandboxCommandFailed(
            command_id=command_id, run_id=run_id, error_type=error_type, detail=detail
        )
        await publish_event(self.bus(), event, msg_id=f"{command_id}:failed")

    async def _answering(
        self, command_id: str, run_id: str, default: str, work: Callable[[], Awaitable[None]]
    ) -> None:
        """Run ``work``; any failure becomes this command's ``SandboxCommandFailed``."""
        try:
            await work()
        except (asyncio.CancelledError, RetryLater):
            raise
        except Exception as exc:
            refused = refusal(exc, default)
            if not isinstance(exc, (CommandRefused, BackendError)):
                log.exception("command %s failed", command_id)
            await self.fail(command_id, run_id, refused.error_type, refused.detail)

    async def held_sandbox(self, sandbox_id: str, *, fresh: bool = False) -> Sandbox:
        """The live sandbox a command names, held by this copy; else ``CommandRefused``.

        Remembered from an earlier read while no kill or heartbeat gap came between
        (what a command reads of it, its backend and directories, never changes);
        ``fresh`` reads the store whatever (what is recorded since, its snapshots).
        """
        remembered = self._held.get(sandbox_id)
        if remembered is not None and not fresh:
            kept, kept_at = remembered
            healthy_since = self.membership.healthy_since
            if healthy_since is not None and healthy_since <= kept_at:
                return kept
        self._held.pop(sandbox_id, None)
        read_at, kills_begun = time.monotonic(), self._kills_begun
        sandbox = await self.store.run(self.app.get, sandbox_id)
        if sandbox is None:
            raise CommandRefused("no_sandbox", f"no sandbox {sandbox_id!r}")
        if sandbox.killed:
            raise CommandRefused("sandbox_killed", f"{sandbox_id} was killed")
        owner = getattr(sandbox, "owner", None)
        if owner is not None and owner != self.copy_id:
            raise CommandRefused("not_held_here", f"{sandbox_id} is held by {owner}")
        if owner is not None and kills_begun == self._kills_begun:
            self._held[sandbox_id] = (sandbox, read_at)
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
        if command.build is not None:
            # A build can outlast the consumer's ack wait: it runs beside the handler,
            # and always answers (a copy that dies meanwhile leaves the caller to time out).
            self._background(
                command.command_id,
                self._answering(
                    command.command_id,
                    command.run_id,
                    "sandbox_setup_failed",
                    lambda: self._create_answering(command),
                ),
            )
            return
        await self._answering(
            command.command_id,
            command.run_id,
            "sandbox_setup_failed",
            lambda: self._create(command),
        )

    async def _create_answering(self, command: CreateSandbox) -> None:
        """``_create`` where nothing will redeliver the command: a retry is a failure."""
        try:
            await self._create(command)
        except RetryLater as exc:
            raise CommandRefused("sandbox_setup_failed", str(exc)) from exc

    async def _create(self, command: CreateSandbox) -> None:
        try:
            backend = self.backend(command.backend)
        except KeyError as exc:
            raise CommandRefused("unknown_backend", str(exc)) from None
        # Refuse what cannot work before a sandbox exists to be cleaned up.
        dirs = sandbox_dirs(command.dirs)
        for file in command.files:
            sandbox_path(file.path, dirs)
        if command.build is not None and (command.image or not isinstance(backend, ImageBuilder)):
            raise CommandRefused(
                "build_unsupported",
                f"task {command.build.task!r}: "
                + (
                    "a sandbox starts from an image or from a build, not both"
                    if command.image
                    else f"the {backend.name} backend does not build a task's Dockerfile: "
                    "the e2b backend does"
                ),
            )
        if command.image and not backend.runs_images:
            raise CommandRefused(
                "image_unsupported",
                f"the {backend.name} backend does not run container images "
                f"({command.image!r}): a task's own image needs the sandbox0 backend",
            )
        archive = await self._archive(command.from_snapshot) if command.from_snapshot else None
        metadata: dict[str, Any] = {
            "benchwright_role": command.role,
            "run_id": command.run_id,
            "account": command.account,
        }
        if command.from_snapshot:
            metadata["from_snapshot"] = command.from_snapshot
        if dirs:
            metadata["dirs"] = list(dirs)
        if command.image:
            metadata["image"] = command.image
        if command.build is not None:
            metadata["build_digest"] = command.build.digest
        sandbox_id = self.app.sandbox_id_for(command.command_id)
        if await self.store.run(self.app.get, sandbox_id) is not None:
            return  # made by an earlier delivery of this command: its event answered
        with contextlib.suppress(Exception):
            await backend.kill(sandbox_id)  # what an earlier delivery here left half made
        image = command.image
        if command.build is not None and isinstance(backend, ImageBuilder):
            # Built (or found built) before the sandbox exists: a failed build leaves none.
            image = await backend.build_image(command.build)
            metadata["image"] = image
        # Refuses (isolation_unavailable, unsafe_path) before anything exists.
        await backend.create(sandbox_id, dirs=dirs, image=image)
        try:
            metadata["isolation"] = backend.isolation
            if archive is not None:
                await backend.restore(sandbox_id, archive)
            # The runtime is always this service's own, whatever a snapshot held.
            for name, text in runtime_files().items():
                await backend.put_file(sandbox_id, name, text.encode())
            for file in command.files:
                await backend.put_file(sandbox_id, file.path, await self.file_content(file))
        except BaseException as exc:
            await backend.kill(sandbox_id)
            if isinstance(exc, Exception):
                raise CommandRefused("sandbox_setup_failed", str(exc)) from exc
            raise
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
                    owner=self.copy_id,
                )
            )
        except BaseException as exc:
            await backend.kill(sandbox_id)  # redelivery will build another
            if isinstance(exc, Exception):
                raise RetryLater(str(exc)) from exc
            raise
        self.relay.wake()

    # -- run tasks --------------------------------------------------------------------
    def run_tasks(self, command: RunTasks) -> None:
        """Start the sweep in the background; the command is acknowledged at once.

        If this copy dies meanwhile nothing redelivers the command: the
        orchestrator sees the copy's heartbeat stop and sends the unsettled
        tasks to a new sandbox (docs/decisions/0022).
        """
        self._background(command.command_id, self._sweep(command))

    async def _sweep(self, command: RunTasks) -> None:
        """Publish the sweep's batches on the run's sweep subject, then its end, in order.

        A heartbeat goes out beside them every ``PROGRESS_EVERY_S``: the orchestrator
        tells a sweep that is merely slow from one that is gone.
        """
        counts = {"completed": 0}
        beating = asyncio.create_task(self._progress(command, counts))
        try:
            await self._sweep_and_report(command, counts)
        except Exception:  # the bus stayed away past every retry: the silence says so
            log.exception("sweep %s could not report", command.command_id)
        finally:
            beating.cancel()

    async def _progress(self, command: RunTasks, counts: dict[str, int]) -> None:
        beat = 0
        while True:
            await asyncio.sleep(PROGRESS_EVERY_S)
            beat += 1
            progress = SandboxSweepProgress(
                command_id=command.command_id,
                run_id=command.run_id,
                sandbox_id=command.sandbox_id,
                completed=counts["completed"],
            )
            with contextlib.suppress(Exception):
                await publish_event(
                    self.bus(),
                    progress,
                    msg_id=f"{command.command_id}:progress:{beat}",
                    subject=subjects.sweep_subject(command.run_id, "progress"),
                )

    async def _sweep_and_report(self, command: RunTasks, counts: dict[str, int]) -> None:
        broker = self.bus()
        batches = completed = 0
        error_type = detail = None
        try:
            sandbox = await self.held_sandbox(command.sandbox_id)
            backend = self.backend(sandbox.backend)
            started = StartedTasks(broker, command.run_id)
            try:
                async for results in sweep(backend, command, self.limits, started.heard):
                    for result in results:
                        started.settled(result.index, result.trial)
                    batches += 1
                    completed += len(results)
                    counts["completed"] = completed
                    event = SandboxTaskResults(
                        command_id=command.command_id,
                        run_id=command.run_id,
                        sandbox_id=command.sandbox_id,
                        batch=batches,
                        results=results,
                        invocation=command.invocation,
                    )
                    await publish_event(
                        broker,
                        event,
                        msg_id=f"{command.command_id}:{batches}",
                        subject=subjects.sweep_subject(command.run_id, "task_results"),
                    )
            finally:
                await started.close()
        except asyncio.CancelledError:
            raise  # the service is stopping: the sweep ends with it, unanswered
        except Exception as exc:
            refused = refusal(exc, "sandbox_exec_failed")
            if not isinstance(exc, (CommandRefused, BackendError)):
                log.exception("sweep %s failed", command.command_id)
            error_type, detail = refused.error_type, refused.detail
        finished = SandboxTasksFinished(
            command_id=command.command_id,
            run_id=command.run_id,
            sandbox_id=command.sandbox_id,
            batches=batches,
            completed=completed,
            error_type=error_type,
            detail=detail,
            invocation=command.invocation,
        )
        await publish_event(
            broker,
            finished,
            msg_id=f"{command.command_id}:finished",
            subject=subjects.sweep_subject(command.run_id, "tasks_finished"),
        )

    # -- exec -------------------------------------------------------------------------
    def exec(self, command: ExecInSandbox) -> None:
        """Start the command in the background; it answers ``SandboxExecFinished``."""
        self._background(
            command.command_id,
            self._answering(
                command.command_id, command.run_id, "exec_failed", lambda: self._exec(command)
            ),
        )

    async def _exec(self, command: ExecInSandbox) -> None:
        sandbox = await self.held_sandbox(command.sandbox_id)
        backend = self.backend(sandbox.backend)
        result = await run_exec(backend, command, self.file_content, sandbox_dirs_of(sandbox))
        finished = SandboxExecFinished(
            command_id=command.command_id,
            run_id=command.run_id,
            sandbox_id=command.sandbox_id,
            exit_code=result.exit_code,
            stdout=result.stdout,
            stderr=result.stderr,
            timed_out=result.timed_out,
            duration_ms=result.duration_ms,
            exported=await self._export(command),
        )
        await publish_event(self.bus(), finished, msg_id=f"{command.command_id}:exec")

    async def _export(self, command: ExecInSandbox) -> list[ExportedFile]:
        """Hand out the files ``command.export`` names: into the artifacts bucket, each
        under ``<run id>/<sha256>``; a file the sandbox does not hold is left out."""
        if not command.export:
            return []
        sandbox = await self.held_sandbox(command.sandbox_id)
        backend = self.backend(sandbox.backend)
        bucket = await jetstream(self.bus()).object_store(subjects.ARTIFACTS_BUCKET)
        exported = []
        for path in command.export:
            try:
                data = await backend.get_file(command.sandbox_id, path)
            except (BackendError, OSError):
                continue
            digest = hashlib.sha256(data).hexdigest()
            name = f"{command.run_id}/{digest}"
            await bucket.put(name, data)
            exported.append(
                ExportedFile(
                    path=path,
                    bucket=subjects.ARTIFACTS_BUCKET,
                    object_name=name,
                    sha256=digest,
                    size_bytes=len(data),
                )
            )
        return exported

    # -- snapshot -----------------------------------------------------------------
    async def snapshot(self, command: SnapshotSandbox) -> None:
        """Archive the sandbox's files; the ``Snapshotted`` event, relayed, is the answer."""
        await self._answering(
            command.command_id, command.run_id, "snapshot_failed", lambda: self._snapshot(command)
        )

    async def _snapshot(self, command: SnapshotSandbox) -> None:
        sandbox = await self.held_sandbox(command.sandbox_id, fresh=True)
        if command.command_id in sandbox.snapshots:
            return  # a repeated command: the first one's event already answered
        if dirs := sandbox_dirs_of(sandbox):
            raise CommandRefused(
                "snapshot_unsupported",
                f"{command.sandbox_id} presents directories outside its working directory "
                f"({', '.join(dirs)}) that a snapshot would miss: such a sandbox is not "
                "snapshotted",
            )
        backend = self.backend(sandbox.backend)
        scratch = self.snapshots.scratch()
        try:
            await backend.snapshot(command.sandbox_id, scratch)
            snapshot_id, size_bytes = await asyncio.to_thread(self.snapshots.add, scratch)
        except (BackendError, OSError) as exc:
            await asyncio.to_thread(self.snapshots.discard, scratch)
            raise CommandRefused("snapshot_failed", str(exc)) from exc
        await self._share(snapshot_id)
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
            raise CommandRefused("sandbox_killed", f"{command.sandbox_id} was killed") from None
        self.relay.wake()

    # -- snapshots every copy can restore ---------------------------------------------
    async def _bucket(self) -> ObjectStore:
        js = jetstream(self.bus())
        try:
            return await js.object_store(subjects.SNAPSHOTS_BUCKET)
        except BucketNotFoundError:
            await declare_buckets(js, replicas=self.settings.nats_replicas)
            return await js.object_store(subjects.SNAPSHOTS_BUCKET)

    async def _share(self, snapshot_id: str) -> None:
        """Put a new archive in the snapshots bucket (once: it is content-addressed)."""
        path = self.snapshots.path(snapshot_id)
        name = path.name
        bucket = await self._bucket()
        with contextlib.suppress(ObjectNotFoundError):
            await bucket.get_info(name)
            return
        data = await asyncio.to_thread(path.read_bytes)
        await bucket.put(name, data)

    async def _archive(self, snapshot_id: str) -> Path:
        """A snapshot's archive on this copy's disk: here already, or fetched from the bucket."""
        try:
            return self.snapshots.path(snapshot_id)
        except SnapshotNotFoundError:
            if not SNAPSHOT_ID.match(snapshot_id):
                raise
        try:
            found = await (await self._bucket()).get(f"{snapshot_id}.tar.gz")
        except (ObjectNotFoundError, BucketNotFoundError):
            raise SnapshotNotFoundError(f"no snapshot {snapshot_id!r}") from None
        scratch = self.snapshots.scratch()
        await asyncio.to_thread(scratch.write_bytes, bytes(found.data or b""))
        stored, _ = await asyncio.to_thread(self.snapshots.add, scratch)
        if stored != snapshot_id:  # the bytes do not hash to their name: never restore them
            raise SnapshotNotFoundError(f"snapshot {snapshot_id!r} in the bucket is corrupt")
        return self.snapshots.path(snapshot_id)

    # -- kill -------------------------------------------------------------------------
    async def kill(self, command: KillSandbox) -> None:
        await self._answering(
            command.command_id, command.run_id, "kill_failed", lambda: self._kill(command)
        )

    def _forget_held(self, sandbox_id: str) -> None:
        """A kill of ``sandbox_id`` begins: commands for it read the store again."""
        self._kills_begun += 1
        self._held.pop(sandbox_id, None)

    async def _kill(self, command: KillSandbox) -> None:
        self._forget_held(command.sandbox_id)
        sandbox = await self.store.run(self.app.get, command.sandbox_id)
        if sandbox is None:
            raise CommandRefused("no_sandbox", command.sandbox_id)
        if sandbox.killed:
            # Answer, so a caller that missed the first kill's reply does not wait it out;
            # a redelivered command's caller already had its answer and ignores this one.
            raise CommandRefused("already_killed", command.sandbox_id)
        backend = self.backend(sandbox.backend)
        await backend.kill(command.sandbox_id)
        await self._record_kill(command.sandbox_id, command.command_id, command.reason, backend)

    async def _record_kill(
        self, sandbox_id: str, command_id: str, reason: str, backend: SandboxBackend
    ) -> None:
        self._forget_held(sandbox_id)
        await self.store.run(
            lambda: self.app.kill(
                sandbox_id, command_id=command_id, reason=reason, rate=backend.rate_micros_per_s
            )
        )
        self.relay.wake()

    # -- the reaper -------------------------------------------------------------------
    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(REAP_EVERY_S)
            try:
                await self.reap()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("reaping lost sandboxes failed", exc_info=True)

    async def reap(self) -> int:
        """Close the open sandboxes of dead copies (``owner_lost``); returns how many.

        Their processes died with their copy (``--die-with-parent`` for ``local``);
        a remote backend's sandbox is killed through the backend all the same.
        Their directories go too. Only a judge that could have heard them acts.
        """
        if not self.membership.can_judge():
            return 0
        open_now = await self.store.run(self._open.catch_up, self.app)
        dead: dict[str, bool] = {}
        reaped = 0
        for sandbox_id, owner in open_now.items():
            if owner is None or owner == self.copy_id:
                continue
            if owner not in dead:
                dead[owner] = not await self.membership.alive(SERVICE, owner)
            if not dead[owner]:
                continue
            sandbox = await self.store.run(self.app.get, sandbox_id)
            if sandbox is None or sandbox.killed:
                continue
            backend = self.backend(sandbox.backend)
            with contextlib.suppress(Exception):
                await backend.kill(sandbox_id)
            try:
                await self._record_kill(sandbox_id, f"reap:{sandbox_id}", "owner_lost", backend)
                reaped += 1
            except Exception:  # another copy reaped it first
                log.debug("reaping %s: already done", sandbox_id, exc_info=True)
        await self._sweep_dead_dirs()
        return reaped

    async def _sweep_dead_dirs(self) -> None:
        """Remove the directories of copies that are gone (and the layout before copies)."""
        names = await asyncio.to_thread(
            lambda: (
                [p.name for p in self.sandboxes_dir.iterdir()]
                if self.sandboxes_dir.exists()
                else []
            )
        )
        for name in names:
            if name == self.copy_id:
                continue
            if name in BACKENDS or not await self.membership.alive(SERVICE, name):
                await asyncio.to_thread(shutil.rmtree, self.sandboxes_dir / name, True)

    async def stop(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        for task in list(self._running.values()):
            task.cancel()
        await asyncio.gather(*self._running.values(), return_exceptions=True)
        for backend in self._backends.values():
            await backend.close()
