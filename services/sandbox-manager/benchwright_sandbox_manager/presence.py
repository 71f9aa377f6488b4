"""Which tasks a sweep has begun, told to whoever watches the run (its page).

Plain NATS on ``subjects.live_subject(run_id)``: nothing stores it and nothing
waits for it, so a sweep never slows for a watcher. Starts heard within
``FLUSH_S`` of each other go out as one message, ``{"started": [[index, trial],
...]}``; a lost message only shows a task as running late.

A page opened after a task began heard nothing of it, so every ``REPEAT_S`` the
tasks begun and not yet settled go out again: a late watcher sees them running
within that long.
"""

import asyncio
import contextlib

from faststream.nats import NatsBroker

from benchwright_shared import subjects

FLUSH_S = 0.2
REPEAT_S = 1.0


class StartedTasks:
    def __init__(self, broker: NatsBroker, run_id: str, *, repeat_s: float = REPEAT_S) -> None:
        self.broker = broker
        self.subject = subjects.live_subject(run_id)
        self.repeat_s = repeat_s
        self.pending: list[list[int]] = []
        self.in_flight: set[tuple[int, int]] = set()
        self._sending: asyncio.Task[None] | None = None
        self._repeating: asyncio.Task[None] | None = None

    def heard(self, index: int, trial: int) -> None:
        """A task began; it goes out with the others heard in the next ``FLUSH_S``."""
        self.pending.append([index, trial])
        self.in_flight.add((index, trial))
        if self._sending is None or self._sending.done():
            self._sending = asyncio.create_task(self._send_soon())
        if self._repeating is None:
            self._repeating = asyncio.create_task(self._repeat())

    def settled(self, index: int, trial: int) -> None:
        """A task's result came: it is no longer told as running."""
        self.in_flight.discard((index, trial))

    async def close(self) -> None:
        """The sweep ended: stop repeating."""
        for task in (self._sending, self._repeating):
            if task is not None:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    async def _send_soon(self) -> None:
        await asyncio.sleep(FLUSH_S)
        pairs, self.pending = self.pending, []
        await self._publish(pairs)

    async def _repeat(self) -> None:
        while True:
            await asyncio.sleep(self.repeat_s)
            if self.in_flight:
                await self._publish([list(pair) for pair in sorted(self.in_flight)])

    async def _publish(self, pairs: list[list[int]]) -> None:
        with contextlib.suppress(Exception):  # a watcher's view is not worth a failure
            await self.broker.publish({"started": pairs}, self.subject)
