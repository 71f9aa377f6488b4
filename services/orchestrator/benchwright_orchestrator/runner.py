"""Owns the running pipelines of this orchestrator process."""

import asyncio
import logging

from faststream.nats import NatsBroker

from benchwright_orchestrator.application import RunsApplication
from benchwright_orchestrator.domain import Run
from benchwright_orchestrator.pipeline import PipelineDeps, RunPipeline
from benchwright_orchestrator.replies import Replies
from benchwright_shared.contracts import GetRunEvents, HaltRun, LaunchRun, RunEventsPage
from benchwright_shared.relay import Relay
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore

log = logging.getLogger(__name__)


class Orchestrator:
    def __init__(
        self, settings: Settings, app: RunsApplication, store: BlockingStore, relay: Relay
    ) -> None:
        self.settings = settings
        self.app = app
        self.store = store
        self.relay = relay
        self.replies = Replies()
        self.broker: NatsBroker | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._pipelines: dict[str, RunPipeline] = {}

    async def start(self, broker: NatsBroker) -> None:
        self.broker = broker
        await self.close_interrupted_runs()

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def launch(self, command: LaunchRun) -> None:
        run, created = await self.store.run(self.app.launch, command)
        self.relay.wake()
        if created:
            self._spawn(run)

    def _spawn(self, run: Run, *, resume: bool = False) -> None:
        assert self.broker is not None
        deps = PipelineDeps(
            app=self.app,
            store=self.store,
            relay=self.relay,
            broker=self.broker,
            replies=self.replies,
            settings=self.settings,
        )
        pipeline = RunPipeline(deps, run)
        task = asyncio.create_task(pipeline.execute(resume=resume), name=f"run-{run.run_id}")
        self._pipelines[run.run_id] = pipeline
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        task.add_done_callback(lambda _: self._pipelines.pop(run.run_id, None))

    def halt(self, command: HaltRun) -> None:
        """Halt the run if this process drives it; another process may."""
        pipeline = self._pipelines.get(command.run_id)
        if pipeline is not None and pipeline.run.account == command.account:
            pipeline.request_halt(command.halt_reason)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception():
            log.error("pipeline crashed", exc_info=task.exception())

    async def run_events(self, query: GetRunEvents) -> RunEventsPage:
        events, has_more = await self.store.run(
            lambda: self.app.run_events(
                query.run_id, after_seq=query.after_seq, types=query.types, limit=query.limit
            )
        )
        return RunEventsPage(events=events, has_more=has_more)

    async def close_interrupted_runs(self) -> None:
        """Carry on the runs a previous process left mid-pipeline, or close them.

        A run interrupted in Materialize or Report resumes where its log ends:
        finished tasks and trials are never sent to the model again. A run
        interrupted earlier is closed as ``error: interrupted``; its log stays
        intact and says what happened.
        """
        for run_id in await self.store.run(self.app.unfinished_run_ids):
            run = await self.store.run(self.app.get_run, run_id)
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
    """Whether everything before the interrupted phase is on record."""
    if run.halted or run.current_phase not in ("materialize", "report"):
        return False
    return {"fetch", "setup", "attach"} <= set(run.completed_phases)
