"""Bus contract: dedupe, bounded redelivery, and apply-once, against a real nats-server."""

import asyncio
import uuid
from typing import ClassVar

import pytest
from faststream.nats import NatsBroker, NatsRouter

from benchwright_shared import subjects
from benchwright_shared.bus import command_subscriber, declare_streams, jetstream, send_command
from benchwright_shared.contracts import Contract

pytestmark = pytest.mark.connected


class Ping(Contract):
    subject: ClassVar[str] = "bw.cmd.test.ping.v1"
    command_id: str
    n: int = 0


async def started_broker(url: str, router: NatsRouter) -> NatsBroker:
    broker = NatsBroker(url, logger=None)
    broker.include_router(router)
    await broker.connect()
    await declare_streams(jetstream(broker))
    await broker.start()
    return broker


async def test_a_command_sent_twice_is_handled_once(nats_url: str) -> None:
    seen: list[str] = []
    router = NatsRouter()

    @command_subscriber(router, Ping.subject, service=f"t{uuid.uuid4().hex[:6]}", max_deliver=3)
    async def handle(ping: Ping) -> None:
        seen.append(ping.command_id)

    broker = await started_broker(nats_url, router)
    try:
        command = Ping(command_id=str(uuid.uuid4()))
        await send_command(broker, command)
        await send_command(broker, command)  # a retry after a lost ack, say
        await send_command(broker, Ping(command_id=str(uuid.uuid4())))
        await asyncio.sleep(1.5)
        assert seen.count(command.command_id) == 1
        assert len(seen) == 2
    finally:
        await broker.stop()


async def test_a_failing_handler_is_redelivered_at_most_max_deliver_times(nats_url: str) -> None:
    attempts: list[int] = []
    router = NatsRouter()

    @command_subscriber(router, Ping.subject, service=f"t{uuid.uuid4().hex[:6]}", max_deliver=3)
    async def handle(ping: Ping) -> None:
        attempts.append(ping.n)
        raise RuntimeError("always fails")

    broker = await started_broker(nats_url, router)
    try:
        await send_command(broker, Ping(command_id=str(uuid.uuid4()), n=7))
        for _ in range(60):
            if len(attempts) >= 3:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.5)  # would a fourth delivery come?
        assert attempts == [7, 7, 7]
    finally:
        await broker.stop()


async def test_streams_are_declared_idempotently(nats_url: str) -> None:
    broker = NatsBroker(nats_url, logger=None)
    await broker.connect()
    try:
        js = jetstream(broker)
        await declare_streams(js)
        await declare_streams(js)
        info = await js.stream_info(subjects.RUNS_STREAM)
        assert info.config.subjects == list(subjects.RUNS_SUBJECTS)
    finally:
        await broker.stop()
