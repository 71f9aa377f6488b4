"""Two copies of every service on a three-node NATS cluster, one of each killed mid-run.

Production mode as a team would run it: a 3-node JetStream cluster (streams and
buckets at three replicas), PostgreSQL, two ``benchwright serve`` processes per
service, a load balancer in front of the proxy copies (model endpoint and egress
injector, one shared CA). Ten pinned runs of 40 tasks at once against a fake
model; while they sweep, one copy of every service and one NATS node are killed
with SIGKILL (the services restarted, the node not). Every run must finish
``ok``, every task scored exactly once, pass counts exact, the model never asked
again for a task on record before the kills, and every read model the same
after ``admin rebuild``.
"""

import asyncio
import contextlib
import json
import math
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet

from tests.conftest import machine_database_url, reset_postgres
from tests.support.fake_openai import FakeOpenAIServer, gsm8k_oracle
from tests.system.deployment import SERVICES, Balancer, Deployment, NatsCluster, PatientClient
from tests.system.test_pinned_run import gsm8k_rows, launch_body

pytestmark = [pytest.mark.slow, pytest.mark.connected]

RUNS = 10
TASKS = 40
MODEL_DELAY_S = 0.15
PROJECTIONS = ["runs", "ledger", "run_summaries", "phase_cells"]


class Model:
    """The fake model; each run names it differently (``fake-<n>``), so calls are told apart."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.oracle = gsm8k_oracle(rows)
        self.server = FakeOpenAIServer(self.answer, threaded=True)

    def answer(self, prompt: str) -> str:
        time.sleep(MODEL_DELAY_S)
        return self.oracle(prompt)

    def index(self, prompt: str) -> int:
        return next(i for i, r in enumerate(self.rows) if r["input"]["question"].strip() in prompt)

    def asked_after(self, moment: float) -> Counter[tuple[str, int]]:
        log = list(self.server.state.get("log", []))
        return Counter((m, self.index(p)) for t, m, p in log if t >= moment)


def body(model: Model, n: int) -> dict[str, Any]:
    launch = launch_body(model.server, limit=TASKS)
    launch["sut"]["model"] = f"fake-{n}"
    return launch


async def watch_lag(url: str, db_url: str, lags: list[tuple[float, int, int]]) -> None:
    """How far the gateway's runs view trails the run-log stream, every second."""
    import nats
    import psycopg

    nc = await nats.connect(servers=url.split(","))
    started = time.monotonic()
    try:
        while True:
            with contextlib.suppress(Exception):
                last = (await nc.jetstream().stream_info("BW_RUNS")).state.last_seq
                with psycopg.connect(db_url) as conn:
                    row = conn.execute(
                        "SELECT MAX(notification_id) FROM bw_gateway_views.gateway_tracking "
                        "WHERE application_name = 'runs'"
                    ).fetchone()
                lags.append((round(time.monotonic() - started, 1), last, int(row[0] or 0)))
            await asyncio.sleep(1)
    finally:
        await nc.close()


def view_of(db_url: str, run_id: str) -> dict[str, Any]:
    """What the gateway's runs view holds for a run, and how far the view has read."""
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(db_url, row_factory=dict_row) as conn:
        run = conn.execute(
            "SELECT status, final_status, final_total, last_seq FROM bw_gateway_views.runs "
            "WHERE run_id = %s",
            [run_id],
        ).fetchone()
        tasks = conn.execute(
            "SELECT invocation, COUNT(*) AS n, COUNT(outcome) AS settled "
            "FROM bw_gateway_views.tasks WHERE run_id = %s GROUP BY invocation",
            [run_id],
        ).fetchall()
        tracked = conn.execute(
            "SELECT application_name, MAX(notification_id) AS m, COUNT(*) AS n "
            "FROM bw_gateway_views.gateway_tracking GROUP BY application_name"
        ).fetchall()
    return {"run": run, "tasks": tasks, "tracked": tracked}


async def settled(client: PatientClient, run_id: str) -> set[int]:
    events = await client.events(run_id)
    return {e["data"]["index"] for e in events if e["type"] == "MaterializeTaskResult"}


