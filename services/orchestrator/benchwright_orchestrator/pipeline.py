"""The pipeline that drives one run through its phases.

Which phases run is decided once, from the launch (``plan.plan_phases``); what
each does is a function in ``phases/``. Each phase is bracketed here by
``PhaseStarted`` and ``PhaseCompleted``/``PhaseFailed``, after a look in the
phase cache; halts, pauses and reviews end or park the run here. The run's state
between phases lives in its log, so a pipeline can start in the middle: on
resume, on replay, on a fork, or after a person answered a review.
"""

import asyncio
import sys
import time
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime

from benchwright_orchestrator.cache import (
    CELL_EVENTS,
    cacheable,
    phase_fingerprint,
    phase_inputs,
)
from benchwright_orchestrator.domain import Run
from benchwright_orchestrator.driver.base import Driver, DriverUsage, RequestReview, RestartPhase
from benchwright_orchestrator.limits import LimitWatch, task_timeout_s
from benchwright_orchestrator.phases import PHASES, PhaseContext, after_cache_hit
from benchwright_orchestrator.plan import is_resumable_halt, plan_phases
from benchwright_orchestrator.ports import (
    InfraError,
    PhaseError,
    Platform,
    RunStore,
    RunSuperseded,
    Workspace,
)
from benchwright_shared.contracts import DriverUsageRecorded
from benchwright_shared.settings import Settings

__all__ = ["PhaseError", "PipelineDeps", "RunPipeline"]

# A phase the platform failed (a lost sandbox, say) runs again this many times.
MAX_INFRA_RETRIES = 3


@dataclass
class PipelineDeps:
    store: RunStore
    platform: Platform
    settings: Settings


class _Parked(Exception):
    """The run waits for a person; the pipeline stops without finishing it."""


