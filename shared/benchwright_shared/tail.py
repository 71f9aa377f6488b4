"""Reading one subject filter of a stream in order, history included, through any outage.

An ephemeral pull consumer, started at the next stream sequence this reader has
not seen. When it vanishes (the nats-server restarted, the connection was cut
long enough for the server to drop it) a new one starts where the old one
stopped, so nothing is skipped and nothing is read twice.
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator

import nats.errors
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

log = logging.getLogger(__name__)

# An idle consumer is checked this often: fetch timeouts alone cannot tell "idle" from "gone".
CHECK_IDLE_EVERY_S = 2.0
# The server drops a consumer nobody fetches from after this long.
INACTIVE_THRESHOLD_S = 60.0
# Batches a replay holds ready for its reader before the server is held back.
REPLAY_QUEUE_BATCHES = 4


class StreamTail:
    def __init__(
        self, js: JetStreamContext, stream: str, filter_subject: str, *, start_seq: int = 1
    ) -> None:
        self.js = js
        self.stream = stream
        self.filter_subject = filter_subject
        self.next_seq = start_seq
        # Whether the last fetch reached the end of what the stream held then.
        self.caught_up = False
        self._sub: JetStreamContext.PullSubscription | None = None
        self._idle_since = time.monotonic()

    async def _subscribe(self) -> JetStreamContext.PullSubscription:
        if self._sub is None:
            config = ConsumerConfig(
                filter_subject=self.filter_subject,
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                opt_start_seq=self.next_seq,
                ack_policy=AckPolicy.NONE,
                inactive_threshold=INACTIVE_THRESHOLD_S,
                mem_storage=True,
                num_replicas=1,
            )
            self._sub = await self.js.pull_subscribe(
                self.filter_subject, durable=None, stream=self.stream, config=config
            )
            self._idle_since = time.monotonic()
        return self._sub

    async def _drop(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def fetch(self, timeout: float = 1.0, batch: int = 256) -> list[Msg]:
        """The next messages in stream order (none within ``timeout`` is an empty list)."""
        try:
            sub = await self._subscribe()
            msgs = await sub.fetch(batch, timeout=timeout)
        except nats.errors.TimeoutError:
            self.caught_up = True
            await self._check_idle()
            return []
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # The consumer or the connection is gone: start again where we stopped.
            log.debug("tail of %s: %s; resubscribing", self.filter_subject, exc)
            await self._drop()
            self.caught_up = False
            await asyncio.sleep(min(timeout, 0.5))
            return []
        fresh = [m for m in msgs if m.metadata.sequence.stream >= self.next_seq]
        if fresh:
            self.next_seq = fresh[-1].metadata.sequence.stream + 1
            self.caught_up = fresh[-1].metadata.num_pending == 0
        self._idle_since = time.monotonic()
        return fresh

    async def _check_idle(self) -> None:
        if time.monotonic() - self._idle_since < CHECK_IDLE_EVERY_S or self._sub is None:
            return
        self._idle_since = time.monotonic()
        try:
            await self._sub.consumer_info()
        except asyncio.CancelledError:
            raise
        except Exception:
            await self._drop()

    async def close(self) -> None:
        await self._drop()


class ReplayStalled(Exception):
    """A replay heard nothing for too long; the caller goes on some other way."""


async def replay(
    js: JetStreamContext,
    stream: str,
    filter_subject: str,
    *,
    start_seq: int,
    last_seq: int,
    batch: int = 1024,
    stall_after_s: float = 10.0,
) -> AsyncIterator[list[Msg]]:
    """Every message of ``filter_subject`` from ``start_seq`` through ``last_seq`` (or
    to the end of what the filter held), in order, in batches: for reading history
    fast (a projection's rebuild).

    A pull ``fetch`` (``StreamTail``) costs a timed wait per message; here the server
    pushes (an ordered consumer: it restarts itself after a gap or a lost
    consumer), a callback gathers messages into batches, and a small queue of
    batches holds the server back while the caller applies them (flow control).
    Raises ``ReplayStalled`` when nothing arrives for ``stall_after_s``.
    """
    if start_seq > last_seq:
        return
    batches: asyncio.Queue[list[Msg] | None] = asyncio.Queue(maxsize=REPLAY_QUEUE_BATCHES)
    current: list[Msg] = []
    finished = False

    async def gather(msg: Msg) -> None:
        nonlocal current, finished
        meta = msg.metadata
        if finished or meta.sequence.stream > last_seq:
            return
        current.append(msg)
        # ``num_pending``: what the filter still held beyond this message when it left.
        end = meta.sequence.stream >= last_seq or meta.num_pending == 0
        if len(current) >= batch or end:
            full, current = current, []
            await batches.put(full)
        if end:
            finished = True
            await batches.put(None)

    config = ConsumerConfig(
        filter_subject=filter_subject,
        deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=start_seq,
        mem_storage=True,
        num_replicas=1,
    )
    sub = await js.subscribe(
        filter_subject,
        stream=stream,
        ordered_consumer=True,
        idle_heartbeat=1.0,
        config=config,
        cb=gather,
        # Never drop: nats-py counts a message it drops as delivered, and an ordered
        # consumer would go on after it. The server's flow control bounds what waits
        # here (it holds back while ``gather`` waits for the reader).
        pending_msgs_limit=0,
        pending_bytes_limit=0,
    )
    try:
        info = await sub.consumer_info()
        delivered = info.delivered.consumer_seq if info.delivered else 0
        if info.num_pending == 0 and not delivered:
            return  # nothing under the filter from ``start_seq``
        while True:
            try:
                got = await asyncio.wait_for(batches.get(), timeout=stall_after_s)
            except TimeoutError:
                raise ReplayStalled(f"replay of {filter_subject} heard nothing") from None
            if got is None:
                return
            yield got
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
