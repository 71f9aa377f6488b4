"""Owns the pipelines this orchestrator copy drives, and decides which runs those are.

A run is driven by exactly one copy at a time: the holder of its lease
(``run.<id>`` in the ``bw-leases`` bucket, decision 0025). The copy that takes
a ``LaunchRun`` claims the lease before it creates the run; a finished run's
lease is released; a parked run's is kept by whoever parked it. Every couple
of seconds each copy looks for unfinished runs whose holder is dead (or that
nobody holds) and takes them over: the run resumes from its log. Commands
about a run that another live copy drives are forwarded to that copy's own
subject, so that every write to a running run goes through the one aggregate
instance its pipeline holds.
"""

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from faststream.nats import NatsBroker

from benchwright_orchestrator.adapters.platform import NatsPlatform
from benchwright_orchestrator.adapters.replies import Replies
from benchwright_orchestrator.adapters.store import StoredRuns
from benchwright_orchestrator.adapters.workspace import NatsWorkspace
from benchwright_orchestrator.application import RunsApplication, UnfinishedRuns
from benchwright_orchestrator.domain import Run, RunError, RunNotPublishableError
from benchwright_orchestrator.driver.select import select_driver
from benchwright_orchestrator.pipeline import PipelineDeps, RunPipeline
from benchwright_orchestrator.plan import resolve_backend
from benchwright_orchestrator.ports import RunSuperseded
from benchwright_shared import subjects
from benchwright_shared.bus import jetstream, send_command
from benchwright_shared.contracts import (
    DeleteRun,
    GetRunEvents,
    HaltRun,
    LabelTask,
    LaunchRun,
    ResolveRunHalt,
    RunEventsPage,
    UpdateRun,
)
from benchwright_shared.leases import Leases
from benchwright_shared.liveness import Membership
from benchwright_shared.refusal import Refused
from benchwright_shared.relay import Relay
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore

log = logging.getLogger(__name__)

# How often a copy looks for runs nobody (alive) drives.
WATCH_EVERY_S = 2.0

