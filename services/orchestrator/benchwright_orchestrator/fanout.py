"""Fanout Materialize: which mode a run gets, and the task sandboxes it runs in.

Sequential Materialize runs every task in the shared work sandbox; fanout gives
each task its own ephemeral task sandbox, restored from the run's latest
snapshot (normally Atomize's, so ``task_impl.py`` is already there) and killed
when the task finishes. The scorer does not choose: ``materialize_mode`` picks
from the run's infrastructure alone (concepts §4), and an operator's
``BW_MATERIALIZE_MODE`` overrides it.
"""

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Literal

from benchwright_orchestrator.workspace import PhaseError, Workspace
from benchwright_shared.contracts import Contract, CreateSandbox, SandboxCreated, SandboxFile

MaterializeMode = Literal["sequential", "fanout"]

MODE_OVERRIDES = ("auto", "sequential", "fanout")
# The harness that runs our own Driver-authored scorer; any other is a bridge.
OWN_HARNESS = "benchwright"
# How long a halted fanout waits for a sandbox it asked for, to kill it.
CREATE_GRACE_S = 30.0


def explain_materialize_mode(
    *, backend: str, harness: str | None, product_snapshot: bool, override: str
) -> tuple[MaterializeMode, str]:
    """``materialize_mode`` and the reason for it, in words for the run's log."""
    if override not in MODE_OVERRIDES:
        raise ValueError(f"materialize mode override must be one of {MODE_OVERRIDES}: {override!r}")
    if override == "sequential":
        return "sequential", "set by BW_MATERIALIZE_MODE"
    if override == "fanout":
        return "fanout", "set by BW_MATERIALIZE_MODE"
    if product_snapshot:
        return "fanout", "a product-sandbox run restores its snapshot into a sandbox per task"
    if harness is not None and harness != OWN_HARNESS:
        return "sequential", f"the {harness} harness bridge runs in the work sandbox"
    if backend == "e2b":
        return "fanout", "e2b spawns fast enough for a sandbox per task"
    return "sequential", f"the {backend} backend runs every task in the work sandbox"


def materialize_mode(
    *, backend: str, harness: str | None, product_snapshot: bool, override: str
) -> MaterializeMode:
    """How Materialize runs, from the run's infrastructure alone (concepts §4).

    In order: a product-sandbox run with a snapshot to restore gets fanout; a
    harness-bridge run (any harness but ``benchwright``) gets sequential; an
    e2b run gets fanout; everything else gets sequential. ``override``
    (``auto`` | ``sequential`` | ``fanout``) wins unless it is ``auto``.
    """
    mode, _ = explain_materialize_mode(
        backend=backend, harness=harness, product_snapshot=product_snapshot, override=override
    )
    return mode


@dataclass
class TaskSandboxes:
    """Creates and kills one run's task sandboxes, recording each on the run.

    A sandbox starts from ``snapshot`` with ``files`` laid on top; when the
    snapshot is gone, from the dataset and ``files``, as the work sandbox would.
    """

    work: Workspace
    backend: str
    snapshot: str | None
    files: list[SandboxFile]

    async def create(self) -> str:
        """A new task sandbox's id; a halt while it starts still kills it once it is up."""
        starting = asyncio.ensure_future(self._create())
        try:
            return await asyncio.shield(starting)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await self.kill(await asyncio.wait_for(starting, CREATE_GRACE_S))
            raise

    async def kill(self, sandbox_id: str) -> None:
        """Kill a task sandbox and record it; a halt arriving meanwhile waits for the record.

        Interrupted, the kill would still happen, but its reply would be lost and
        the run would list the sandbox as open (a second kill gets no reply).
        """
        killing = asyncio.ensure_future(self.work.kill_sandbox(sandbox_id, reason="task_finished"))
        try:
            await asyncio.shield(killing)
        except asyncio.CancelledError:
            await killing
            raise

    async def _create(self) -> str:
        reply: Contract | None = None
        if self.snapshot is not None:
            try:
                reply = await self.work.request(self._command(self.files, self.snapshot))
            except PhaseError as exc:
                if exc.error_type != "snapshot_not_found":
                    raise
                self.snapshot = None  # the tasks after this one go straight to the dataset
        if reply is None:
            files = [await self.work.dataset_file(), *self.files]
            reply = await self.work.request(self._command(files, None))
        if not isinstance(reply, SandboxCreated):
            raise PhaseError("sandbox_crash", f"unexpected reply {type(reply).__name__}")
        self.work.run.sandbox_created(
            sandbox_id=reply.sandbox_id, backend=reply.backend, metadata=reply.metadata
        )
        return reply.sandbox_id

    def _command(self, files: list[SandboxFile], from_snapshot: str | None) -> CreateSandbox:
        return CreateSandbox(
            command_id=self.work.command_id(),
            run_id=self.work.run.run_id,
            account=self.work.run.account,
            role="task",
            backend=self.backend,
            files=files,
            from_snapshot=from_snapshot,
        )
