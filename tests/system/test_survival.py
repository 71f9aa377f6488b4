"""Survive the loss of any part: each service, and the nats-server, killed mid-Materialize.

Production mode: the six services as ``benchwright serve`` processes against a
private nats-server and PostgreSQL. One pinned GSM8K run per part; while it
sweeps, that part is killed with SIGKILL and started again two seconds later.
Every run must finish ``ok`` (not ``degraded``), every task scored exactly once,
the pass count exact, and the model never asked again for a task whose result
was on record before the kill. The table of what happened is printed.
"""

import asyncio
import math
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import machine_database_url, reset_postgres
from tests.support.fake_openai import FakeOpenAIServer, gsm8k_oracle
from tests.system.deployment import SERVICES, Deployment, PatientClient, PrivateNats
from tests.system.test_pinned_run import gsm8k_rows, launch_body

pytestmark = [pytest.mark.slow, pytest.mark.connected]

TASKS = 40
# Slow enough that the kill lands mid-sweep, fast enough to keep the test short.
MODEL_DELAY_S = 0.2
RESTART_AFTER_S = 2.0


class CountingModel:
    """The fake OpenAI-compatible model, recording which task each call was for, and when."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.oracle = gsm8k_oracle(rows)
        self.calls: list[tuple[float, int]] = []
        self.lock = threading.Lock()
        self.server = FakeOpenAIServer(self.answer, threaded=True)

    def answer(self, prompt: str) -> str:
        index = next(i for i, r in enumerate(self.rows) if r["input"]["question"].strip() in prompt)
        with self.lock:
            self.calls.append((time.monotonic(), index))
        time.sleep(MODEL_DELAY_S)
        return self.oracle(prompt)

    def calls_after(self, moment: float) -> Counter[int]:
        with self.lock:
            return Counter(i for t, i in self.calls if t >= moment)


FLOOD_RUNS = 6
FLOOD_TASKS = 30


async def concurrent_runs_through_restarts(
    deployment: Deployment, client: PatientClient, model: CountingModel
) -> list[dict[str, Any]]:
    """``FLOOD_RUNS`` runs at once; the orchestrator, then the sandbox-manager, restarted."""
    ids = []
    for _ in range(FLOOD_RUNS):
        launched = await client.post("/v1/runs", json=launch_body(model.server, limit=FLOOD_TASKS))
        assert launched.status_code == 201, launched.text
        ids.append(launched.json()["id"])
    for victim in ("orchestrator", "sandbox-manager"):
        for _ in range(300):
            counts = [len(settled_indices(await client.events(i))) for i in ids]
            if sum(counts) >= FLOOD_RUNS * FLOOD_TASKS // 4:
                break
            await asyncio.sleep(0.1)
        deployment.kill(victim)
        await asyncio.sleep(RESTART_AFTER_S)
        deployment.start(victim)
    found = []
    for run_id in ids:
        done = await client.terminal(run_id)
        events = await client.events(run_id)
        pairs = Counter(
            (e["data"]["index"], e["data"]["trial"])
            for e in events
            if e["type"] == "MaterializeTaskResult"
        )
        found.append(
            {
                "id": run_id,
                "status": done["status"],
                "display_status": done.get("display_status"),
                "tasks": len(pairs),
                "doubled": sorted(p for p, n in pairs.items() if n > 1),
                "passed": (done.get("summary") or {}).get("passed"),
            }
        )
    return found


def settled_indices(events: list[dict[str, Any]]) -> set[int]:
    return {e["data"]["index"] for e in events if e["type"] == "MaterializeTaskResult"}


async def run_with_a_kill(
    deployment: Deployment,
    nats: PrivateNats,
    client: PatientClient,
    model: CountingModel,
    victim: str,
) -> dict[str, Any]:
    """One run; ``victim`` killed once a quarter of its tasks are in. What happened, as a row."""
    launched = await client.post("/v1/runs", json=launch_body(model.server, limit=TASKS))
    assert launched.status_code == 201, launched.text
    run_id = launched.json()["id"]
    before: set[int] = set()
    for _ in range(600):
        before = settled_indices(await client.events(run_id))
        if len(before) >= TASKS // 4:
            break
        await asyncio.sleep(0.1)
    assert len(before) < TASKS, f"{victim}: the run finished before the kill"
    killed_at = time.monotonic()
    if victim == "nats-server":
        nats.kill()
        await asyncio.sleep(RESTART_AFTER_S)
        nats.start()
        await nats.ready()
    else:
        deployment.kill(victim)
        await asyncio.sleep(RESTART_AFTER_S)
        deployment.start(victim)
    done = await client.terminal(run_id)
    recovered_s = time.monotonic() - killed_at
    events = await client.events(run_id)
    results = [e for e in events if e["type"] == "MaterializeTaskResult"]
    pairs = Counter((e["data"]["index"], e["data"]["trial"]) for e in results)
    again = model.calls_after(killed_at)
    summary = done.get("summary") or {}
    return {
        "victim": victim,
        "status": done["status"],
        "display_status": done.get("display_status"),
        "tasks": len(pairs),
        "doubled": sorted(p for p, n in pairs.items() if n > 1),
        "passed": summary.get("passed"),
        "asked_again": sorted(i for i in before if again[i]),
        "lost_sandboxes": sum(e["type"] == "SandboxLost" for e in events),
        "seconds": round(recovered_s, 1),
        "error": done.get("error"),
    }


async def test_every_part_can_die_mid_run_without_losing_a_task(tmp_path: Path) -> None:
    db_url = machine_database_url()
    if not db_url:
        pytest.skip("needs BW_TEST_DATABASE_URL (PostgreSQL)")
    reset_postgres(db_url)
    nats = PrivateNats(tmp_path / "nats")
    nats.start()
    await nats.ready()
    model = CountingModel(gsm8k_rows()[:TASKS])
    model.server.start()
    deployment = Deployment(tmp_path, nats.url, db_url)
    rows: list[dict[str, Any]] = []
    try:
        deployment.start_all()
        async with deployment.client() as client:
            for _ in range(200):  # the registry loads its catalog on start
                probe = await client.get("/v1/benchmarks", params={"limit": 1})
                if probe.status_code == 200 and probe.json()["data"]:
                    break
                await asyncio.sleep(0.2)
            for victim in [*SERVICES, "nats-server"]:
                rows.append(await run_with_a_kill(deployment, nats, client, model, victim))
            flood = await concurrent_runs_through_restarts(deployment, client, model)
    finally:
        deployment.stop_all()
        nats.stop()
        model.server.stop()
    print("\nkilled            status  display    tasks  doubled  passed  asked-again  lost  s")
    for r in rows:
        print(
            f"{r['victim']:<17} {r['status']:<7} {r['display_status']:<10} {r['tasks']:>5}  "
            f"{len(r['doubled']):>7}  {r['passed']!s:>6}  {len(r['asked_again']):>11}  "
            f"{r['lost_sandboxes']:>4}  {r['seconds']}"
        )
    expected_passes = math.ceil(TASKS / 2)
    for r in rows:
        where = f"{r['victim']}: {r}"
        assert r["status"] == "ok" and r["display_status"] == "ok", where
        assert r["tasks"] == TASKS and not r["doubled"], where
        assert r["passed"] == expected_passes, where
        assert not r["asked_again"], where
    # Many runs at once, their results in many small batches, through a restart of the
    # orchestrator and of the sandbox-manager: no row lost, none doubled.
    for run in flood:
        assert run["status"] == "ok" and run["display_status"] == "ok", run
        assert run["tasks"] == FLOOD_TASKS and not run["doubled"], run
        assert run["passed"] == math.ceil(FLOOD_TASKS / 2), run
