"""Live ceilings: cost and time checked every couple of seconds while a run works.

Levels and quantities as the launch declares them (dollars and seconds):

* ``run.cost`` / ``run.duration``, and ``phase`` / ``phase:<name>`` with the
  same quantities, halt the run with ``limit_exceeded:<level>.<quantity>``;
* ``task.duration`` and ``attempt.duration`` bound each task trial in the
  sandbox; a trial that overruns fails alone (``err``), the run goes on;
* ``task.attempts`` is honoured by construction: a trial that produced a result
  is never run again (only one the platform lost before it reported is);
* ``run.tasks`` caps the sample up front (applied at launch, not here).

Cost is what billing has recorded for the run (model, sandbox) plus the
Driver's own spend (the pipeline says how much), so a ceiling trips at or just
after the figure, never before it.
"""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

# Dollars the run has spent so far; ``None`` when the answer is not to be had now.
SpentSoFar = Callable[[], Awaitable[float]]
# ``balance_exhausted`` / ``monthly_cap_reached`` when the account must stop, else None.
AccountStop = Callable[[], Awaitable[str | None]]


def task_timeout_s(limits: dict[str, dict[str, float]], default_s: float) -> float:
    """The per-trial wall clock in the sandbox: the narrowest ceiling that applies."""
    ceilings = [default_s]
    for level in ("task", "attempt"):
        value = limits.get(level, {}).get("duration")
        if value:
            ceilings.append(float(value))
    return min(ceilings)


class LimitWatch:
    """Checks the run's ceilings every ``interval_s`` and calls ``on_breach`` once.

    It is told what it needs (how much was spent, whether the account must stop)
    and whom to tell; it never holds the pipeline.
    """

    def __init__(
        self,
        limits: dict[str, Any],
        *,
        interval_s: float,
        spent: SpentSoFar,
        on_breach: Callable[[str], None],
        account_stop: AccountStop | None = None,
        name: str = "limits",
    ) -> None:
        self.limits = limits or {}
        self.interval_s = interval_s
        self._spent = spent
        self._on_breach = on_breach
        self._account_stop = account_stop
        self._name = name
        self._task: asyncio.Task[None] | None = None
        self._started = time.monotonic()
        self._phase: str | None = None
        self._phase_started = time.monotonic()
        self._phase_cost_base = 0.0
        self._last_cost = 0.0

    # -- lifecycle ------------------------------------------------------------------
    def start(self) -> None:
        if self._task is None and self._watched():
            self._task = asyncio.create_task(self._loop(), name=self._name)

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def phase_started(self, phase: str) -> None:
        self._phase = phase
        self._phase_started = time.monotonic()
        self._phase_cost_base = self._last_cost

    # -- checking -------------------------------------------------------------------
    def _watched(self) -> bool:
        if self._account_stop is not None:
            return True  # the account's balance and monthly cap are watched too
        return any(
            q in ("cost", "duration")
            for level, quantities in self.limits.items()
            if level == "run" or level.startswith("phase")
            for q in quantities
        )

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                breach = await self.check()
                if breach is not None:
                    reason: str | None = f"limit_exceeded:{breach}"
                elif self._account_stop is not None:
                    reason = await self._account_stop()
                else:
                    reason = None
            except Exception:  # billing is slow or down: check again next tick
                log.debug("limit check failed", exc_info=True)
                continue
            if reason is not None:
                self._on_breach(reason)
                return

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
        self._last_cost = await self._spent()
        return self._last_cost
