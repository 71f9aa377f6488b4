"""Live ceilings: cost and time checked every couple of seconds while a run works.

Levels and quantities as the launch declares them (dollars and seconds):

* ``run.cost`` / ``run.duration``, and ``phase`` / ``phase:<name>`` with the
  same quantities, halt the run with ``limit_exceeded:<level>.<quantity>``;
* ``task.duration`` and ``attempt.duration`` bound each task trial in the
  sandbox; a trial that overruns fails alone (``err``), the run goes on;
* ``task.attempts`` is honoured by construction: a trial is never retried;
* ``run.tasks`` caps the sample up front (applied at launch, not here).

Cost is what billing has recorded for the run (model, sandbox) plus the
Driver's own spend, so a ceiling trips at or just after the figure, never
before it.
"""

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from benchwright_shared.bus import ask
from benchwright_shared.contracts import GetRunCost, RunCost
from benchwright_shared.contracts.billing import BalanceView, ReadBalance

if TYPE_CHECKING:
    from benchwright_orchestrator.pipeline import RunPipeline

log = logging.getLogger(__name__)


class LimitWatch:
    def __init__(self, pipeline: "RunPipeline") -> None:
        self.pipeline = pipeline
        self.limits = pipeline.run.limits or {}
        self._task: asyncio.Task[None] | None = None
        self._started = time.monotonic()
        self._phase: str | None = None
        self._phase_started = time.monotonic()
        self._phase_cost_base = 0.0
        self._last_cost = 0.0

    # -- lifecycle ------------------------------------------------------------------
    def start(self) -> None:
        if self._task is None and self._watched():
            self._task = asyncio.create_task(
                self._loop(), name=f"limits-{self.pipeline.run.run_id}"
            )

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def phase_started(self, phase: str) -> None:
        self._phase = phase
        self._phase_started = time.monotonic()
        self._phase_cost_base = self._last_cost

    def task_timeout_s(self) -> float:
        """The per-trial wall clock in the sandbox: the narrowest ceiling that applies."""
        ceilings = [self.pipeline.settings.task_timeout_s]
        for level in ("task", "attempt"):
            value = self.limits.get(level, {}).get("duration")
            if value:
                ceilings.append(float(value))
        return min(ceilings)

    # -- checking -------------------------------------------------------------------
    def _watched(self) -> bool:
        if self.pipeline.settings.billing_enforce:
            return True  # the account's balance and monthly cap are watched too
        return any(
            q in ("cost", "duration")
            for level, quantities in self.limits.items()
            if level == "run" or level.startswith("phase")
            for q in quantities
        )

    async def _loop(self) -> None:
        interval = self.pipeline.settings.limit_check_interval_s
        while True:
            await asyncio.sleep(interval)
            try:
                breach = await self.check()
                stop = await self.account_stop() if breach is None else None
            except Exception:  # billing is slow or down: check again next tick
                log.debug("limit check failed", exc_info=True)
                continue
            if breach is not None:
                self.pipeline.request_halt(f"limit_exceeded:{breach}")
                return
            if stop is not None:
                self.pipeline.request_halt(stop)
                return

    async def account_stop(self) -> str | None:
        """``balance_exhausted`` or ``monthly_cap_reached`` when billing is enforced."""
        if not self.pipeline.settings.billing_enforce:
            return None
        view = await ask(
            self.pipeline.work.broker,
            ReadBalance(account=self.pipeline.run.account),
            BalanceView,
            timeout=2.0,
        )
        return view.stop_reason

    async def check(self) -> str | None:
        """The first ceiling breached, as ``<level>.<quantity>``, or None."""
        now = time.monotonic()
        wants_cost = any("cost" in q for q in self.limits.values())
        cost = await self._cost() if wants_cost else 0.0
        phase_levels = ("phase", f"phase:{self._phase}") if self._phase else ()
        for level, quantities in self.limits.items():
            for quantity, ceiling in quantities.items():
                if level == "run":
                    spent = {"cost": cost, "duration": now - self._started}.get(quantity)
                elif level in phase_levels:
                    spent = {
                        "cost": cost - self._phase_cost_base,
                        "duration": now - self._phase_started,
                    }.get(quantity)
                else:
                    continue
                if spent is not None and spent >= float(ceiling):
                    return f"{level}.{quantity}"
        return None

    async def _cost(self) -> float:
        """Dollars spent so far: billing's record of the run plus the Driver's own calls."""
        recorded = await ask(
            self.pipeline.work.broker,
            GetRunCost(run_id=self.pipeline.run.run_id),
            RunCost,
            timeout=2.0,
        )
        micros = (
            recorded.model_micros
            + recorded.sandbox_micros
            + recorded.driver_micros
            + self.pipeline.unreported_driver_micros()
        )
        self._last_cost = micros / 1e6
        return self._last_cost
