"""The pipeline that drives one run through its phases.

Which phases run is decided once, from the launch (``plan.plan_phases``). Each
phase is bracketed by ``PhaseStarted`` and ``PhaseCompleted``/``PhaseFailed``;
work other services own (sandboxes, the model proxy) is asked for with a
command and awaited as the reply event. The run's state between phases lives
in its log, so a pipeline can start in the middle: on resume, on replay, on a
fork, or after a person answered a review.
"""

import asyncio
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from faststream.nats import NatsBroker

from benchwright_orchestrator.application import RunsApplication
from benchwright_orchestrator.cache import (
    CACHEABLE_PHASES,
    CELL_EVENTS,
    phase_fingerprint,
    phase_inputs,
)
from benchwright_orchestrator.domain import Run, summarize
from benchwright_orchestrator.driver.base import Driver, DriverUsage, RequestReview, RestartPhase
from benchwright_orchestrator.limits import LimitWatch
from benchwright_orchestrator.phases import Phases
from benchwright_orchestrator.plan import is_resumable_halt, plan_phases
from benchwright_orchestrator.replies import Replies
from benchwright_orchestrator.workspace import PhaseError, Workspace
from benchwright_shared.bus import publish_event
from benchwright_shared.contracts import DriverUsageRecorded
from benchwright_shared.relay import Relay
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore

__all__ = ["PhaseError", "PipelineDeps", "RunPipeline"]


# (phase, fingerprint, account) -> the run that recorded that cell, if any.
CellLookup = Callable[[str, str, str], Awaitable[str | None]]


@dataclass
class PipelineDeps:
    app: RunsApplication
    store: BlockingStore
    relay: Relay
    broker: NatsBroker
    replies: Replies
    settings: Settings
    find_cell: CellLookup | None = None


class _Parked(Exception):
    """The run waits for a person; the pipeline stops without finishing it."""


