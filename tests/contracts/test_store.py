"""Store contract: relay after commit, late subscribers, apply-once projections.

Runs against SQLite and PostgreSQL, and against both NATS servers.
"""

import asyncio
import json
import time
import uuid
from typing import Any

import nats
import pytest
from nats.js.api import DeliverPolicy

from benchwright_orchestrator.application import RunsApplication, translate_notification
from benchwright_orchestrator.domain import Run
from benchwright_shared import subjects
from benchwright_shared.bus import declare_streams
from benchwright_shared.projection import Projection, ProjectionStore, ViewCursor
from benchwright_shared.relay import Relay
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore, eventsourcing_env
from tests.conftest import machine_database_url

pytestmark = pytest.mark.connected


class CountingProjection(Projection):
    name = "counting"
    tables = {"counted": "k TEXT PRIMARY KEY, n INTEGER NOT NULL"}

    def apply(self, cur: ViewCursor, message: dict[str, Any]) -> None:
        cur.execute(
            f"INSERT INTO {cur.table('counted')} VALUES (?, 1) "
            "ON CONFLICT (k) DO UPDATE SET n = counted.n + 1",
            [message["k"]],
        )


def count(store: ProjectionStore) -> int:
    def read(cur: ViewCursor) -> int:
        cur.execute(f"SELECT SUM(n) AS total FROM {cur.table('counted')}")
        row = cur.fetchone()
        return int((row or {}).get("total") or 0)

    return store.read(read)


def test_a_position_applies_once_even_out_of_order(store_settings: Settings) -> None:
    store = ProjectionStore(store_settings, "testsvc", [CountingProjection()])
    try:
        for position in (5, 3, 5, 4, 3, 6):
            store.apply("counting", position, {"k": "a"})
        assert count(store) == 4  # 3, 4, 5, 6: redeliveries dropped, late arrivals kept
        before = store.digest("counting")
        store.reset("counting")
        assert count(store) == 0
        for position in (3, 4, 5, 6):
            store.apply("counting", position, {"k": "a"})
        assert store.digest("counting") == before
    finally:
        store.close()


def test_a_new_projection_version_starts_from_an_empty_view(store_settings: Settings) -> None:
    store = ProjectionStore(store_settings, "testsvc", [CountingProjection()])
    store.apply("counting", 1, {"k": "a"})
    store.close()
    same = ProjectionStore(store_settings, "testsvc", [CountingProjection()])
    assert count(same) == 1  # same version: kept
    same.close()

    class CountingV2(CountingProjection):
        version = 2

    bumped = ProjectionStore(store_settings, "testsvc", [CountingV2()])
    try:
        assert count(bumped) == 0
        assert bumped.max_position("counting") == 0
        assert bumped.apply("counting", 1, {"k": "a"})  # position 1 applies again
    finally:
        bumped.close()


def launch(app: RunsApplication) -> Run:
    from datetime import UTC, datetime

    from benchwright_shared.contracts import LaunchRun, SutRef

    run, _ = app.launch(
        LaunchRun(
            command_id="c",
            run_id=str(uuid.uuid4()),
            account="a",
            benchmark_id="bm",
            benchmark_name="B",
            subset_id="s",
            subset_slug="t",
            sut=SutRef(model="m", provider="local"),
            requested_at=datetime.now(UTC),
        )
    )
    return run


