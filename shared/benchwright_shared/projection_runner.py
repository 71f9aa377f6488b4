"""Feeding projections from JetStream, and rebuilding them from the start."""

import asyncio
import contextlib
import functools
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from faststream import AckPolicy, Context
from faststream.nats import JStream, NatsBroker, NatsRouter, PullSub
from faststream.nats.message import NatsBatchMessage
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy

from benchwright_shared import subjects
from benchwright_shared.contracts.base import Problem
from benchwright_shared.contracts.queries import (
    ListParked,
    ParkedMessage,
    ParkedMessages,
    RebuildProjection,
    RebuildResult,
)
from benchwright_shared.projection import Projection, ProjectionStore, ViewCursor
from benchwright_shared.refusal import Refused
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore
from benchwright_shared.tail import ReplayStalled, StreamTail, replay

log = logging.getLogger(__name__)

# Messages a projection takes (and applies in one transaction) at a time.
BATCH = 256
# A rebuild replays history in larger transactions: nothing else waits on them.
REPLAY_BATCH = 1024


def register_projection(
    router: NatsRouter,
    *,
    store: ProjectionStore,
    blocking: BlockingStore,
    projection: str,
    stream: str,
    subject: str,
    service: str,
    max_deliver: int,
) -> None:
    """Subscribe a projection to ``subject`` with a durable pull consumer.

    Messages arrive in batches and each batch is applied in one transaction. The
    consumer lets one batch out at a time (``max_ack_pending`` = the batch size),
    so however many copies of the service share it, batches are applied one after
    another, in stream order: two copies never write the same rows at once (no
    deadlocks in PostgreSQL) and a later event never lands before an earlier one.
    A copy that dies holding a batch gives it back after ``ack_wait``.
    """
    # The version is in the consumer's name: a new version starts from the first message.
    durable = f"{service}-{projection}-v{store.projections[projection].version}"

    @router.subscriber(
        subject,
        stream=JStream(stream, declare=False),
        durable=durable,
        pull_sub=PullSub(batch_size=BATCH, timeout=0.2, batch=True),
        ack_policy=AckPolicy.NACK_ON_ERROR,
        config=ConsumerConfig(
            durable_name=durable,
            max_deliver=max_deliver,
            # A message pulled by a process that died comes back after this long.
            ack_wait=10,
            deliver_policy=DeliverPolicy.ALL,
            max_ack_pending=BATCH,
        ),
    )
    async def apply(
        bodies: list[dict[str, Any]],
        msg: Annotated[NatsBatchMessage, Context("message")],
    ) -> None:
        positions = [raw.metadata.sequence.stream for raw in msg.raw_message]
        await blocking.run(
            store.apply_many_or_park, projection, list(zip(positions, bodies, strict=True))
        )


async def rebuild_projection(
    js: JetStreamContext,
    *,
    store: ProjectionStore,
    blocking: BlockingStore,
    projection: str,
    stream: str,
    subject: str,
) -> RebuildResult:
    """Drop ``projection`` and replay ``stream`` into it from the first message.

    The live consumer may apply some of the same positions meanwhile; tracking
    makes each position land once, whichever gets there first.
    """
    info = await js.stream_info(stream)
    last = int(info.state.last_seq)
    before = await blocking.run(store.digest, projection)
    await blocking.run(store.reset, projection)
    applied = 0
    try:
        async for msgs in replay(js, stream, subject, start_seq=1, last_seq=last):
            items = [(m.metadata.sequence.stream, m.data) for m in msgs]
            applied += await blocking.run(_decoded, store.apply_many_or_park, projection, items)
    except ReplayStalled:
        log.warning("rebuild of %s stopped waiting for messages", projection)
    digest = await blocking.run(store.digest, projection)
    parked = len(await blocking.run(store.parked, projection))
    return RebuildResult(
        projection=projection,
        applied=applied,
        digest=digest,
        before_digest=before,
        parked=parked,
    )


def _decoded[R](
    apply: Callable[[str, list[tuple[int, dict[str, Any]]]], R],
    projection: str,
    raw: list[tuple[int, bytes]],
) -> R:
    """``apply`` over messages decoded here, in the store's thread, off the event loop."""
    return apply(projection, [(position, json.loads(data)) for position, data in raw])


# How long a rebuild waits for the live view to reach the stream's end before comparing.
BEFORE_CATCH_UP_S = 30.0


