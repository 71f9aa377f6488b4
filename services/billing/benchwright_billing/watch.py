"""Watching accounts' money: alerts fire and auto-refills charge as spend lands.

The ledger tells the watch which accounts a batch of cost lines touched; every
``watch_interval_s`` those are checked (``BillingApplication.check``: threshold
alerts, a refill asked for), and a refill asked for is charged through the
payment provider and its answer recorded. Every ``sweep_interval_s`` each
account with spend is checked too, so nothing waits on a restart. The
aggregate decides and remembers (each alert once, one refill at a time, its id
the provider's idempotency key); this loop only carries the money across.
"""

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from eventsourcing.persistence import RecordConflictError

from benchwright_billing.application import BillingApplication, month_start
from benchwright_billing.ports import PaymentError, PaymentProvider
from benchwright_billing.projections import account_days, account_runs, accounts
from benchwright_shared.projection_runner import ProjectionHost
from benchwright_shared.store import BlockingStore

log = logging.getLogger(__name__)


class AccountWatch:
    """Checks the accounts whose spend moved; told of them by the ledger (any thread)."""

    def __init__(
        self,
        app: BillingApplication,
        store: BlockingStore,
        views: ProjectionHost,
        payments: PaymentProvider | None,
        *,
        interval_s: float,
        sweep_interval_s: float,
        on_saved: Callable[[], None] | None = None,
    ) -> None:
        self.app = app
        self.store = store
        self.views = views
        self.payments = payments
        self.interval_s = interval_s
        self.sweep_interval_s = sweep_interval_s
        # Told after a check saved something (the relay publishes alerts).
        self.on_saved = on_saved
        self._touched: set[str] = set()
        self._lock = threading.Lock()  # the ledger touches from the views' thread
        self._task: asyncio.Task[None] | None = None

    def touch(self, account: str) -> None:
        """``account``'s spend or controls changed: look at it soon (thread-safe)."""
        with self._lock:
            self._touched.add(account)

    def _take_touched(self) -> set[str]:
        with self._lock:
            due, self._touched = self._touched, set()
        return due

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="billing-watch")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        next_sweep = loop.time()  # at start: whatever happened while we were away
        while True:
            due = self._take_touched()
            if loop.time() >= next_sweep:
                try:
                    due |= set(await self.views.read(accounts))
                except Exception:
                    log.warning("billing watch: could not list accounts", exc_info=True)
                next_sweep = loop.time() + self.sweep_interval_s
            for account in sorted(due):
                try:
                    await self.check(account)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.warning("billing watch: checking %s failed", account, exc_info=True)
                    self.touch(account)  # next time
            await asyncio.sleep(self.interval_s)

    async def check(self, account: str, now: datetime | None = None) -> None:
        """Alerts for ``account``'s spend, and its refill charged, if it needs one."""
        if not await self.store.run(self.app.watched, account):
            return
        now = now or datetime.now(UTC)
        runs, month = await self._spend(account, now)
        for _ in range(3):
            try:
                refill = await self.store.run(self.app.check, account, runs, month, now)
                break
            except RecordConflictError:
                continue  # another copy saved first: look again at what it saved
        else:
            return
        self._saved()
        if refill is None or self.payments is None:
            return
        try:
            charge = await self.payments.charge(
                account=account,
                amount_cents=int(refill["amount_cents"]),
                idempotency_key=str(refill["refill_id"]),
            )
        except PaymentError as exc:
            log.warning("auto-refill %s: the provider did not answer: %s", refill["refill_id"], exc)
            self.touch(account)  # the same refill, the same key, next time
            return
        runs, month = await self._spend(account, now)
        await self.store.run(
            self.app.settle_refill, account, str(refill["refill_id"]), charge, runs, month, now
        )
        self._saved()

    async def _spend(
        self, account: str, now: datetime
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        runs = await self.views.read(lambda cur: account_runs(cur, account))
        month = await self.views.read(lambda cur: account_days(cur, account, month_start(now)))
        return runs, month

    def _saved(self) -> None:
        if self.on_saved is not None:
            self.on_saved()
