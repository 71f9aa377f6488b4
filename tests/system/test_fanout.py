"""Fanout Materialize end to end: a task sandbox per task, restored from Atomize's
snapshot, a bounded number alive at once, every one killed, halts included."""

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwright_registry.catalog import builtin_catalog
from tests.conftest import Platform, platform_settings
from tests.support.fake_openai import FakeOpenAIServer, gsm8k_oracle

pytestmark = [pytest.mark.slow, pytest.mark.connected]

OUTCOME_KEYS = ("total", "passed", "failed", "errored", "pass_rate")


def gsm8k_rows() -> list[dict[str, Any]]:
    bench = next(b for b in builtin_catalog() if b.name == "GSM8K")
    return bench.subsets[0].load_rows()


def sut(server: FakeOpenAIServer) -> dict[str, Any]:
    return {"model": "fake-gsm8k", "provider": "openai_compatible", "api_base": server.base_url}


async def start(tmp_path: Path, mode: str) -> Platform:
    settings = platform_settings(tmp_path / mode, None, None).model_copy(
        update={"materialize_mode": mode}
    )
    return await Platform(settings).start()


@pytest.fixture
async def fanout(tmp_path: Path) -> AsyncIterator[Platform]:
    platform = await start(tmp_path, "fanout")
    yield platform
    await platform.shutdown()


@pytest.fixture
def oracle() -> Any:
    def answer(prompt: str) -> str:
        time.sleep(0.1)  # slow enough for task sandboxes to overlap
        return right_every_second(prompt)

    right_every_second = gsm8k_oracle(gsm8k_rows()[:20], correct_every=2)
    server = FakeOpenAIServer(answer, threaded=True).start()
    yield server
    server.stop()


async def events_of(client: httpx.AsyncClient, run_id: str) -> list[dict[str, Any]]:
    page = await client.get(f"/v1/runs/{run_id}/events", params={"limit": 5000})
    data: list[dict[str, Any]] = page.json()["data"]
    return data


def created(events: list[dict[str, Any]], role: str) -> list[dict[str, Any]]:
    return [
        e["data"]
        for e in events
        if e["type"] == "SandboxCreated" and e["data"]["metadata"]["benchwright_role"] == role
    ]


def killed_ids(events: list[dict[str, Any]]) -> set[str]:
    return {e["data"]["sandbox_id"] for e in events if e["type"] == "SandboxKilled"}


def most_alive(events: list[dict[str, Any]], ids: set[str]) -> int:
    """The most of ``ids`` alive at once, replaying creations and kills in log order."""
    alive: set[str] = set()
    most = 0
    for e in events:
        sandbox_id = e["data"].get("sandbox_id")
        if sandbox_id not in ids:
            continue
        if e["type"] == "SandboxCreated":
            alive.add(sandbox_id)
            most = max(most, len(alive))
        elif e["type"] == "SandboxKilled":
            alive.discard(sandbox_id)
    return most


def live_sandbox_dirs(platform: Platform) -> list[str]:
    """Sandboxes the local backend still holds on disk (a kill removes its directory)."""
    root = platform.settings.data_dir / "sandbox-manager" / "sandboxes"
    return sorted(p.name for p in root.glob("*/local/*"))


async def launch(platform: Platform, body: dict[str, Any]) -> dict[str, Any]:
    assert platform.client
    launched = await platform.client.post("/v1/runs", json=body)
    assert launched.status_code == 201, launched.text
    run: dict[str, Any] = launched.json()
    return run


