"""Owns the running pipelines of this orchestrator process."""

import asyncio
import logging

from faststream.nats import NatsBroker

from benchwright_orchestrator.adapters.platform import NatsPlatform
from benchwright_orchestrator.adapters.replies import Replies
from benchwright_orchestrator.adapters.store import StoredRuns
from benchwright_orchestrator.adapters.workspace import NatsWorkspace
from benchwright_orchestrator.application import RunsApplication
from benchwright_orchestrator.domain import Run, RunError, RunNotPublishableError
from benchwright_orchestrator.driver.select import select_driver
from benchwright_orchestrator.pipeline import PipelineDeps, RunPipeline
from benchwright_orchestrator.plan import resolve_backend
from benchwright_shared.contracts import (
    DeleteRun,
    GetRunEvents,
    HaltRun,
    LaunchRun,
    Problem,
    ResolveRunHalt,
    RunEventsPage,
    UpdateRun,
)
from benchwright_shared.liveness import Membership
from benchwright_shared.relay import Relay
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore

log = logging.getLogger(__name__)


class Orchestrator:
    def __init__(
        self,
        settings: Settings,
        app: RunsApplication,
        store: BlockingStore,
        relay: Relay,
        *,
        membership: Membership | None = None,
    ) -> None:
        self.membership = membership
        self.settings = settings
        self.app = app
        self.store = store
        self.relay = relay
        self.replies = Replies()
        self.broker: NatsBroker | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._pipelines: dict[str, RunPipeline] = {}
        self._running: dict[str, asyncio.Task[None]] = {}

    async def start(self, broker: NatsBroker) -> None:
        self.broker = broker
        await self.close_interrupted_runs()

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def launch(self, command: LaunchRun) -> None:
        remote = [
            name
            for name, configured in (
                ("e2b", self.settings.e2b_api_key),
                ("sandbox0", self.settings.kube_config),
            )
            if configured
        ]
        backend = resolve_backend(command.compute, self.settings.sandbox_backend, remote)
        run, created = await self.store.run(self.app.launch, command, backend)
        self.relay.wake()
        if created:
            self._spawn(run)

    def _spawn(self, run: Run, *, resume: bool = False) -> None:
        assert self.broker is not None
        deps = PipelineDeps(
            store=StoredRuns(self.app, self.store, self.relay),
            platform=NatsPlatform(self.broker),
            settings=self.settings,
        )
        work = NatsWorkspace(run, self.broker, self.replies, self.membership)
        pipeline = RunPipeline(deps, run, select_driver(run.driver, self.settings), work)
        task = asyncio.create_task(pipeline.execute(resume=resume), name=f"run-{run.run_id}")
        self._pipelines[run.run_id] = pipeline
        self._running[run.run_id] = task
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        task.add_done_callback(lambda _: self._pipelines.pop(run.run_id, None))
        task.add_done_callback(lambda _: self._running.pop(run.run_id, None))

    async def halt(self, command: HaltRun) -> None:
        """Halt the run if this process drives it; another process may.

        A run parked waiting for a person has no pipeline anywhere: the
        process that receives the halt first closes it.
        """
        pipeline = self._pipelines.get(command.run_id)
        if pipeline is not None and not pipeline.parked:
            if pipeline.run.account == command.account:
                pipeline.request_halt(command.halt_reason)
            return
        await self._settled(command.run_id)
        run = await self.store.run(self.app.find_run, command.run_id)
        if run is None or run.account != command.account or not run.waiting:
            return
        run.finish(
            status="error",
            duration_ms=0,
            summary={},
            error_type="halted",
            detail=command.halt_reason,
            fingerprint=run.fingerprint(),
        )
        await self.store.run(self.app.save, run)
        self.relay.wake()

    async def resolve_halt(self, command: ResolveRunHalt) -> None:
        """A person answered: clear the halt and carry the run on from its log."""
        await self._settled(command.run_id)
        run = await self.store.run(self.app.find_run, command.run_id)
        if run is None or run.account != command.account or command.run_id in self._pipelines:
            return
        try:
            run.clear_halt(command.resolution, cleared_by=command.action)
        except RunError:
            return  # not waiting (any more): a repeated command
        await self.store.run(self.app.save, run)
        self.relay.wake()
        self._spawn(run, resume=True)

    async def _settled(self, run_id: str) -> None:
        """Wait for a parking pipeline to finish releasing what it held."""
        pipeline = self._pipelines.get(run_id)
        if pipeline is not None and pipeline.parked:
            await self._ended(run_id)

    async def _ended(self, run_id: str, timeout: float = 30.0) -> None:
        """Wait (boundedly) for this process's pipeline of ``run_id`` to end."""
        task = self._running.get(run_id)
        if task is not None:
            await asyncio.wait({task}, timeout=timeout)

    async def update(self, command: UpdateRun) -> None:
        run = await self.store.run(self.app.find_run, command.run_id)
        if run is None or run.account != command.account or run.deleted:
            return
        try:
            run.update(command.visibility, command.metadata, by=command.account)
        except RunNotPublishableError:
            log.warning("run %s cannot be public; the update is dropped", command.run_id)
            return
        await self.store.run(self.app.save, run)
        self.relay.wake()

    async def delete(self, command: DeleteRun) -> None:
        pipeline = self._pipelines.get(command.run_id)
        if pipeline is not None and pipeline.run.account == command.account:
            pipeline.request_halt("operator_kill: deleted")
            await self._ended(command.run_id)
        run = await self.store.run(self.app.find_run, command.run_id)
        if run is None or run.account != command.account:
            return
        run.delete(deleted_by=command.account)
        await self.store.run(self.app.save, run)
        self.relay.wake()

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception():
            log.error("pipeline crashed", exc_info=task.exception())

    async def run_events(self, query: GetRunEvents) -> RunEventsPage:
        run = await self.store.run(self.app.find_run, query.run_id)
        if run is not None and run.deleted:
            return RunEventsPage(
                problem=Problem(status=404, title="run not found", detail="the run was deleted")
            )
        events, has_more = await self.store.run(
            lambda: self.app.run_events(
                query.run_id, after_seq=query.after_seq, types=query.types, limit=query.limit
            )
        )
        return RunEventsPage(events=events, has_more=has_more)

    async def close_interrupted_runs(self) -> None:
        """Carry on the runs a previous process left mid-pipeline.

        A run resumes where its log ends: its interrupted phase runs again (for
        Materialize, only the tasks and trials without a result), and the phases
        before it are rebuilt from their artifacts. A run parked for a person
        stays parked. A run caught mid-halt is closed; its log says what happened.
        """
        for run_id in await self.store.run(self.app.unfinished_run_ids):
            run = await self.store.run(self.app.get_run, run_id)
            if run.waiting:
                continue
            if not run.plan and not run.halted and not run.deleted:
                self._spawn(run)  # launched, but the pipeline never began
                continue
            if resumable(run):
                log.warning("resuming run %s in %s", run_id, run.current_phase)
                self._spawn(run, resume=True)
                continue
            if run.current_phase:
                run.fail_phase(
                    phase=run.current_phase,
                    error_type="interrupted",
                    detail="the orchestrator stopped while this phase ran",
                    stack_trace=None,
                )
            run.finish(
                status="error",
                duration_ms=0,
                summary={},
                error_type="interrupted",
                detail="the orchestrator restarted before this run finished",
                fingerprint=run.fingerprint(),
            )
            await self.store.run(self.app.save, run)
            log.warning("closed interrupted run %s", run_id)
        self.relay.wake()


def resumable(run: Run) -> bool:
    """Whether the run can carry on: not being halted, and its plan on record."""
    return not run.halted and bool(run.plan) and not run.deleted