class RunPipeline:
    """Drives one run; the only writer of its aggregate while it runs."""

    def __init__(self, deps: PipelineDeps, run: Run, driver: Driver, work: Workspace) -> None:
        self.deps = deps
        self.run = run
        self.driver = driver
        self.work = work
        self.ctx = PhaseContext(
            run=run,
            work=work,
            driver=driver,
            settings=deps.settings,
            store=deps.store,
            task_timeout_s=task_timeout_s(run.limits or {}, deps.settings.task_timeout_s),
        )
        self.halt_reason: str | None = None
        # Set once the run waits for a person: this pipeline is only releasing now.
        self.parked = False
        # Set when another copy took the run over: this pipeline stopped, touching nothing.
        self.superseded = False
        self._phases: asyncio.Task[None] | None = None
        self.limits = LimitWatch(
            run.limits or {},
            interval_s=deps.settings.limit_check_interval_s,
            spent=self._spent,
            on_breach=self.request_halt,
            account_stop=self._account_stop if deps.settings.billing_enforce else None,
            name=f"limits-{run.run_id}",
        )
        self._reported = DriverUsage()

    def request_halt(self, halt_reason: str) -> None:
        """Stop at once: the running phase is interrupted, then the run is torn down."""
        if self.halt_reason is None:
            self.halt_reason = halt_reason
        if self._phases is not None:
            self._phases.cancel()

    async def save(self) -> None:
        await self.deps.store.save(self.run)

    # -- what the limit watch asks ----------------------------------------------------
    async def _spent(self) -> float:
        """Dollars so far: billing's record of the run plus the Driver's unreported calls."""
        recorded = await self.deps.platform.run_cost(self.run.run_id)
        unreported = self.driver.usage().cost_micros - self._reported.cost_micros
        # ``cost.incurred`` (concepts §9): what the run's ceiling compares; a linger
        # comes after the run and is in no total.
        micros = (
            recorded.model_micros
            + recorded.judge_micros
            + recorded.sandbox_micros
            + recorded.driver_micros
            + recorded.narration_micros
            + unreported
        )
        return micros / 1e6

    async def _account_stop(self) -> str | None:
        return await self.deps.platform.account_stop(self.run.account)

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
            await self.deps.platform.report_driver_usage(delta)
        except Exception:
            return  # reported with the next phase's figures
        self._reported = DriverUsage(**vars(now))

    # -- the phase cache --------------------------------------------------------------
    async def _from_cache(self, phase: str) -> bool:
        """Fingerprint a cacheable phase; copy a matching cell's work instead of doing it."""
        run = self.run
        if not cacheable(phase, run):
            return False
        fingerprint = phase_fingerprint(
            phase_inputs(
                phase, run, self.driver.name, self.driver.phase_models.get(phase, self.driver.model)
            )
        )
        source = await self.deps.platform.find_cell(phase, fingerprint, run.account)
        if source == run.run_id:
            source = None
        if source is not None and not await self.deps.store.copy_cell(
            run, source, phase, CELL_EVENTS[phase]
        ):
            source = None  # the cell's run is gone: do the work
        run.phase_fingerprint(
            phase=phase, fingerprint=fingerprint, cache_hit=source is not None, source_run_id=source
        )
        if source is not None:
            run.agent_text(
                phase=phase, text=f"cache hit: {phase} reused from run {source} ({fingerprint})"
            )
            await self.save()
            live = self.work.sandbox_id
            if live is not None and phase in run.artifacts.snapshots:
                # The live work sandbox was made before this phase (an earlier phase
                # missed the cache); the phase's work is in the snapshot just inherited,
                # not in it. The next use restores that snapshot instead.
                await self.work.lose_sandbox(live, f"superseded by the {phase} cache hit")
                await self.save()
        return source is not None

    # -- the run --------------------------------------------------------------------
    async def execute(
        self, *, resume: bool = False, reason: str = "the orchestrator restarted"
    ) -> None:
        """Drive the run to its end (or until it parks, waiting for a person).

        With ``resume``, carry on where its log stops: the interrupted phase
        runs again, or, for Materialize, only its unfinished tasks do.
        """
        started = time.monotonic()
        run = self.run
        if resume:
            resumed_phase = run.progress.current_phase
            run.resume(reason=reason)
            for sandbox_id in list(run.open_sandboxes):
                await self.work.lose_sandbox(sandbox_id, "stale_after_restart")
            remaining = run.progress.remaining(resumed_phase)
        else:
            resumed_phase = None
            remaining = plan_phases(
                run.mode,
                has_impl=bool(run.impl_id or run.scorer),
                from_phase=(run.fork or {}).get("from_phase"),
                new_snapshot=run.on_new_snapshot,
                harness=run.harness_name,
            )
            run.start_pipeline(remaining)
            run.driver_selected(
                driver=self.driver.name,
                model=self.driver.model,
                note=self.driver.note,
                phase_models=dict(self.driver.phase_models) or None,
            )
        try:
            await self.save()
            await self._drive(remaining, resumed_phase, started)
        except RunSuperseded:
            self.superseded = True
            self.limits.stop()

    async def _drive(self, remaining: list[str], resumed_phase: str | None, started: float) -> None:
        run = self.run
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
                run.halt(self.halt_reason)
            else:
                error = PhaseError("halted", self.halt_reason)
                await self._record_halt(self.halt_reason)
        finally:
            self.limits.stop()
            # Whatever happened, the sandboxes and the model key go: unless another copy
            # drives the run now, and they are its.
            if not isinstance(sys.exc_info()[1], RunSuperseded):
                await self.work.release()
        if self.parked:
            await self.save()  # what the release recorded; the run waits, unfinished
            return
        run.finish(
            status="error" if error else "ok",
            duration_ms=int((time.monotonic() - started) * 1000),
            summary=run.summary(),
            error_type=error.error_type if error else None,
            detail=error.detail if error else None,
            fingerprint=run.fingerprint(),
        )
        await self.save()

    async def _run_phases(self, phases: list[str], resumed_phase: str | None) -> None:
        for phase in phases:
            while True:
                if self.halt_reason is not None:
                    raise asyncio.CancelledError
                try:
                    await self._phase(phase, already_started=phase == resumed_phase)
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

    async def _record_halt(self, halt_reason: str) -> None:
        if self.run.progress.current_phase:
            self.run.fail_phase(
                phase=self.run.progress.current_phase,
                error_type="halted",
                detail=halt_reason,
                stack_trace=None,
            )
        self.run.halt(halt_reason)
        await self.save()

    async def _work(self, phase: str) -> None:
        """The phase's own work, run again when the platform (not the run) failed it."""
        for attempt in range(1, MAX_INFRA_RETRIES + 2):
            try:
                await PHASES[phase](self.ctx)
                return
            except InfraError as exc:
                if attempt > MAX_INFRA_RETRIES:
                    raise
                sandbox_id = getattr(exc, "sandbox_id", None)
                if sandbox_id:
                    await self.work.lose_sandbox(sandbox_id, exc.detail)
                self.run.agent_text(
                    phase=phase,
                    text=f"{exc.error_type}: {exc.detail}; running {phase} again ({attempt})",
                )
                await self.save()

    async def _phase(self, phase: str, *, already_started: bool = False) -> None:
        if not already_started:
            self.run.start_phase(phase)
            await self.save()
        self.limits.phase_started(phase)
        started = time.monotonic()
        try:
            if await self._from_cache(phase):
                after_cache_hit(self.ctx, phase)
            else:
                await self._work(phase)
        except (RestartPhase, RequestReview, RunSuperseded):
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
