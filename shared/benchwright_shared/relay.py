"""Relay after commit: publish what a service stored, in order, to JetStream.

The relay reads its service's notification log from the last position it
relayed and publishes each stored event with ``Nats-Msg-Id =
<service>:<notification id>``. A crash between publishing and recording the
position therefore yields a duplicate that JetStream drops, never a gap.
SQLite cannot push notifications, so the service wakes the relay after each
save and the relay also polls.
"""

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from eventsourcing.application import Application
from eventsourcing.persistence import IntegrityError, Notification, Tracking
from nats.js import JetStreamContext

from benchwright_shared.store import BlockingStore

log = logging.getLogger(__name__)

# How long a batch's acknowledgements may take before the batch is published again.
ACK_TIMEOUT_S = 10.0

# Translates one stored notification to (subject, payload) or None to skip it.
Translator = Callable[[Application[Any], Notification], tuple[str, bytes] | None]


class Relay:
    """Publishes an application's notification log to JetStream."""

    def __init__(
        self,
        *,
        service: str,
        app: Application[Any],
        store: BlockingStore,
        translate: Translator,
        stream: str,
        batch_size: int = 500,
        poll_interval: float = 1.0,
        ordered: bool = False,
    ) -> None:
        self.service = service
        # The stream holds this relay's messages alone, and their order matters (a
        # run's log): each publish names the one before it, so a message whose
        # predecessor failed is refused too, and nothing lands out of order.
        self.ordered = ordered
        self.app = app
        self.store = store
        self.translate = translate
        self.stream = stream
        self.batch_size = batch_size
        self.poll_interval = poll_interval
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._tracking_name = f"relay:{stream}"
        self.relayed_position = 0
        self._progress = asyncio.Condition()

    def wake(self) -> None:
        """Tell the relay something new was saved (thread-safe via the loop)."""
        self._wake.set()

    async def start(self, js: JetStreamContext) -> None:
        self.relayed_position = await self.store.run(self._load_position)
        self._task = asyncio.create_task(self._run(js), name=f"relay-{self.service}")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def wait_relayed(self, position: int, timeout: float = 10.0) -> None:
        """Wait until the relay has published up to ``position``."""
        async with self._progress:
            await asyncio.wait_for(
                self._progress.wait_for(lambda: self.relayed_position >= position), timeout
            )

    def _recorder(self) -> Any:
        return self.app.recorder

    def _load_position(self) -> int:
        return int(self._recorder().max_tracking_id(self._tracking_name) or 0)

    def _save_position(self, position: int) -> None:
        # Another relay (or an earlier life of this one) may have got there first.
        with contextlib.suppress(IntegrityError):
            self._recorder().insert_tracking(Tracking(self._tracking_name, position))

    def _select(self, start: int) -> list[Notification]:
        return list(
            self._recorder().select_notifications(
                start=start, limit=self.batch_size, inclusive_of_start=False
            )
        )

    async def _run(self, js: JetStreamContext) -> None:
        while True:
            try:
                moved = await self._relay_once(js)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("relay %s failed; retrying", self.service)
                await asyncio.sleep(self.poll_interval)
                continue
            if moved:
                continue
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.poll_interval)

    async def _relay_once(self, js: JetStreamContext) -> bool:
        notifications = await self.store.run(self._select, self.relayed_position)
        if not notifications:
            return False
        futures = []
        # The first of a batch follows what is acknowledged already; the chain of
        # expectations starts after it (a purged stream cannot wedge the relay).
        previous = 0
        for n in notifications:
            translated = self.translate(self.app, n)
            if translated is None:
                continue
            subject, payload = translated
            headers = {"Nats-Msg-Id": f"{self.service}:{n.id}"}
            if self.ordered and previous:
                headers["Nats-Expected-Last-Msg-Id"] = f"{self.service}:{previous}"
            previous = n.id
            # One connection keeps publish order; acks are awaited together.
            futures.append(
                await js.publish_async(subject, payload, stream=self.stream, headers=headers)
            )
        if futures:
            try:
                # An ack lost with a server that died would be waited for forever.
                await asyncio.wait_for(asyncio.gather(*futures), ACK_TIMEOUT_S)
            except BaseException:
                for future in futures:
                    future.cancel()  # frees its slot; the batch goes again, deduplicated
                raise
        last = notifications[-1].id
        await self.store.run(self._save_position, last)
        async with self._progress:
            self.relayed_position = last
            self._progress.notify_all()
        return True


class RelayedApplication(Application[Any]):
    """An application whose recorder also keeps the relay's position.

    The position lives in the same database as the events, in the library's
    own tracking table, so a restored backup carries both together.
    """

    def construct_recorder(self) -> Any:
        return self.factory.process_recorder()