async def rebuild_ordered(
    js: JetStreamContext,
    *,
    store: ProjectionStore,
    blocking: BlockingStore,
    projection: str,
    source: "Source",
    after_reset: Callable[[], None],
    timeout: float = 600.0,
) -> RebuildResult:
    """Drop an ordered projection; the feeds (of every copy) replay it from the start.

    Waits until it holds the stream's last position again, then reports both digests.
    """
    info = await js.stream_info(source.stream)
    last = int(info.state.last_seq)
    # The live view first catches up with the stream as it stands (it may lag by a
    # batch or two): else ``before_digest`` would differ from the rebuild's for no
    # fault of the view's, only for its lag.
    try:
        await wait_position(store, blocking, projection, last, timeout=BEFORE_CATCH_UP_S)
    except TimeoutError:
        log.warning("%s lags the stream before its rebuild; its digest may too", projection)
    before = await blocking.run(store.digest, projection)
    await blocking.run(store.reset, projection)
    # The replay itself, here, fast; then the feed again, for what came meanwhile.
    seen = 0
    try:
        async for msgs in replay(js, source.stream, source.subjects[0], start_seq=1, last_seq=last):
            items = [(m.metadata.sequence.stream, m.data) for m in msgs]
            apply = functools.partial(store.apply_in_order_or_park, seen_up_to=seen)
            if await blocking.run(_decoded, apply, projection, items) is None:
                break  # reset again (another rebuild): the feed takes it from there
            seen = items[-1][0]
    except ReplayStalled:
        log.warning("rebuild of %s: the replay stalled; the feed goes on with it", projection)
    after_reset()
    try:
        await wait_position(store, blocking, projection, last, timeout=timeout)
    except TimeoutError:
        log.warning("rebuild of %s did not reach position %s in time", projection, last)
    digest = await blocking.run(store.digest, projection)
    applied = await blocking.run(store.tracked, projection)
    parked = len(await blocking.run(store.parked, projection))
    return RebuildResult(
        projection=projection,
        applied=applied - parked,
        digest=digest,
        before_digest=before,
        parked=parked,
    )


async def wait_position(
    store: ProjectionStore,
    blocking: BlockingStore,
    projection: str,
    position: int,
    timeout: float = 10.0,
) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while await blocking.run(store.max_position, projection) < position:
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"{projection} did not reach {position}")
        await asyncio.sleep(0.05)


@dataclass(frozen=True)
class Source:
    """Where a projection reads from: live subjects, and what a rebuild replays.

    An ``ordered`` source is one subject filter that covers every position of its
    stream (the run logs): each copy of the service reads it whole, in order, and
    applies it under a lock (``OrderedFeed``). Other sources are shared by a
    durable consumer, for read models whose rows do not depend on order.
    """

    stream: str
    subjects: tuple[str, ...]
    # Every message a rebuild must consider; messages a projection ignores cost little.
    replay_subject: str
    ordered: bool = False


class OrderedFeed:
    """Feeds one projection from its stream in order, in this copy, whatever others do.

    It starts after the highest position the projection took in; each batch is
    applied under the projection's lock, positions another copy applied already are
    skipped, so the read model sees every event once and in log order however many
    copies run and whichever of them dies. A projection reset under it (a rebuild,
    in any copy) sends it back to the start.
    """

    def __init__(
        self, store: ProjectionStore, blocking: BlockingStore, projection: str, source: Source
    ) -> None:
        self.store = store
        self.blocking = blocking
        self.projection = projection
        self.source = source

    async def run(self, js: JetStreamContext) -> None:
        seen = await self.blocking.run(self.store.max_position, self.projection)
        tail = self._tail(js, seen)
        # One batch is applied (in the store's thread) while the next is read: a
        # replay costs about the slower of the two, not their sum.
        applying: asyncio.Task[int | None] | None = None
        try:
            while True:
                # Large batches while behind (a rebuild, a restart); live, a fetch
                # returns what has arrived, so they stay small.
                msgs = await tail.fetch(timeout=1.0, batch=REPLAY_BATCH)
                items = [(m.metadata.sequence.stream, json.loads(m.data)) for m in msgs]
                if applying is not None and (items or applying.done()):
                    previous, applying = applying, None
                    if await previous is None:  # reset under us: start over from what it holds
                        seen = await self.blocking.run(self.store.max_position, self.projection)
                        await tail.close()
                        tail = self._tail(js, seen)
                        continue
                if items:
                    applying = asyncio.create_task(self._apply(items, seen))
                    seen = items[-1][0]
        finally:
            if applying is not None:
                applying.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await applying
            await tail.close()

    def _tail(self, js: JetStreamContext, seen: int) -> StreamTail:
        return StreamTail(js, self.source.stream, self.source.subjects[0], start_seq=seen + 1)

    async def _apply(self, items: list[tuple[int, dict[str, Any]]], seen: int) -> int | None:
        while True:
            try:
                return await self.blocking.run(
                    self.store.apply_in_order_or_park, self.projection, items, seen
                )
            except Exception:  # the database is away: the same batch, again
                log.warning("projection %s: batch failed; retrying", self.projection, exc_info=True)
                await asyncio.sleep(1.0)