async def test_two_copies_of_everything_survive_losing_one_of_each(tmp_path: Path) -> None:
    db_url = machine_database_url()
    if not db_url:
        pytest.skip("needs BW_TEST_DATABASE_URL (PostgreSQL)")
    reset_postgres(db_url)
    cluster = NatsCluster(tmp_path / "nats")
    cluster.start()
    await cluster.ready()
    model = Model(gsm8k_rows()[:TASKS])
    model.server.start()
    deployment = Deployment(tmp_path, cluster.url, db_url)
    model_lb = await Balancer(deployment.proxy_ports[:2]).start()
    egress_lb = await Balancer(deployment.injector_ports[:2]).start()
    deployment.env.update(
        {
            "BW_NATS_REPLICAS": "3",
            "BW_PROXY_PUBLIC_URL": model_lb.url,
            "BW_INJECTOR_PUBLIC_URL": egress_lb.url,
            "BW_INJECTOR_CA_DIR": str(tmp_path / "injector-ca"),
            # Every proxy copy opens the same vault and derives the same run keys.
            "BW_VAULT_KEY": Fernet.generate_key().decode(),
        }
    )
    lags: list[tuple[float, int, int]] = []
    monitor: asyncio.Task[None] | None = None
    try:
        # The first gateway alone first: it makes the admin login the test uses.
        deployment.start_all([s for s in SERVICES if s != "gateway"], copies=2)
        deployment.start("gateway", 0)
        await deployment.credentials()
        deployment.start("gateway", 1)
        if os.environ.get("BW_TEST_LAG"):
            monitor = asyncio.create_task(watch_lag(cluster.url, db_url, lags))
        async with deployment.client() as client:
            for _ in range(300):  # the registry loads its catalog on start
                probe = await client.get("/v1/benchmarks", params={"limit": 1})
                if probe.status_code == 200 and probe.json()["data"]:
                    break
                await asyncio.sleep(0.2)
            ids = []
            for n in range(RUNS):
                launched = await client.post("/v1/runs", json=body(model, n))
                assert launched.status_code == 201, launched.text
                ids.append(launched.json()["id"])
            for _ in range(600):
                done_before = {i: await settled(client, i) for i in ids}
                if sum(map(len, done_before.values())) >= RUNS * TASKS // 5:
                    break
                await asyncio.sleep(0.2)
            killed_at = time.monotonic()
            cluster.kill(1)  # a NATS node; the cluster goes on with two
            for service in SERVICES:
                deployment.kill(service, 1)
            await asyncio.sleep(2)
            for service in SERVICES:
                deployment.start(service, 1)
            finished = {}
            for run_id in ids:
                try:
                    finished[run_id] = await client.terminal(run_id, timeout=240)
                except TimeoutError:
                    events = await client.events(run_id)
                    tail = [(e["seq"], e["type"], str(e["data"])[:160]) for e in events[-25:]]
                    dump = tmp_path / "stuck.json"
                    view = view_of(db_url, run_id)
                    dump.write_text(
                        json.dumps(
                            {"events": events, "logs": deployment.logs(), "view": view}, default=str
                        )
                    )
                    raise AssertionError(f"{run_id} never finished: {tail}; see {dump}") from None
            rows = []
            for run_id in ids:
                events = await client.events(run_id)
                pairs = Counter(
                    (e["data"]["index"], e["data"]["trial"])
                    for e in events
                    if e["type"] == "MaterializeTaskResult"
                )
                errors = Counter(
                    f"{e['data'].get('error_type')}: {(e['data'].get('error') or '')[:120]}"
                    for e in events
                    if e["type"] == "MaterializeTaskResult" and e["data"]["outcome"] == "err"
                )
                rows.append((run_id, {**finished[run_id], "errors": errors}, pairs))
                if finished[run_id]["status"] != "ok":
                    (tmp_path / f"failed-{run_id}.json").write_text(json.dumps(events))
            asked_after = model.asked_after(killed_at)
            rebuilt = {}
            for name in PROJECTIONS:
                answer = await client.post(f"/v1/admin/projections/{name}/rebuild")
                assert answer.status_code == 200, answer.text
                rebuilt[name] = answer.json()
    except BaseException:
        (tmp_path / "logs.json").write_text(json.dumps(deployment.logs()))
        raise
    finally:
        if monitor is not None:
            monitor.cancel()
            print("\nlag (t, stream last, view max):", lags)
        deployment.stop_all()
        await model_lb.stop()
        await egress_lb.stop()
        cluster.stop()
        model.server.stop()
    expected = math.ceil(TASKS / 2)
    for run_id, done, pairs in rows:
        assert done["status"] == "ok" and done["display_status"] == "ok", (
            run_id,
            done.get("error"),
            done["errors"],
        )
        assert len(pairs) == TASKS and max(pairs.values()) == 1, (run_id, pairs)
        assert done["summary"]["passed"] == expected, (run_id, done["summary"], done["errors"])
    # No task with a result on record before the kills was asked again.
    again = [
        (n, i)
        for n, run_id in enumerate(ids)
        for i in done_before[run_id]
        if asked_after[(f"fake-{n}", i)]
    ]
    assert not again, again
    for name, result in rebuilt.items():
        assert result["digest"] == result["before_digest"], (name, result)
