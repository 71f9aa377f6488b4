"""The workspace port over NATS: the run's sandboxes, dataset, scorer and model.

Everything here is rebuilt from the run's log when missing, so a resumed run,
a replay or a fork gets the same sandbox contents and model as the run that
recorded them: a sandbox is restored from the latest snapshot on record (or
assembled from the dataset and scorer when there is none), and the model is
re-attached without recording a second ``ModelProxyArtifact``.

A command for an existing sandbox goes to the sandbox-manager copy that holds
it (``SandboxCreated.owner``); while its answer is awaited, that copy's
heartbeat is watched, and its death is ``SandboxLost`` within the liveness TTL
instead of a long silence.
"""

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from faststream.nats import NatsBroker

from benchwright_orchestrator.adapters.feed import NatsResultFeed
from benchwright_orchestrator.adapters.replies import Replies
from benchwright_orchestrator.domain import Run
from benchwright_orchestrator.ports import OnResults, PhaseError, ResultFeed, SandboxLost
from benchwright_shared import subjects
from benchwright_shared.bus import ask, jetstream, send_command
from benchwright_shared.contracts import (
    AttachModel,
    CatalogListing,
    Contract,
    CreateSandbox,
    DetachModel,
    EnvironmentBuild,
    ExecInSandbox,
    GetImpl,
    GetSubsetRows,
    ImplCode,
    KillSandbox,
    ListCatalog,
    ModelAttached,
    SandboxCommandFailed,
    SandboxCreated,
    SandboxExecFinished,
    SandboxFile,
    SandboxKilled,
    SandboxSnapshotted,
    SnapshotSandbox,
    SubsetRows,
    SutRef,
)
from benchwright_shared.contracts.commands import SandboxRole
from benchwright_shared.ids import new_command_id as command_id
from benchwright_shared.liveness import Membership
from benchwright_shared.money import dollars_to_micros

log = logging.getLogger(__name__)

COMMAND_TIMEOUT_S = 120.0
# How often a wait on a sandbox's command looks at its holder's heartbeat.
LIVENESS_CHECK_S = 1.0
SANDBOX_MANAGER = "sandbox-manager"