async def test_fanout_runs_each_task_in_its_own_sandbox_and_scores_like_sequential(
    fanout: Platform, oracle: FakeOpenAIServer, tmp_path: Path
) -> None:
    body = {
        "request": "Run GSM8K, first 6 tasks",
        "driver": "builtin",
        "sut": sut(oracle),
        "trials": {"plan": {"k": 2}},
    }
    # The same launch, sequentially, is the reference.
    sequential = await start(tmp_path, "sequential")
    try:
        reference = await sequential.wait_terminal((await launch(sequential, body))["id"])
        assert sequential.client
        reference_events = await events_of(sequential.client, reference["id"])
        reference_tasks = (await sequential.client.get(f"/v1/runs/{reference['id']}/tasks")).json()[
            "data"
        ]
    finally:
        await sequential.shutdown()
    assert reference["status"] == "ok", reference["error"]
    assert created(reference_events, "task") == []
    assert any(
        "materialize mode: sequential" in e["data"]["text"]
        for e in reference_events
        if e["type"] == "AgentTextEvent"
    )

    client = fanout.client
    assert client
    run = await launch(fanout, body)
    done = await fanout.wait_terminal(run["id"])
    assert done["status"] == "ok", (done["error"], done["phase"])
    assert done["summary"]["total"] == 6 and done["summary"]["passed"] == 3
    assert {k: done["summary"][k] for k in OUTCOME_KEYS} == {
        k: reference["summary"][k] for k in OUTCOME_KEYS
    }
    tasks = (await client.get(f"/v1/runs/{run['id']}/tasks")).json()["data"]
    assert [(t["index"], t["outcome"]) for t in tasks] == [
        (t["index"], t["outcome"]) for t in reference_tasks
    ]

    events = await events_of(client, run["id"])
    said = [e["data"]["text"] for e in events if e["type"] == "AgentTextEvent"]
    assert "materialize mode: fanout (set by BW_MATERIALIZE_MODE)" in said

    # k = 2: two trials per task, each recorded once, and one aggregate per task.
    results = [e["data"] for e in events if e["type"] == "MaterializeTaskResult"]
    assert sorted((r["index"], r["trial"]) for r in results) == [
        (i, t) for i in range(6) for t in range(2)
    ]
    aggregated = [e["data"] for e in events if e["type"] == "MaterializeTaskAggregated"]
    assert sorted(a["index"] for a in aggregated) == list(range(6))
    assert all(len(a["trial_scores"]) == 2 for a in aggregated)

    # One task sandbox per task beside the one work sandbox, each restored from
    # the post-atomize snapshot, and every one of them killed by the end.
    work, task_sandboxes = created(events, "work"), created(events, "task")
    assert len(work) == 1 and len(task_sandboxes) == 6
    atomize_snapshot = next(
        e["data"]["snapshot_id"]
        for e in events
        if e["type"] == "SnapshotCreated" and e["data"]["phase"] == "atomize"
    )
    assert all(s["metadata"]["from_snapshot"] == atomize_snapshot for s in task_sandboxes)
    task_ids = {s["sandbox_id"] for s in task_sandboxes}
    assert task_ids | {work[0]["sandbox_id"]} <= killed_ids(events)
    assert {
        e["data"]["reason"]
        for e in events
        if e["type"] == "SandboxKilled" and e["data"]["sandbox_id"] in task_ids
    } == {"task_finished"}
    assert live_sandbox_dirs(fanout) == []

    # Never more task sandboxes at once than the platform allows, and more than one.
    most = most_alive(events, task_ids)
    assert 2 <= most <= fanout.settings.task_concurrency, most


async def test_a_halt_mid_fanout_kills_every_task_sandbox(fanout: Platform) -> None:
    def slow(prompt: str) -> str:
        time.sleep(0.5)
        return "The answer is 1."

    server = FakeOpenAIServer(slow, threaded=True).start()
    try:
        client = fanout.client
        assert client
        run = await launch(
            fanout,
            {"request": "Run GSM8K, first 20 tasks", "driver": "builtin", "sut": sut(server)},
        )
        for _ in range(600):
            events = await events_of(client, run["id"])
            if any(e["type"] == "MaterializeTaskResult" for e in events):
                break
            await asyncio.sleep(0.05)
        halted = await client.post(f"/v1/runs/{run['id']}/halt", json={"reason": "enough"})
        assert halted.status_code == 202, halted.text
        done = await fanout.wait_terminal(run["id"], timeout=60)
        assert done["halted"] is True and done["halt_reason"] == "operator_kill: enough"

        events = await events_of(client, run["id"])
        failed = [e["data"] for e in events if e["type"] == "PhaseFailed"]
        assert [(f["phase"], f["error_type"]) for f in failed] == [("materialize", "halted")]
        assert 0 < done["summary"]["total"] < 20  # partial results are kept
        task_ids = {s["sandbox_id"] for s in created(events, "task")}
        assert task_ids and task_ids <= killed_ids(events)
        assert most_alive(events, task_ids) <= fanout.settings.task_concurrency
        # Nothing is left on the backend either, not even a sandbox asked for mid-halt.
        assert live_sandbox_dirs(fanout) == []
    finally:
        server.stop()
