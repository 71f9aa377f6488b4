"""A message that reaches a service while its stores close goes back to the stream,
quietly: no error, no traceback in the service's log (seen once in CI: billing's
projection met its closed store thread during shutdown)."""

import asyncio
import logging
from typing import Any

import pytest
from faststream.nats import NatsRouter

from benchwright_shared import subjects
from benchwright_shared.bus import build_broker, command_subscriber, declare_streams, jetstream
from benchwright_shared.contracts import KillSandbox
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore, StoreClosedError

pytestmark = pytest.mark.connected


async def test_a_closed_store_refuses_work_with_its_own_error() -> None:
    store = BlockingStore("probe")
    assert await store.run(lambda: 42) == 42
    store.close()
    with pytest.raises(StoreClosedError):
        await store.run(lambda: 42)


async def test_a_message_meeting_a_closed_store_is_redelivered_without_an_error(
    embedded_nats: str, caplog: pytest.LogCaptureFixture
) -> None:
    broker = build_broker(Settings(nats_url=embedded_nats), name="stopping-test")
    router = NatsRouter()
    store = BlockingStore("probe")
    store.close()  # as if the service were stopping when the message came
    seen: list[str] = []
    done = asyncio.Event()

    @command_subscriber(router, subjects.KILL_SANDBOX, service="stopping-test", max_deliver=5)
    async def handle(command: KillSandbox) -> None:
        seen.append(command.command_id)
        if len(seen) == 1:
            await store.run(lambda: None)  # raises StoreClosedError
        done.set()

    broker.include_router(router)
    await broker.connect()
    await declare_streams(jetstream(broker))
    caplog.set_level(logging.DEBUG, logger="benchwright.bus")
    await broker.start()
    try:
        command: Any = KillSandbox(command_id="k1", run_id="r1", sandbox_id="s1")
        await broker.publish(
            command.model_dump(mode="json"), subjects.KILL_SANDBOX, stream=subjects.COMMANDS_STREAM
        )
        await asyncio.wait_for(done.wait(), 30)
    finally:
        await broker.stop()
    assert seen == ["k1", "k1"]  # the first delivery went back to the stream
    errors = [
        r for r in caplog.records if r.name == "benchwright.bus" and r.levelno >= logging.ERROR
    ]
    assert errors == []