async def test_relay_publishes_in_order_and_late_subscribers_see_seq_zero(
    store_settings: Settings, nats_url: str
) -> None:
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    await declare_streams(js)
    app = RunsApplication(env=eventsourcing_env(store_settings, "orchestrator"))
    blocking = BlockingStore("t")
    relay = Relay(
        service="orchestrator",
        app=app,
        store=blocking,
        translate=translate_notification,
        stream=subjects.RUNS_STREAM,
    )
    try:
        run = launch(app)
        run.start_pipeline(["fetch"])
        for i in range(300):  # one save, many events: the batched hot path
            run.start_phase(f"p{i}")
        app.save(run)
        await relay.start(js)
        relay.wake()
        last = app.recorder.max_notification_id()
        await relay.wait_relayed(last)

        # A subscriber that starts after everything was relayed still sees seq 0 onwards.
        sub = await js.subscribe(
            subjects.run_log_subject(run.run_id),
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.ALL,
        )
        seqs = []
        for _ in range(302):
            msg = await sub.next_msg(timeout=5)
            seqs.append(json.loads(msg.data)["seq"])
        assert seqs == list(range(302))

        # A relay that crashed before recording its position republishes: JetStream drops it.
        await relay.stop()
        before = (await js.stream_info(subjects.RUNS_STREAM)).state.messages
        replay = Relay(
            service="orchestrator",
            app=app,
            store=blocking,
            translate=translate_notification,
            stream=subjects.RUNS_STREAM,
        )
        await replay._relay_once(js)  # starts from 0: every item is a duplicate
        await asyncio.sleep(0.2)
        assert (await js.stream_info(subjects.RUNS_STREAM)).state.messages == before
    finally:
        await relay.stop()
        await nc.close()
        app.close()
        blocking.close()


class PickyProjection(CountingProjection):
    """Counts, except a message it cannot take (as a bad row would make a real one fail)."""

    name = "picky"
    tables = {"counted": "k TEXT PRIMARY KEY, n INTEGER NOT NULL"}

    def apply(self, cur: ViewCursor, message: dict[str, Any]) -> None:
        if message.get("poison"):
            raise ValueError("cannot apply this one")
        super().apply(cur, message)


def test_a_message_that_cannot_be_applied_is_parked_and_the_rest_go_on(
    store_settings: Settings,
) -> None:
    store = ProjectionStore(store_settings, "pickysvc", [PickyProjection()])
    try:
        batch = [(1, {"k": "a"}), (2, {"k": "b", "poison": True}), (3, {"k": "a"})]
        assert store.apply_in_order_or_park("picky", batch, 0) == 2
        assert count(store) == 2
        later = [(4, {"k": "c"}), (5, {"k": "c", "poison": True})]
        assert store.apply_many_or_park("picky", later) == 1
        parked = store.parked("picky")
        assert [p["position"] for p in parked] == [2, 5]
        assert "cannot apply this one" in parked[0]["error"]
        assert json.loads(parked[0]["message"]) == {"k": "b", "poison": True}
        # Taken in: a redelivery skips it, and the feed goes on after it.
        assert store.max_position("picky") == 5
        assert store.apply_in_order_or_park("picky", [(6, {"k": "d"})], 5) == 1
        # A rebuild starts clean and parks it again.
        store.reset("picky")
        assert store.parked("picky") == []
    finally:
        store.close()


def test_a_database_that_is_away_is_not_a_bad_message() -> None:
    from eventsourcing.persistence import OperationalError

    from benchwright_shared.projection import is_infrastructure

    assert is_infrastructure(OperationalError("server closed the connection"))
    assert is_infrastructure(ConnectionResetError())
    assert not is_infrastructure(ValueError("bad row"))
    assert not is_infrastructure(KeyError("task_id"))


def test_a_connection_postgres_ended_is_not_a_bad_message() -> None:
    """PostgreSQL ends a session idle in a transaction too long; psycopg calls that an
    InternalError, which must not park the message a projection was applying."""
    url = machine_database_url()
    if url is None:
        pytest.skip("needs the machine's PostgreSQL (BW_TEST_DATABASE_URL)")
    import psycopg
    from eventsourcing.persistence import InternalError

    from benchwright_shared.projection import is_infrastructure

    with psycopg.connect(url) as conn:
        conn.execute("SET idle_in_transaction_session_timeout = '50ms'")
        conn.execute("SELECT 1")  # opens the transaction
        time.sleep(0.3)
        with pytest.raises(psycopg.Error) as ended:
            conn.execute("SELECT 1")
    assert is_infrastructure(ended.value)
    assert is_infrastructure(InternalError(str(ended.value)))
