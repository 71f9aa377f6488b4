"""Refused requests, counted in memory and written to the vault in batches.

A scorer looping on a blocked host makes thousands of requests a second; the
blocked-host log gets one call per account every ``interval`` with the sums.
"""

import asyncio
import contextlib
import logging
from collections import Counter

from benchwright_proxy.injector.ports import RecordRefusals

log = logging.getLogger(__name__)

# Distinct (run, host) pairs kept between flushes: a scorer spraying random
# host names cannot grow this without bound. Past the cap, refusals still
# happen; only their counting is dropped (and said so in the log).
MAX_PENDING = 10_000

type Refusals = dict[tuple[str | None, str], int]


class RefusalBatcher:
    def __init__(
        self, record: RecordRefusals, interval: float = 0.5, max_pending: int = MAX_PENDING
    ) -> None:
        self._record = record
        self.interval = interval
        self._max_pending = max_pending
        self._pending: dict[str, Counter[tuple[str | None, str]]] = {}
        self._size = 0
        self._dropped = 0
        self._task: asyncio.Task[None] | None = None

    def add(self, account: str, run_id: str | None, host: str) -> None:
        key = (run_id, host)
        counts = self._pending.get(account)
        if counts is None or key not in counts:
            if self._size >= self._max_pending:
                self._dropped += 1
                return
            self._size += 1
            if counts is None:
                counts = self._pending[account] = Counter()
        counts[key] += 1

    async def flush(self) -> None:
        """Hand the counts since the last flush to ``record_refusals``, one call per account."""
        pending, self._pending, self._size = self._pending, {}, 0
        if self._dropped:
            log.warning("refusal log full: %d refusals were not counted", self._dropped)
            self._dropped = 0
        for account, counts in pending.items():
            try:
                await self._record(account, dict(counts))
            except Exception as exc:
                log.warning(
                    "could not record %d refusal(s) for account %s: %s",
                    sum(counts.values()),
                    account,
                    type(exc).__name__,
                )

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="egress refusal flusher")

    async def stop(self) -> None:
        """Stop the timer and write what is left."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.flush()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            await self.flush()
