"""Feeding projections from JetStream, and rebuilding them from the start."""

import asyncio
import json
import logging
from typing import Annotated, Any

from faststream import AckPolicy, Context
from faststream.nats import JStream, NatsRouter, PullSub
from faststream.nats.message import NatsBatchMessage
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy

from benchwright_shared.contracts.queries import RebuildResult
from benchwright_shared.projection import ProjectionStore
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
    durable = f"{service}-{projection}"

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
