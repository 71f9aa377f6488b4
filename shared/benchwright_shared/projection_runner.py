"""Feeding projections from JetStream, and rebuilding them from the start."""

import asyncio
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
from benchwright_shared.contracts.queries import RebuildProjection, RebuildResult
from benchwright_shared.projection import Projection, ProjectionStore, ViewCursor
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore

log = logging.getLogger(__name__)


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

    Messages arrive in batches and each batch is applied in one transaction.
    """
    # The version is in the consumer's name: a new version starts from the first message.
    durable = f"{service}-{projection}-v{store.projections[projection].version}"

    @router.subscriber(
        subject,
        stream=JStream(stream, declare=False),
        durable=durable,
        pull_sub=PullSub(batch_size=256, timeout=0.2, batch=True),
        ack_policy=AckPolicy.NACK_ON_ERROR,
        config=ConsumerConfig(
            durable_name=durable,
            max_deliver=max_deliver,
            # A message pulled by a process that died comes back after this long.
            ack_wait=10,
            deliver_policy=DeliverPolicy.ALL,
        ),
    )
    async def apply(
        bodies: list[dict[str, Any]],
        msg: Annotated[NatsBatchMessage, Context("message")],
    ) -> None:
        positions = [raw.metadata.sequence.stream for raw in msg.raw_message]
        await blocking.run(store.apply_many, projection, list(zip(positions, bodies, strict=True)))


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
    if last:
        sub = await js.subscribe(
            subject, stream=stream, ordered_consumer=True, deliver_policy=DeliverPolicy.ALL
        )
        try:
            while True:
                msg = await sub.next_msg(timeout=10)
                position = msg.metadata.sequence.stream
                if await blocking.run(store.apply, projection, position, json.loads(msg.data)):
                    applied += 1
                if position >= last or msg.metadata.num_pending == 0:
                    break
        except TimeoutError:
            log.warning("rebuild of %s stopped waiting for messages", projection)
        finally:
            await sub.unsubscribe()
    digest = await blocking.run(store.digest, projection)
    return RebuildResult(
        projection=projection, applied=applied, digest=digest, before_digest=before
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
    """Where a projection reads from: live subjects, and what a rebuild replays."""

    stream: str
    subjects: tuple[str, ...]
    # Every message a rebuild must consider; messages a projection ignores cost little.
    replay_subject: str


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
        self.broker: NatsBroker | None = None
        for name, source in self.sources.items():
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

    async def read[T](self, fn: Callable[[ViewCursor], T]) -> T:
        return await self.blocking.run(self.store.read, fn)

    async def rebuild(self, projection: str) -> RebuildResult:
        source = self.sources.get(projection)
        if source is None or self.broker is None:
            return RebuildResult(
                projection=projection,
                problem=Problem(
                    title="unknown projection", status=404, detail=f"known: {sorted(self.sources)}"
                ),
            )
        return await rebuild_projection(
            self.broker.connection.jetstream(),
            store=self.store,
            blocking=self.blocking,
            projection=projection,
            stream=source.stream,
            subject=source.replay_subject,
        )

    def close(self) -> None:
        self.store.close()
        self.blocking.close()


# Every run's event log, as the projections that follow runs read it.
RUN_LOG_SOURCE = Source(
    stream=subjects.RUNS_STREAM,
    subjects=(subjects.RUN_LOG_ALL,),
    replay_subject=subjects.RUN_LOG_ALL,
)
