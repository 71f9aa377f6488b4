"""Agents survive the loss of the orchestrator and of the sandbox-manager (issue 22).

Production mode: the six services as ``benchwright serve`` processes against a
private nats-server and PostgreSQL. A Harbor run of the platform's own agent on the
benchwright-starter dataset, two trials per task, its scripted model slow enough
that a kill lands mid-attempt; the victim is killed with SIGKILL once some turns
are on record and started again two seconds later. Every run must finish ``ok``
with every trial scored exactly once and the exact pass count of the script; an
attempt the kill broke is run again from a fresh sandbox (attempt 2), never
continued from the half-changed one.
"""

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import machine_database_url, reset_postgres
from tests.support.harbor_scripts import DATASET_NAME, SOLVED, TASKS, dataset_files, starter_book
from tests.support.scripted_agent_model import ScriptedAgentServer
from tests.system.deployment import Deployment, PatientClient, PrivateNats

pytestmark = [pytest.mark.slow, pytest.mark.connected]

TRIALS = 2
# Each model turn takes this long: a trial is 2-4 turns, the run some seconds.
TURN_DELAY_S = 0.4
RESTART_AFTER_S = 2.0


def launch_body(model: ScriptedAgentServer) -> dict[str, Any]:
    return {
        "harness": "harbor",
        "sut": {"model": "scripted", "provider": "openai_compatible", "api_base": model.base_url},
        "metadata": {
            "harbor_harness": {
                "dataset": DATASET_NAME,
                "files": dataset_files(),
                "agent": "benchwright",
            }
        },
        "trials": {"plan": {"k": TRIALS}, "aggregator": {"name": "mean"}},
    }


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e["data"] for e in events if e["type"] == kind]


async def run_with_a_kill(
    deployment: Deployment, client: PatientClient, model: ScriptedAgentServer, victim: str
) -> dict[str, Any]:
    launched = await client.post("/v1/runs", json=launch_body(model))
    assert launched.status_code == 201, launched.text
    run_id = launched.json()["id"]
    for _ in range(600):
        events = await client.events(run_id)
        # Mid-agent: some turns recorded, and an attempt under way.
        if len(of_type(events, "AgentModelTurn")) >= 3:
            break
        await asyncio.sleep(0.05)
    settled = len(of_type(events, "MaterializeTaskResult"))
    assert settled < len(TASKS) * TRIALS, f"{victim}: the run finished before the kill"
    killed_at = time.monotonic()
    deployment.kill(victim)
    await asyncio.sleep(RESTART_AFTER_S)
    deployment.start(victim)
    done = await client.terminal(run_id)
    events = await client.events(run_id)
    rows = of_type(events, "MaterializeTaskResult")
    pairs = Counter((r["index"], r["trial"]) for r in rows)
    outcomes: dict[str, set[str]] = {}
    for r in rows:
        outcomes.setdefault(r["task_id"], set()).add(r["outcome"])
    return {
        "victim": victim,
        "status": done["status"],
        "error": done.get("error"),
        "trials": len(pairs),
        "doubled": sorted(p for p, n in pairs.items() if n > 1),
        "passed": {task for task, seen in outcomes.items() if seen == {"pass"}},
        "failed": {task for task, seen in outcomes.items() if seen == {"fail"}},
        "reruns": sum(1 for s in of_type(events, "AgentAttemptStarted") if s["attempt"] > 1),
        "crashed": sum(1 for e in of_type(events, "AgentAttemptEnded") if e["reason"] == "crashed"),
        "seconds": round(time.monotonic() - killed_at, 1),
    }


@pytest.mark.parametrize("victim", ["orchestrator", "sandbox-manager"])
async def test_a_service_killed_mid_agent_loses_no_trial(tmp_path: Path, victim: str) -> None:
    db_url = machine_database_url()
    if not db_url:
        pytest.skip("needs BW_TEST_DATABASE_URL (PostgreSQL)")
    reset_postgres(db_url)
    nats = PrivateNats(tmp_path / "nats")
    nats.start()
    await nats.ready()
    model = ScriptedAgentServer(starter_book(), delay_s=TURN_DELAY_S)
    model.start()
    deployment = Deployment(tmp_path, nats.url, db_url)
    try:
        deployment.start_all()
        async with deployment.client() as client:
            row = await run_with_a_kill(deployment, client, model, victim)
    finally:
        deployment.stop_all()
        nats.stop()
        model.stop()
    print(f"\n{row}")
    assert row["status"] == "ok", row
    assert row["trials"] == len(TASKS) * TRIALS and not row["doubled"], row
    assert row["passed"] == SOLVED and row["failed"] == set(TASKS) - SOLVED, row
    # The kill broke at least one attempt, which ran again from the task's files.
    assert row["reruns"] >= 1, row