RunCommand = TypeVar("RunCommand", ResolveRunHalt, UpdateRun, DeleteRun, LabelTask)


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
        self.leases = Leases(membership, "run") if membership is not None else None
        self.settings = settings
        self.app = app
        self.store = store
        self.relay = relay
        self.replies = Replies()
        self.broker: NatsBroker | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._pipelines: dict[str, RunPipeline] = {}
        self._running: dict[str, asyncio.Task[None]] = {}
        self._unfinished = UnfinishedRuns()
        self._watcher: asyncio.Task[None] | None = None

    @property
    def copy_id(self) -> str | None:
        return self.membership.copy_id if self.membership else None

    async def start(self, broker: NatsBroker) -> None:
        self.broker = broker
        if self.leases is not None:
            await self.leases.start(jetstream(broker))
            self._watcher = asyncio.create_task(self._watch(), name="orchestrator-takeover")
        else:
            await self.take_over_orphans()  # alone: every unfinished run is ours

    async def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # -- leases -----------------------------------------------------------------------
    async def _claim(self, run_id: str) -> bool:
        """Hold the run's lease (taken from a dead holder if need be); False if a live copy does."""
        return True if self.leases is None else await self.leases.acquire(run_id)

    async def _let_go(self, run_id: str) -> None:
        if self.leases is not None:
            with contextlib.suppress(Exception):
                await self.leases.release(run_id)

    async def _live_holder(self, run_id: str) -> str | None:
        """The other live copy driving ``run_id``, if any."""
        if self.leases is None or self.membership is None:
            return None
        holder, _ = await self.leases.holder(run_id)
        if holder is None or holder == self.copy_id:
            return None
        return holder if await self.membership.alive("orchestrator", holder) else None

    # -- taking runs over -------------------------------------------------------------
    async def _watch(self) -> None:
        while True:
            try:
                await self.take_over_orphans()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("looking for orphaned runs failed", exc_info=True)
            await asyncio.sleep(WATCH_EVERY_S)

    async def take_over_orphans(self) -> int:
        """Drive the unfinished runs nobody alive drives; returns how many were taken.

        Waits until this copy can tell the living from the dead (a whole TTL of
        its own heartbeats): a copy that just started, or just reconnected, might
        otherwise take over runs whose holder is only slow to show itself.
        """
        if self.membership is not None and not self.membership.can_judge():
            return 0
        taken = 0
        for run_id in sorted(await self.store.run(self._unfinished.catch_up, self.app)):
            if run_id in self._pipelines or not await self._claim(run_id):
                continue
            run = await self.store.run(self.app.find_run, run_id)
            if run is None or run.lifecycle.finished:
                await self._let_go(run_id)
                continue
            if await self._carry_on(run):
                taken += 1
        return taken

    async def _carry_on(self, run: Run) -> bool:
        """Drive a run whose lease we hold and no pipeline here drives; True if it goes on.

        It resumes where its log ends; a run parked for a person stays parked (we
        keep holding it); a run caught mid-halt is closed.
        """
        if run.lifecycle.waiting:
            return False
        if not run.progress.plan and not run.lifecycle.halted and not run.deleted:
            self._spawn(run)  # launched, but the pipeline never began
            return True
        if resumable(run):
            log.warning("resuming run %s in %s", run.run_id, run.progress.current_phase)
            self._spawn(run, resume=True)
            return True
        if run.progress.current_phase:
            run.fail_phase(
                phase=run.progress.current_phase,
                error_type="interrupted",
                detail="the orchestrator stopped while this phase ran",
                stack_trace=None,
            )
        run.finish(
            status="error",
            duration_ms=0,
            summary=run.summary(),
            error_type="interrupted",
            detail="the orchestrator restarted before this run finished",
            fingerprint=run.fingerprint(),
        )
        await self.store.run(self.app.save, run)
        self.relay.wake()
        await self._let_go(run.run_id)
        log.warning("closed interrupted run %s", run.run_id)
        return False

    # -- launching --------------------------------------------------------------------
    async def launch(self, command: LaunchRun) -> None:
        if not await self._claim(command.run_id):
            return  # a live copy took this launch already (a redelivery)
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
        elif run.run_id not in self._pipelines:
            # Created by a copy that died before driving it, or finished already.
            if run.lifecycle.finished:
                await self._let_go(run.run_id)
            else:
                await self._carry_on(run)

    def _spawn(self, run: Run, *, resume: bool = False) -> RunPipeline:
        assert self.broker is not None
        deps = PipelineDeps(
            store=StoredRuns(self.app, self.store, self.relay),
            platform=NatsPlatform(self.broker),
            settings=self.settings,
        )
        work = NatsWorkspace(run, self.broker, self.replies, self.membership)
        pipeline = RunPipeline(
            deps, run, select_driver(run.driver, self.settings, run.phase_models), work
        )
        task = asyncio.create_task(pipeline.execute(resume=resume), name=f"run-{run.run_id}")
        self._pipelines[run.run_id] = pipeline
        self._running[run.run_id] = task
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        task.add_done_callback(lambda _: self._pipelines.pop(run.run_id, None))
        task.add_done_callback(lambda _: self._running.pop(run.run_id, None))
        task.add_done_callback(lambda t: self._after(pipeline, t))
        return pipeline

    def _after(self, pipeline: RunPipeline, task: asyncio.Task[None]) -> None:
        """A finished run's lease goes; a parked one's stays here; a superseded one is not ours."""
        if task.cancelled() or pipeline.parked or pipeline.superseded:
            return
        if pipeline.run.lifecycle.finished:
            self._background(self._let_go(pipeline.run.run_id))

    def _background(self, work: Awaitable[None]) -> None:
        async def run() -> None:
            await work

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception():
            log.error("pipeline crashed", exc_info=task.exception())

    # -- commands about one run ---------------------------------------------------------
    async def route(
        self, command: RunCommand, verb: str, handle: Callable[[RunCommand], Awaitable[None]]
    ) -> None:
        """Handle a command about a run here, or send it to the live copy that drives it."""
        holder = await self._live_holder(command.run_id)
        if holder is not None:
            assert self.broker is not None
            await send_command(
                self.broker,
                command,
                subject=subjects.orchestrator_copy_subject(holder, verb),
                msg_id=f"{command.command_id}>{holder}",
            )
            return
        if command.run_id not in self._pipelines and not await self._claim(command.run_id):
            # Claimed by a live copy between our two looks: let JetStream try again.
            raise RunError(f"run {command.run_id} changed hands; retrying")
        await handle(command)

    async def halt(self, command: HaltRun) -> None:
        """Halt the run if this copy drives it (every copy hears a halt).

        A run nobody drives (parked for a person, or between a dead copy and its
        successor) is closed by the copy that holds, or can take, its lease.
        """
        pipeline = self._pipelines.get(command.run_id)
        if pipeline is not None and not pipeline.parked:
            if pipeline.run.account == command.account:
                pipeline.request_halt(command.halt_reason)
            return
        if await self._live_holder(command.run_id) is not None:
            return  # the copy that drives it heard this halt too
        await self._settled(command.run_id)
        if not await self._claim(command.run_id):
            return
        run = await self.store.run(self.app.find_run, command.run_id)
        if run is None or run.account != command.account or run.lifecycle.finished:
            return
        if not run.lifecycle.waiting:
            # Running, but its driver is gone: resume it here and halt it at once.
            self._spawn(run, resume=True).request_halt(command.halt_reason)
            return
        run.finish(
            status="error",
            duration_ms=0,
            summary=run.summary(),
            error_type="halted",
            detail=command.halt_reason,
            fingerprint=run.fingerprint(),
        )
        await self.store.run(self.app.save, run)
        self.relay.wake()
        await self._let_go(command.run_id)

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
        """Wait (boundedly) for this copy's pipeline of ``run_id`` to end."""
        task = self._running.get(run_id)
        if task is not None:
            await asyncio.wait({task}, timeout=timeout)

    async def update(self, command: UpdateRun) -> None:
        """Change visibility or metadata, on the instance the run's pipeline holds if it runs."""
        pipeline = self._pipelines.get(command.run_id)
        run = pipeline.run if pipeline is not None else None
        if run is None:
            run = await self.store.run(self.app.find_run, command.run_id)
        if run is None or run.account != command.account or run.deleted:
            return
        try:
            run.update(command.visibility, command.metadata, by=command.account)
        except RunNotPublishableError:
            log.warning("run %s cannot be public; the update is dropped", command.run_id)
            return
        if pipeline is not None:
            await pipeline.save()
        else:
            await self.store.run(self.app.save, run)
            self.relay.wake()
            if run.lifecycle.finished:
                await self._let_go(command.run_id)

    async def label(self, command: LabelTask) -> None:
        """Record a person's grade of a task, on the instance the run's pipeline holds
        if it runs (labels usually come once it has finished)."""
        pipeline = self._pipelines.get(command.run_id)
        run = pipeline.run if pipeline is not None else None
        if run is None:
            run = await self.store.run(self.app.find_run, command.run_id)
        if run is None or run.account != command.account:
            return
        try:
            run.label(
                label_id=command.command_id,
                task_id=command.task_id,
                index=command.index,
                invocation=command.invocation,
                trial=command.trial,
                scale=command.scale,
                grade=command.grade,
                note=command.note,
                by=command.account,
            )
        except RunError as refused:
            log.warning("label %s dropped: %s", command.command_id, refused)
            return
        if pipeline is not None:
            await pipeline.save()
        else:
            await self.store.run(self.app.save, run)
            self.relay.wake()
            if run.lifecycle.finished:
                await self._let_go(command.run_id)

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
        if run.lifecycle.finished:
            await self._let_go(command.run_id)

    # -- queries ------------------------------------------------------------------------
    async def run_events(self, query: GetRunEvents) -> RunEventsPage:
        run = await self.store.run(self.app.find_run, query.run_id)
        if run is not None and run.deleted:
            deleted = Refused(404, "run not found", "the run was deleted", code="not_found")
            return RunEventsPage(problem=deleted.problem())
        events, has_more, scanned = await self.store.run(
            lambda: self.app.run_events(
                query.run_id,
                after_seq=query.after_seq,
                types=query.types,
                limit=query.limit,
                task_index=query.task_index,
            )
        )
        return RunEventsPage(events=events, has_more=has_more, scanned_seq=scanned)


def resumable(run: Run) -> bool:
    """Whether the run can carry on: not being halted, and its plan on record."""
    return not run.lifecycle.halted and bool(run.progress.plan) and not run.deleted


__all__ = ["Orchestrator", "RunSuperseded", "resumable"]