class RunPipeline(Phases):
    """Drives one run; the only writer of its aggregate while it runs."""

    def __init__(self, deps: PipelineDeps, run: Run, driver: Driver) -> None:
        self.deps = deps
        self.settings = deps.settings
        self.run = run
        self.driver = driver
        self.work = Workspace(run=run, broker=deps.broker, replies=deps.replies)
        self.halt_reason: str | None = None
        # Set once the run waits for a person: this pipeline is only releasing now.
        self.parked = False
        self._phases: asyncio.Task[None] | None = None
        self.outcomes: dict[int, tuple[str, int]] = {}
        self.trials: dict[int, dict[int, tuple[float | None, dict[str, Any], int]]] = {}
        self.limits = LimitWatch(self)
        self._reported = DriverUsage()

    def request_halt(self, halt_reason: str) -> None:
        """Stop at once: the running phase is interrupted, then the run is torn down."""
        if self.halt_reason is None:
            self.halt_reason = halt_reason
        if self._phases is not None:
            self._phases.cancel()

    async def save(self) -> None:
        await self.deps.store.run(self.deps.app.save, self.run)
        self.deps.relay.wake()

    async def _from_cache(self, phase: str) -> bool:
        """Fingerprint a cacheable phase; copy a matching cell's work instead of doing it."""
        if phase not in CACHEABLE_PHASES:
            return False
        fingerprint = phase_fingerprint(
            phase_inputs(phase, self.run, self.driver.name, self.driver.model)
        )
        lookup = self.deps.find_cell
        source = await lookup(phase, fingerprint, self.run.account) if lookup else None
        if source == self.run.run_id:
            source = None
        if source is not None:
            copied = await self.deps.store.run(
                self.deps.app.copy_cell, self.run, source, phase, CELL_EVENTS[phase]
            )
            if not copied:
                source = None  # the cell's run is gone: do the work
        self.run.phase_fingerprint(
            phase=phase, fingerprint=fingerprint, cache_hit=source is not None, source_run_id=source
        )
        if source is not None:
            self.run.agent_text(
                phase=phase, text=f"cache hit: {phase} reused from run {source} ({fingerprint})"
            )
            await self.save()
        return source is not None

    def unreported_driver_micros(self) -> int:
        return self.driver.usage().cost_micros - self._reported.cost_micros

    async def report_driver_usage(self) -> None:
        """Tell billing what the Driver spent since the last report (after each phase)."""
        now = self.driver.usage()
        if now.calls == self._reported.calls:
            return
        delta = DriverUsageRecorded(
            usage_id=f"{self.run.run_id}:driver:{now.calls}",
            run_id=self.run.run_id,
            account=self.run.account,
            model_id=self.driver.model or self.driver.name,
            calls=now.calls - self._reported.calls,
            prompt_tokens=now.prompt_tokens - self._reported.prompt_tokens,
            completion_tokens=now.completion_tokens - self._reported.completion_tokens,
            cost_micros=now.cost_micros - self._reported.cost_micros,
            recorded_at=datetime.now(UTC),
        )
        try:
            await publish_event(self.deps.broker, delta, msg_id=f"driver-usage:{delta.usage_id}")
        except Exception:
            return  # reported with the next phase's figures
        self._reported = DriverUsage(**vars(now))

    async def inherit_scorer(self) -> None:
        await self.deps.store.run(self.deps.app.inherit_scorer, self.run)

    # -- the run --------------------------------------------------------------------
    async def execute(self, *, resume: bool = False) -> None:
        """Drive the run to its end (or until it parks, waiting for a person).

        With ``resume``, carry on where its log stops: the interrupted phase
        runs again, or, for Materialize, only its unfinished tasks do.
        """
        started = time.monotonic()
        if resume:
            resumed_phase = self.run.current_phase
            self._restore_results()
            self.run.resume(reason="the orchestrator restarted")
            for sandbox_id in list(self.run.open_sandboxes):
                await self.work.kill_sandbox(sandbox_id, reason="stale_after_restart")
            remaining = self._remaining(resumed_phase)
        else:
            resumed_phase = None
            remaining = plan_phases(
                self.run.mode,
                has_impl=bool(self.run.impl_id or self.run.scorer),
                from_phase=(self.run.fork or {}).get("from_phase"),
                new_snapshot=self.run.on_new_snapshot,
            )
            self.run.start_pipeline(remaining)
            self.run.driver_selected(
                driver=self.driver.name, model=self.driver.model, note=self.driver.note
            )
        await self.save()
        error: PhaseError | None = None
        self.limits.start()
        self._phases = asyncio.create_task(self._run_phases(remaining, resumed_phase))
        try:
            await self._phases
        except _Parked:
            self.parked = True
        except PhaseError as exc:
            error = exc
        except asyncio.CancelledError:
            if self.halt_reason is None:
                raise  # the process is stopping: the run resumes on restart
            if is_resumable_halt(self.halt_reason):
                # A pause keeps the phase open: resuming carries it on, not over.
                self.parked = True
                self.run.halt(self.halt_reason)
            else:
                error = PhaseError("halted", self.halt_reason)
                await self._record_halt(self.halt_reason)
        finally:
            self.limits.stop()
            await self.work.release()
        if self.parked:
            await self.save()  # what the release recorded; the run waits, unfinished
            return
        self.run.finish(
            status="error" if error else "ok",
            duration_ms=int((time.monotonic() - started) * 1000),
            summary=summarize(list(self.outcomes.values())),
            error_type=error.error_type if error else None,
            detail=error.detail if error else None,
            fingerprint=self.run.fingerprint(),
        )
        await self.save()

    def _remaining(self, phase: str | None) -> list[str]:
        """The planned phases not yet completed, from the interrupted one on."""
        plan = self.run.plan
        if phase in plan:
            return plan[plan.index(phase) :]
        done = set(self.run.completed_phases)
        return [p for p in plan if p not in done]

    async def _run_phases(self, phases: list[str], resumed_phase: str | None) -> None:
        for phase in phases:
            while True:
                if self.halt_reason is not None:
                    raise asyncio.CancelledError
                try:
                    await self._phase(
                        phase, getattr(self, f"_{phase}"), already_started=phase == resumed_phase
                    )
                    break
                except RestartPhase as restart:
                    resumed_phase = None
                    if not self.run.restart_phase(phase, restart.reason):
                        await self._park(phase, f"restart_cap_exceeded: {restart.reason}")
                    await self.save()
                except RequestReview as review:
                    await self._park(phase, f"agent_review: {review.reason}")

    async def _park(self, phase: str, halt_reason: str) -> None:
        """Close the phase and wait for a person; answering the review runs it again."""
        self.run.fail_phase(
            phase=phase,
            error_type=halt_reason.split(":", 1)[0],
            detail=halt_reason,
            stack_trace=None,
        )
        self.run.halt(halt_reason)
        await self.save()
        raise _Parked

    def _restore_results(self) -> None:
        """The sweep's results so far, from the log: they are never asked for again."""
        for index, trials in self.run.trial_results.items():
            self.trials[int(index)] = {int(t): (v[0], v[1], int(v[2])) for t, v in trials.items()}
        for index, outcome in self.run.aggregated.items():
            durations = [int(v[2]) for v in self.run.trial_results.get(index, {}).values()]
            self.outcomes[int(index)] = (outcome, max(durations, default=0))

    async def _record_halt(self, halt_reason: str) -> None:
        if self.run.current_phase:
            self.run.fail_phase(
                phase=self.run.current_phase,
                error_type="halted",
                detail=halt_reason,
                stack_trace=None,
            )
        self.run.halt(halt_reason)
        await self.save()

    async def _phase(
        self, phase: str, work: Callable[[], Awaitable[None]], *, already_started: bool = False
    ) -> None:
        if not already_started:
            self.run.start_phase(phase)
            await self.save()
        self.limits.phase_started(phase)
        started = time.monotonic()
        try:
            if await self._from_cache(phase):
                self.after_cache_hit(phase)
            else:
                await work()
        except (RestartPhase, RequestReview):
            raise
        except Exception as exc:
            error = (
                exc
                if isinstance(exc, PhaseError)
                else PhaseError(
                    getattr(exc, "error_type", type(exc).__name__), getattr(exc, "detail", str(exc))
                )
            )
            self.run.fail_phase(
                phase=phase,
                error_type=error.error_type,
                detail=error.detail,
                stack_trace="".join(traceback.format_exception(exc))[-8000:],
            )
            await self.save()
            raise error from exc
        finally:
            await self.report_driver_usage()
        self.run.complete_phase(phase=phase, duration_ms=int((time.monotonic() - started) * 1000))
        await self.save()
