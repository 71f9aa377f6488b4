"""The run's hold on other services: its work sandbox and its model binding.

Everything here is rebuilt from the run's log when missing, so a resumed run,
a replay or a fork gets the same sandbox contents and model as the run that
recorded them: a sandbox is restored from the latest snapshot on record (or
assembled from the dataset and scorer when there is none), and the model is
re-attached without recording a second ``ModelProxyArtifact``.
"""

import asyncio
import json
import uuid
from dataclasses import dataclass
from typing import Any

from faststream.nats import NatsBroker

from benchwright_orchestrator.domain import Run
from benchwright_orchestrator.replies import Replies
from benchwright_shared.bus import ask, send_command
from benchwright_shared.contracts import (
    AttachModel,
    Contract,
    CreateSandbox,
    DetachModel,
    ExecInSandbox,
    GetImpl,
    GetSubsetRows,
    ImplCode,
    KillSandbox,
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

COMMAND_TIMEOUT_S = 120.0


class PhaseError(Exception):
    """A phase could not finish; ``error_type`` names why."""

    def __init__(self, error_type: str, detail: str) -> None:
        super().__init__(detail)
        self.error_type = error_type
        self.detail = detail


@dataclass
class Workspace:
    run: Run
    broker: NatsBroker
    replies: Replies
    sandbox_id: str | None = None
    model: ModelAttached | None = None

    # -- commands and their replies ------------------------------------------------
    @staticmethod
    def command_id() -> str:
        return str(uuid.uuid4())

    async def request(self, command: Contract, timeout: float = COMMAND_TIMEOUT_S) -> Contract:
        command_id: str = command.command_id  # type: ignore[attr-defined]
        queue = self.replies.expect(command_id)
        try:
            await send_command(self.broker, command)
            reply = await asyncio.wait_for(queue.get(), timeout)
        except TimeoutError:
            raise PhaseError("timeout", f"no reply to {type(command).__name__}") from None
        finally:
            self.replies.forget(command_id)
        if isinstance(reply, SandboxCommandFailed):
            raise PhaseError(reply.error_type, reply.detail)
        return reply

    # -- the dataset ---------------------------------------------------------------
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

    # -- the work sandbox ----------------------------------------------------------
    async def ensure_sandbox(self) -> str:
        """The run's work sandbox, created or restored when there is none."""
        if self.sandbox_id is not None:
            return self.sandbox_id
        code = await self.scorer_code()
        on_top = [SandboxFile(path="task_impl.py", content=code)] if code else []
        snapshot = self.run.latest_snapshot()
        reply: Contract | None = None
        if snapshot is not None:
            try:
                reply = await self.request(self._create(on_top, from_snapshot=snapshot))
            except PhaseError as exc:
                if exc.error_type != "snapshot_not_found":
                    raise
        if reply is None:
            reply = await self.request(self._create([await self.dataset_file(), *on_top]))
        assert isinstance(reply, SandboxCreated)
        self.sandbox_id = reply.sandbox_id
        self.run.sandbox_created(
            sandbox_id=reply.sandbox_id, backend=reply.backend, metadata=reply.metadata
        )
        return reply.sandbox_id

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

    def _create(self, files: list[SandboxFile], from_snapshot: str | None = None) -> CreateSandbox:
        return CreateSandbox(
            command_id=self.command_id(),
            run_id=self.run.run_id,
            account=self.run.account,
            role="work",
            backend=self.run.backend,
            files=files,
            from_snapshot=from_snapshot,
        )

    async def exec(
        self,
        argv: list[str],
        *,
        files: list[SandboxFile] | None = None,
        stdin: str | None = None,
        timeout_s: float = 120.0,
    ) -> SandboxExecFinished:
        sandbox_id = await self.ensure_sandbox()
        reply = await self.request(
            ExecInSandbox(
                command_id=self.command_id(),
                run_id=self.run.run_id,
                sandbox_id=sandbox_id,
                argv=argv,
                files=files or [],
                stdin=stdin,
                timeout_s=timeout_s,
                # Before the model is attached there is no run key: no way out at all.
                egress=self.model.egress if self.model else None,
            ),
            timeout=timeout_s + 30,
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
                command_id=self.command_id(),
                run_id=self.run.run_id,
                sandbox_id=sandbox_id,
                label=f"{self.run.run_id}:{phase}",
            )
        )
        assert isinstance(reply, SandboxSnapshotted)
        self.run.snapshot_created(
            phase=phase,
            snapshot_id=reply.snapshot_id,
            sandbox_id=sandbox_id,
            size_bytes=reply.size_bytes,
        )

    async def kill_sandbox(self, sandbox_id: str, *, reason: str) -> None:
        try:
            reply = await self.request(
                KillSandbox(
                    command_id=self.command_id(),
                    run_id=self.run.run_id,
                    sandbox_id=sandbox_id,
                    reason=reason,
                ),
                timeout=30,
            )
        except PhaseError:
            return  # already gone, or the manager is down: the run still finishes
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

    # -- the model -----------------------------------------------------------------
    async def attach(self) -> ModelAttached:
        if self.model is not None:
            return self.model
        if not self.run.sut:
            raise PhaseError(
                "no_model",
                "no model to evaluate: name one in the request ('... on openrouter/<model>') "
                "or pass 'sut'",
            )
        reply = await self.request(
            AttachModel(
                command_id=self.command_id(),
                run_id=self.run.run_id,
                account=self.run.account,
                sut=SutRef.model_validate(self.run.sut),
            )
        )
        assert isinstance(reply, ModelAttached)
        self.model = reply
        return reply

    async def release(self) -> None:
        """Kill the work sandbox and revoke the run's model key, whatever happened."""
        for sandbox_id in list(self.run.open_sandboxes):
            await self.kill_sandbox(sandbox_id, reason="run_finished")
        if self.model is not None:
            await send_command(
                self.broker, DetachModel(command_id=self.command_id(), run_id=self.run.run_id)
            )
            self.model = None