class ProjectionHost:
    """A service's read models: their store, their consumers, their rebuild query."""

    def __init__(
        self,
        settings: Settings,
        service: str,
        router: NatsRouter,
        projections: Mapping[str, tuple[Projection, Source]],
        *,
        blocking: BlockingStore | None = None,
    ) -> None:
        self.blocking = blocking or BlockingStore(f"{service}-views")
        self.sources = {name: source for name, (_, source) in projections.items()}
        self.store = ProjectionStore(settings, service, [p for p, _ in projections.values()])
        self._broker: NatsBroker | None = None
        self._feeds: dict[str, asyncio.Task[None]] = {}
        for name, source in self.sources.items():
            if source.ordered:
                continue  # fed by an OrderedFeed once the broker is connected
            for subject in source.subjects:
                # One durable consumer per subject; each name must be unique on the stream.
                suffix = "" if len(source.subjects) == 1 else "-" + subject.split(".")[3]
                register_projection(
                    router,
                    store=self.store,
                    blocking=self.blocking,
                    projection=name,
                    stream=source.stream,
                    subject=subject,
                    service=f"{service}{suffix}",
                    max_deliver=settings.max_deliver,
                )

        @router.subscriber(subjects.rebuild_subject(service), queue=service)
        async def rebuild(query: RebuildProjection) -> RebuildResult:
            return await self.rebuild(query.projection)

        @router.subscriber(subjects.parked_subject(service), queue=service)
        async def parked(query: ListParked) -> ParkedMessages:
            return await self.parked(query.projection)

    def _unknown(self, projection: str) -> Problem:
        refused = Refused(404, "unknown projection", f"known: {sorted(self.sources)}")
        return refused.problem()

    async def parked(self, projection: str) -> ParkedMessages:
        if projection not in self.sources:
            return ParkedMessages(projection=projection, problem=self._unknown(projection))
        rows = await self.blocking.run(self.store.parked, projection)
        return ParkedMessages(
            projection=projection, data=[ParkedMessage.model_validate(r) for r in rows]
        )

    @property
    def broker(self) -> NatsBroker | None:
        return self._broker

    @broker.setter
    def broker(self, broker: NatsBroker | None) -> None:
        """Connected: the ordered projections start following their streams."""
        self._broker = broker
        if broker is None or self._feeds:
            return
        for name, source in self.sources.items():
            if source.ordered:
                self._start_feed(name)

    def _start_feed(self, name: str) -> None:
        assert self._broker is not None
        feed = OrderedFeed(self.store, self.blocking, name, self.sources[name])
        js = self._broker.connection.jetstream()
        self._feeds[name] = asyncio.create_task(feed.run(js), name=f"projection-{name}")

    async def _stop_feed(self, name: str) -> None:
        task = self._feeds.pop(name, None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def read[T](self, fn: Callable[[ViewCursor], T]) -> T:
        return await self.blocking.run(self.store.read, fn)

    async def rebuild(self, projection: str) -> RebuildResult:
        source = self.sources.get(projection)
        if source is None or self.broker is None:
            return RebuildResult(projection=projection, problem=self._unknown(projection))
        js = self.broker.connection.jetstream()
        if source.ordered:
            # This copy's feed replays the stream from the start; another copy's feed
            # notices the reset when it next applies something, and follows.
            await self._stop_feed(projection)
            try:
                return await rebuild_ordered(
                    js,
                    store=self.store,
                    blocking=self.blocking,
                    projection=projection,
                    source=source,
                    after_reset=lambda: self._start_feed(projection),
                )
            finally:
                if projection not in self._feeds:
                    self._start_feed(projection)
        return await rebuild_projection(
            js,
            store=self.store,
            blocking=self.blocking,
            projection=projection,
            stream=source.stream,
            subject=source.replay_subject,
        )

    def close(self) -> None:
        for task in self._feeds.values():
            task.cancel()
        # A cancelled feed's apply may still run on the store's thread: wait for it
        # before the connection closes under it (closing first crashed the process).
        self.blocking.close()
        self.store.close()


# Every run's event log, as the projections that follow runs read it.
RUN_LOG_SOURCE = Source(
    stream=subjects.RUNS_STREAM,
    subjects=(subjects.RUN_LOG_ALL,),
    replay_subject=subjects.RUN_LOG_ALL,
    ordered=True,
)