class NatsWorkspace:
    def __init__(
        self, run: Run, broker: NatsBroker, replies: Replies, membership: Membership | None
    ) -> None:
        self.run = run
        self.broker = broker
        self.replies = replies
        self.membership = membership
        self.sandbox_id: str | None = None
        self.model: ModelAttached | None = None

    # -- sandboxes and the copies that hold them ------------------------------------
    def owner(self, sandbox_id: str) -> str | None:
        return self.run.sandbox_owners.get(sandbox_id)

    def subject_for(self, sandbox_id: str, verb: str, default: str) -> str:
        """Where a command for ``sandbox_id`` goes: its holder, or any copy for older sandboxes."""
        owner = self.owner(sandbox_id)
        return subjects.sandbox_copy_subject(owner, verb) if owner else default

    async def holder_alive(self, sandbox_id: str) -> bool:
        owner = self.owner(sandbox_id)
        if owner is None or self.membership is None:
            return True
        return await self.membership.alive(SANDBOX_MANAGER, owner)

    # -- commands and their replies ------------------------------------------------
    async def request(
        self,
        command: Contract,
        timeout: float = COMMAND_TIMEOUT_S,
        *,
        subject: str | None = None,
        sandbox_id: str | None = None,
    ) -> Contract:
        """Send ``command`` and await the event that answers it.

        With ``sandbox_id``, the wait ends in ``SandboxLost`` as soon as the copy
        holding that sandbox is known to be dead.
        """
        cid: str = command.command_id  # type: ignore[attr-defined]
        queue = self.replies.expect(cid)
        deadline = time.monotonic() + timeout
        try:
            await send_command(self.broker, command, subject=subject)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PhaseError("timeout", f"no reply to {type(command).__name__}")
                try:
                    reply = await asyncio.wait_for(queue.get(), min(left, LIVENESS_CHECK_S))
                    break
                except TimeoutError:
                    if sandbox_id is not None and not await self.holder_alive(sandbox_id):
                        raise SandboxLost(
                            sandbox_id, f"its sandbox-manager {self.owner(sandbox_id)} died"
                        ) from None
        finally:
            self.replies.forget(cid)
        if isinstance(reply, SandboxCommandFailed):
            if sandbox_id is not None and reply.error_type in ("no_sandbox", "not_held_here"):
                raise SandboxLost(sandbox_id, f"{reply.error_type}: {reply.detail}")
            raise PhaseError(reply.error_type, reply.detail)
        return reply

    # -- the dataset and the scorer -----------------------------------------------------
    async def subset_rows(self, subset_id: str) -> SubsetRows:
        rows = await ask(self.broker, GetSubsetRows(subset_id=subset_id, limit=0), SubsetRows)
        if rows.problem:
            raise PhaseError("dataset_unavailable", rows.problem.detail or rows.problem.title)
        return rows

    async def dataset_file(self) -> SandboxFile:
        """``tasks.jsonl`` as recorded by Fetch (or, for older logs, as the registry has it)."""
        bucket, name = self.run.dataset.get("bucket"), self.run.dataset.get("object_name")
        if not (bucket and name):
            if not self.run.subset_id:
                raise PhaseError("no_dataset", "the run has no dataset on record")
            rows = await self.subset_rows(self.run.subset_id)
            bucket, name = rows.bucket, rows.object_name
        return SandboxFile(path="tasks.jsonl", bucket=bucket, object_name=name)

    async def base_files(self) -> list[SandboxFile]:
        """What a sandbox starts with when no snapshot is had: the dataset, or the
        task files of a harness run (which bring their own data)."""
        harness: dict[str, Any] | None = getattr(self.run, "harness", None)
        if not harness:
            return [await self.dataset_file()]
        own = [SandboxFile(path=p, content=t) for p, t in sorted(harness["files"].items())]
        # A catalog-fed harness task (inspect_evals) reads the subset's rows too.
        return [await self.dataset_file(), *own] if self.run.subset_id else own

    async def scorer_code(self) -> str | None:
        """The scorer on record: authored code in the log, or the registry's impl."""
        if self.run.scorer and self.run.scorer.get("code"):
            return str(self.run.scorer["code"])
        if self.run.impl_id:
            impl = await ask(self.broker, GetImpl(impl_id=self.run.impl_id), ImplCode)
            if impl.problem:
                raise PhaseError("impl_unavailable", impl.problem.detail or impl.problem.title)
            return impl.code
        return None

    async def list_catalog(self) -> CatalogListing:
        listing = await ask(self.broker, ListCatalog(account=self.run.account), CatalogListing)
        if listing.problem:
            raise PhaseError("catalog_unavailable", listing.problem.detail or "")
        return listing

    # -- creating sandboxes -----------------------------------------------------------
    async def _create(
        self, role: SandboxRole, files: list[SandboxFile], snapshot: str | None
    ) -> str:
        """A sandbox from ``snapshot`` (or, that gone, the dataset) with ``files`` on top."""
        reply: Contract | None = None
        if snapshot is not None:
            try:
                reply = await self.request(self._create_command(role, files, snapshot))
            except PhaseError as exc:
                if exc.error_type != "snapshot_not_found":
                    raise
        if reply is None:
            with_data = [*await self.base_files(), *files]
            reply = await self.request(self._create_command(role, with_data, None))
        return self._recorded(reply)

    def _recorded(self, reply: Contract) -> str:
        """The id of the sandbox ``reply`` announces, once its creation is on the run."""
        if not isinstance(reply, SandboxCreated):
            raise PhaseError("sandbox_crash", f"unexpected reply {type(reply).__name__}")
        self.run.sandbox_created(
            sandbox_id=reply.sandbox_id,
            backend=reply.backend,
            metadata=reply.metadata,
            owner=reply.owner,
        )
        return reply.sandbox_id

    def _create_command(
        self,
        role: SandboxRole,
        files: list[SandboxFile],
        from_snapshot: str | None,
        *,
        dirs: list[str] | None = None,
    ) -> CreateSandbox:
        return CreateSandbox(
            command_id=command_id(),
            run_id=self.run.run_id,
            account=self.run.account,
            role=role,
            backend=self.run.backend,
            files=files,
            from_snapshot=from_snapshot,
            dirs=dirs or [],
        )

    async def ensure_sandbox(self) -> str:
        """The run's work sandbox, created or restored when there is none."""
        if self.sandbox_id is not None:
            return self.sandbox_id
        code = await self.scorer_code()
        on_top = [SandboxFile(path="task_impl.py", content=code)] if code else []
        self.sandbox_id = await self._create("work", on_top, self.run.latest_snapshot())
        return self.sandbox_id

    async def create_task_sandbox(self, files: list[SandboxFile], snapshot: str | None) -> str:
        return await self._create("task", files, snapshot)

    async def create_agentic_sandbox(
        self,
        files: list[SandboxFile],
        dirs: list[str],
        *,
        role: SandboxRole = "harbor_task_env",
        image: str | None = None,
        build: EnvironmentBuild | None = None,
    ) -> str:
        command = self._create_command(role, files, None, dirs=dirs)
        command = command.model_copy(update={"image": image, "build": build})
        # A build answers once it is done: the wait allows for its bound.
        timeout = COMMAND_TIMEOUT_S + (build.timeout_s if build is not None else 0.0)
        return self._recorded(await self.request(command, timeout))

    async def keep_text(self, text: str) -> str:
        data = text.encode()
        name = f"{self.run.run_id}/{hashlib.sha256(data).hexdigest()}"
        bucket = await jetstream(self.broker).object_store(subjects.ARTIFACTS_BUCKET)
        await bucket.put(name, data)
        return name

    async def install_scorer(self) -> None:
        """Write the scorer on record into the live work sandbox, if there is one.

        A sandbox created later gets it anyway (``ensure_sandbox`` puts it on top).
        """
        if self.sandbox_id is None:
            return
        code = await self.scorer_code()
        if not code:
            return
        result = await self.exec(
            ["python", "-c", "pass"], files=[SandboxFile(path="task_impl.py", content=code)]
        )
        if result.exit_code != 0:
            raise PhaseError("write_failed", (result.stderr or result.stdout)[-2000:])

    # -- using them -------------------------------------------------------------------
    async def exec(
        self,
        argv: list[str],
        *,
        files: list[SandboxFile] | None = None,
        stdin: str | None = None,
        timeout_s: float = 120.0,
        export: list[str] | None = None,
    ) -> SandboxExecFinished:
        sandbox_id = await self.ensure_sandbox()
        return await self._exec(
            ExecInSandbox(
                command_id=command_id(),
                run_id=self.run.run_id,
                sandbox_id=sandbox_id,
                argv=argv,
                files=files or [],
                stdin=stdin,
                timeout_s=timeout_s,
                export=export or [],
                # Before the model is attached there is no run key: no way out at all.
                egress=self.model.egress if self.model else None,
            )
        )

    async def exec_in(
        self,
        sandbox_id: str,
        argv: list[str],
        *,
        files: list[SandboxFile] | None = None,
        stdin: str | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_s: float = 120.0,
        network: bool = False,
        export: list[str] | None = None,
    ) -> SandboxExecFinished:
        return await self._exec(
            ExecInSandbox(
                command_id=command_id(),
                run_id=self.run.run_id,
                sandbox_id=sandbox_id,
                argv=argv,
                files=files or [],
                stdin=stdin,
                timeout_s=timeout_s,
                cwd=cwd,
                env=env or {},
                egress=self.model.egress if network and self.model else None,
                export=export or [],
            )
        )

    async def _exec(self, command: ExecInSandbox) -> SandboxExecFinished:
        reply = await self.request(
            command,
            timeout=command.timeout_s + 30,
            subject=self.subject_for(command.sandbox_id, "exec", subjects.EXEC_IN_SANDBOX),
            sandbox_id=command.sandbox_id,
        )
        assert isinstance(reply, SandboxExecFinished)
        return reply

    async def run_python(self, script: str, args: list[str], stdin: str | None = None) -> Any:
        """Run a stdlib script in the sandbox and parse its JSON output."""
        result = await self.exec(["python", "-c", script, *args], stdin=stdin)
        if result.exit_code != 0:
            raise PhaseError("sandbox_script_failed", (result.stderr or result.stdout)[-2000:])
        return json.loads(result.stdout)

    async def snapshot(self, phase: str) -> None:
        """Capture the work sandbox at the end of ``phase``."""
        sandbox_id = await self.ensure_sandbox()
        reply = await self.request(
            SnapshotSandbox(
                command_id=command_id(),
                run_id=self.run.run_id,
                sandbox_id=sandbox_id,
                label=f"{self.run.run_id}:{phase}",
            ),
            subject=self.subject_for(sandbox_id, "snapshot", subjects.SNAPSHOT_SANDBOX),
            sandbox_id=sandbox_id,
        )
        assert isinstance(reply, SandboxSnapshotted)
        self.run.snapshot_created(
            phase=phase,
            snapshot_id=reply.snapshot_id,
            sandbox_id=sandbox_id,
            size_bytes=reply.size_bytes,
        )

    # -- letting go -----------------------------------------------------------------
    def _kill_command(self, sandbox_id: str, reason: str) -> KillSandbox:
        return KillSandbox(
            command_id=command_id(), run_id=self.run.run_id, sandbox_id=sandbox_id, reason=reason
        )

    async def kill_sandbox(self, sandbox_id: str, *, reason: str) -> None:
        try:
            reply = await self.request(
                self._kill_command(sandbox_id, reason),
                timeout=30,
                subject=self.subject_for(sandbox_id, "kill", subjects.KILL_SANDBOX),
                sandbox_id=sandbox_id,
            )
        except SandboxLost as lost:
            self.run.sandbox_lost(sandbox_id=sandbox_id, reason=lost.detail)
            reply = None
        except PhaseError:
            reply = None  # already gone, or the manager is down: the run still finishes
        if isinstance(reply, SandboxKilled):
            self.run.sandbox_killed(
                sandbox_id=reply.sandbox_id,
                backend=reply.backend,
                reason=reply.reason,
                duration_ms=reply.duration_ms,
                cost_micros=reply.cost_micros,
                metadata=reply.metadata,
            )
        if sandbox_id == self.sandbox_id:
            self.sandbox_id = None

    async def lose_sandbox(self, sandbox_id: str, reason: str) -> None:
        """Let go of a sandbox that stopped answering.

        Its holder alive, it is killed as usual; dead, the sandbox is recorded as
        lost, and a kill still goes to the holder's subject in case it comes back.
        """
        if sandbox_id == self.sandbox_id:
            self.sandbox_id = None
        if await self.holder_alive(sandbox_id):
            await self.kill_sandbox(sandbox_id, reason=reason[:200])
            return
        if sandbox_id in self.run.open_sandboxes:
            self.run.sandbox_lost(sandbox_id=sandbox_id, reason=reason)
        owner = self.owner(sandbox_id)
        if owner is not None:
            with contextlib.suppress(Exception):
                await send_command(
                    self.broker,
                    self._kill_command(sandbox_id, "lost"),
                    subject=subjects.sandbox_copy_subject(owner, "kill"),
                )

    # -- the model -----------------------------------------------------------------
    async def attach(self, *, fresh: bool = False) -> ModelAttached:
        if self.model is not None and not fresh:
            return self.model
        if not self.run.sut:
            raise PhaseError(
                "no_model",
                "no model to evaluate: name one in the request ('... on openrouter/<model>') "
                "or pass 'sut'",
            )
        reply = await self.request(
            AttachModel(
                command_id=command_id(),
                run_id=self.run.run_id,
                account=self.run.account,
                sut=SutRef.model_validate(self.run.sut),
                task_cost_micros=self._ceiling_micros("task"),
                attempt_cost_micros=self._ceiling_micros("attempt"),
                task_rows=self.run.dataset.get("total_tasks"),
                trials_k=self.run.trials_k,
                cache=getattr(self.run, "cache", None),  # runs launched before: none
                telemetry=getattr(self.run, "telemetry", None),
                judges=[SutRef.model_validate(j) for j in getattr(self.run, "judges", None) or []]
                or None,
            )
        )
        assert isinstance(reply, ModelAttached)
        self.model = reply
        return reply

    def _ceiling_micros(self, level: str) -> int | None:
        """``limits.<level>.cost`` in micro-dollars, for the proxy that enforces it."""
        dollars = (self.run.limits.get(level) or {}).get("cost")
        return dollars_to_micros(dollars) if dollars else None

    async def release(self) -> None:
        """Kill the work sandbox and revoke the run's model key, whatever happened."""
        for sandbox_id in list(self.run.open_sandboxes):
            await self.lose_sandbox(sandbox_id, "run_finished")
        if self.model is not None:
            detach = DetachModel(
                command_id=command_id(),
                run_id=self.run.run_id,
                attach_command_id=self.model.command_id,
            )
            await send_command(self.broker, detach)
            self.model = None

    # -- results ------------------------------------------------------------------------
    @asynccontextmanager
    async def results(self, invocation: int, on_results: OnResults) -> AsyncIterator[ResultFeed]:
        feed = NatsResultFeed(
            self.broker,
            self.run,
            invocation,
            on_results,
            subject_for=self.subject_for,
            holder_alive=self.holder_alive,
            owner=self.owner,
        )
        await feed.open()
        try:
            yield feed
        finally:
            await feed.close()
