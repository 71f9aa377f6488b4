"""Which tasks a sweep has begun, told to whoever watches the run (its page).

Plain NATS on ``subjects.live_subject(run_id)``: nothing stores it and nothing
waits for it, so a sweep never slows for a watcher. Starts heard within
``FLUSH_S`` of each other go out as one message, ``{"started": [[index, trial],
...]}``; a lost message only shows a task as running late.
"""

import asyncio
import contextlib

from faststream.nats import NatsBroker

from benchwright_shared import subjects

FLUSH_S = 0.2


class StartedTasks:
    def __init__(self, broker: NatsBroker, run_id: str) -> None:
        self.broker = broker
        self.subject = subjects.live_subject(run_id)
        self.pending: list[list[int]] = []
        self._sending: asyncio.Task[None] | None = None

    def heard(self, index: int, trial: int) -> None:
        """A task began; it goes out with the others heard in the next ``FLUSH_S``."""
        self.pending.append([index, trial])
        if self._sending is None or self._sending.done():
            self._sending = asyncio.create_task(self._send_soon())

    async def _send_soon(self) -> None:
        await asyncio.sleep(FLUSH_S)
        pairs, self.pending = self.pending, []
        with contextlib.suppress(Exception):  # a watcher's view is not worth a failure
            await self.broker.publish({"started": pairs}, self.subject)
