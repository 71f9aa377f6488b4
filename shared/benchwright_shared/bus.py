"""The message bus: FastStream's NATS broker over JetStream.

Only the place that assembles a process builds a broker; services contribute
routers of plain typed handlers. Streams are declared here, once, so every
process agrees on them whichever service starts first.
"""

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Annotated, Any, cast

import nats.errors
from faststream import AckPolicy, BaseMiddleware, Context, ExceptionMiddleware, StreamMessage
from faststream.exceptions import NackMessage
from faststream.nats import JStream, NatsBroker, NatsRouter, PullSub
from nats.js import JetStreamContext
from nats.js.api import (
    ConsumerConfig,
    DeliverPolicy,
    ObjectStoreConfig,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.client import JetStreamContext as _JS
from nats.js.errors import (
    BadRequestError,
    BucketNotFoundError,
    NoStreamResponseError,
    ServiceUnavailableError,
)
from pydantic import BaseModel

from benchwright_shared import subjects
from benchwright_shared.contracts.base import Contract
from benchwright_shared.refusal import ProblemReply, Refused
from benchwright_shared.settings import Settings
from benchwright_shared.store import StoreClosedError

PUBLISH_TIMEOUT_S = 10.0
# Commands are deduplicated within this window by their command id.
COMMAND_DEDUPE_WINDOW = timedelta(minutes=10)
# The run log relay republishes after a crash; a long window drops those repeats.
RUN_LOG_DEDUPE_WINDOW = timedelta(hours=1)

PullSubscription = _JS.PullSubscription

# A message handler: FastStream decorators hand back the function they wrap.
Handler = Callable[..., Awaitable[Any]]

STREAMS: tuple[tuple[str, Sequence[str], timedelta], ...] = (
    (subjects.COMMANDS_STREAM, subjects.COMMANDS_SUBJECTS, COMMAND_DEDUPE_WINDOW),
    (subjects.EVENTS_STREAM, subjects.EVENTS_SUBJECTS, COMMAND_DEDUPE_WINDOW),
    (subjects.RUNS_STREAM, subjects.RUNS_SUBJECTS, RUN_LOG_DEDUPE_WINDOW),
)


def _translate_fetch_timeouts() -> None:
    """Make nats-py's pull ``fetch`` time out the way FastStream expects.

    FastStream 0.7.8 treats ``nats.errors.TimeoutError`` from ``fetch`` as "no
    messages yet"; nats-py 2.15+ also raises a bare ``asyncio.TimeoutError``
    there when the deadline runs out. Unhandled, every idle pull consumer is
    torn down, logged as an error with a traceback, and restarted, every few
    hundred milliseconds. See docs/decisions/0006-fetch-timeouts.md.
    """
    original = PullSubscription.fetch
    if getattr(original, "_benchwright_translated", False):
        return

    async def fetch(self: PullSubscription, *args: Any, **kwargs: Any) -> Any:
        try:
            return await original(self, *args, **kwargs)
        except nats.errors.TimeoutError:
            raise
        except TimeoutError as exc:
            raise nats.errors.TimeoutError from exc

    fetch._benchwright_translated = True  # type: ignore[attr-defined]
    PullSubscription.fetch = fetch  # type: ignore[method-assign]


def build_broker(settings: Settings, *, name: str) -> NatsBroker:
    """A broker for one process.

    Per-message lines go out at DEBUG, which the default WARNING level drops
    before formatting (formatting them halves throughput); handler failures
    still log at ERROR.
    """
    if not settings.nats_url:
        raise ValueError("settings.nats_url is not set (the embedded runner sets it)")
    _translate_fetch_timeouts()
    return NatsBroker(
        nats_servers(settings.nats_url),
        name=f"benchwright-{name}",
        logger=logging.getLogger("benchwright.bus"),
        log_level=logging.DEBUG,
        max_reconnect_attempts=-1,
        middlewares=MIDDLEWARES,
    )


class StoppingQuietly(BaseMiddleware):
    """A message that arrives while its service's stores are closing goes back to the
    stream (NACK), without an error: it is not a failure, only bad timing. Inside the
    logging middleware, so nothing is logged above DEBUG."""

    async def consume_scope(self, call_next: Callable[..., Awaitable[Any]], msg: Any) -> Any:
        try:
            return await call_next(msg)
        except StoreClosedError:
            raise NackMessage() from None


# The one place a refusal becomes an answer (see ``benchwright_shared.refusal``).
ANSWER_REFUSALS = ExceptionMiddleware()


@ANSWER_REFUSALS.add_handler(Refused, publish=True)
async def answer_refused(
    refused: Refused, message: Annotated[StreamMessage[Any], Context("message")]
) -> ProblemReply:
    """A request's handler refused: the problem is its answer.

    A message nobody awaits (a command from a stream) has nobody to answer: its
    refusal stays an error, which its acknowledgement policy redelivers or drops.
    """
    if not message.reply_to:
        raise refused
    return ProblemReply(problem=refused.problem())


# Every broker's middlewares, outermost first (a test's own broker uses them too).
MIDDLEWARES = (StoppingQuietly, ANSWER_REFUSALS)


def nats_servers(url: str) -> list[str]:
    """``BW_NATS_URL`` as a server list: one URL, or a cluster's, separated by commas."""
    servers = [part.strip() for part in url.split(",") if part.strip()]
    if not servers:
        raise ValueError(f"no NATS server in {url!r}")
    return servers


async def declare_streams(js: JetStreamContext, *, replicas: int = 1) -> None:
    """Create or update the platform's streams (safe to call from every process)."""
    for name, stream_subjects, window in STREAMS:
        config = StreamConfig(
            name=name,
            subjects=list(stream_subjects),
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            duplicate_window=window.total_seconds(),
            num_replicas=replicas,
        )
        try:
            await js.add_stream(config)
        except BadRequestError:
            await js.update_stream(config)


OBJECT_BUCKETS = (subjects.DATASETS_BUCKET, subjects.SNAPSHOTS_BUCKET, subjects.ARTIFACTS_BUCKET)


async def declare_buckets(js: JetStreamContext, *, replicas: int = 1) -> None:
    """Create the platform's object store buckets with ``replicas`` (once; safe from every copy)."""
    for name in OBJECT_BUCKETS:
        try:
            await js.object_store(name)
        except BucketNotFoundError:
            config = ObjectStoreConfig(bucket=name, replicas=replicas, storage=StorageType.FILE)
            try:
                await js.create_object_store(name, config=config)  # nats-py needs both
            except Exception:  # another copy made it meanwhile
                await js.object_store(name)


def jetstream(broker: NatsBroker) -> JetStreamContext:
    return broker.connection.jetstream()


async def send_command(
    broker: NatsBroker,
    command: Contract,
    *,
    subject: str | None = None,
    msg_id: str | None = None,
) -> None:
    """Publish a command durably; its ``command_id`` makes a re-send a no-op.

    ``subject`` sends it somewhere other than its contract's subject (a sandbox
    command to the copy that holds the sandbox); ``msg_id`` replaces the command
    id as the deduplication key (a command forwarded to another copy is a second
    message, not a repeat of the first).
    """
    command_id = command.command_id  # type: ignore[attr-defined]
    await publish_durably(
        broker,
        subject or command.subject,
        command.to_bytes(),
        stream=subjects.COMMANDS_STREAM,
        msg_id=msg_id or command_id,
    )


async def publish_event(
    broker: NatsBroker, event: Contract, *, msg_id: str, subject: str | None = None
) -> None:
    """Publish an integration event durably, deduplicated by ``msg_id``."""
    await publish_durably(
        broker,
        subject or event.subject,
        event.to_bytes(),
        stream=subjects.EVENTS_STREAM,
        msg_id=msg_id,
    )


# While the server is away (restarting, or a cluster electing a leader) a publish is
# tried again, with growing pauses, for this long; the message id makes a repeat that
# did land a no-op.
PUBLISH_RETRY_S = 120.0
_TRANSIENT = (
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    # A cluster between leaders: the stream has nobody to answer for a moment.
    NoStreamResponseError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.OutboundBufferLimitError,
    nats.errors.StaleConnectionError,
    ServiceUnavailableError,
    TimeoutError,
)


async def publish_durably(
    broker: NatsBroker, subject: str, data: bytes, *, stream: str, msg_id: str
) -> None:
    """Publish to a stream and wait for its acknowledgement, through a short outage."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PUBLISH_RETRY_S
    pause = 0.1
    while True:
        try:
            await jetstream(broker).publish(
                subject,
                data,
                stream=stream,
                headers={"Nats-Msg-Id": msg_id},
                timeout=PUBLISH_TIMEOUT_S,
            )
            return
        except _TRANSIENT:
            if loop.time() + pause > deadline:
                raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, 2.0)


async def ask[T: BaseModel](
    broker: NatsBroker,
    query: Contract | BaseModel,
    reply_type: type[T],
    *,
    subject: str | None = None,
    timeout: float = 10.0,
) -> T:
    """Send a query over request/reply and parse the answer."""
    target = subject or query.subject  # type: ignore[union-attr]
    msg = await broker.connection.request(target, query.model_dump_json().encode(), timeout=timeout)
    return reply_type.model_validate_json(msg.data)


def command_subscriber(
    router: NatsRouter, subject: str, *, service: str, max_deliver: int
) -> Callable[[Handler], Handler]:
    """A durable, work-shared consumer of one command subject.

    A handler that raises is redelivered (``NACK_ON_ERROR``) at most
    ``max_deliver`` times; the server then stops offering it.
    """
    durable = f"{service}-{subject.replace('.', '_')}"
    subscriber = router.subscriber(
        subject,
        stream=JStream(subjects.COMMANDS_STREAM, declare=False),
        durable=durable,
        pull_sub=PullSub(batch_size=16, timeout=1.0),
        ack_policy=AckPolicy.NACK_ON_ERROR,
        config=ConsumerConfig(durable_name=durable, max_deliver=max_deliver, ack_wait=60),
    )
    return cast(Callable[[Handler], Handler], subscriber)


# A listener that belongs to one process is a durable consumer named after it, so it
# is replicated like its stream (an ephemeral one lives on one node and dies with
# it); the server drops it once its process has not fetched for this long.
COPY_CONSUMER_IDLE_S = 600.0


def _copy_consumer(
    router: NatsRouter,
    subject: str,
    *,
    stream: str,
    owner: str,
    ack_policy: AckPolicy,
    max_deliver: int = -1,
    deliver_policy: DeliverPolicy = DeliverPolicy.NEW,
) -> Callable[[Handler], Handler]:
    token = subject.replace(".", "_").replace("*", "any").replace(">", "all")
    durable = f"{owner}-{token}"
    subscriber = router.subscriber(
        subject,
        stream=JStream(stream, declare=False),
        durable=durable,
        pull_sub=PullSub(batch_size=16, timeout=1.0),
        ack_policy=ack_policy,
        config=ConsumerConfig(
            durable_name=durable,
            deliver_policy=deliver_policy,
            inactive_threshold=COPY_CONSUMER_IDLE_S,
            max_deliver=max_deliver,
            ack_wait=60,
        ),
    )
    return cast(Callable[[Handler], Handler], subscriber)


def event_listener(router: NatsRouter, subject: str, *, owner: str) -> Callable[[Handler], Handler]:
    """This process's own consumer of new events: every process sees every event.

    Used for replies to commands: the process awaiting a reply picks out its own.
    """
    return _copy_consumer(
        router, subject, stream=subjects.EVENTS_STREAM, owner=owner, ack_policy=AckPolicy.ACK
    )


def copy_command_listener(
    router: NatsRouter, subject: str, *, owner: str, max_deliver: int = 5, own: bool = True
) -> Callable[[Handler], Handler]:
    """A consumer of commands addressed to this copy alone (``own``) or heard by every copy.

    A copy's own subject names its copy id, fresh at each start: every message on it
    is for this copy, whenever it was sent (even before the consumer was made). A
    subject every copy hears starts at the newest message: older ones were for others.
    The server drops the consumer some time after the copy is gone.
    """
    return _copy_consumer(
        router,
        subject,
        stream=subjects.COMMANDS_STREAM,
        owner=owner,
        ack_policy=AckPolicy.NACK_ON_ERROR,
        max_deliver=max_deliver,
        deliver_policy=DeliverPolicy.ALL if own else DeliverPolicy.NEW,
    )
