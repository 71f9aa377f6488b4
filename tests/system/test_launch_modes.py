"""Natural-language launches with the builtin Driver, replays, forks, limits, pauses,
reviews and deletion: through the public API, against every real service."""

import asyncio
import itertools
import json
import threading
import time
from typing import Any

import httpx
import pytest

from benchwright_registry.catalog import builtin_catalog
from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer, gsm8k_oracle

pytestmark = [pytest.mark.slow, pytest.mark.connected]


# Answers a duration-ceiling test's model gives before it holds the rest.
EARLY_ANSWERS = 2


def gsm8k_rows() -> list[dict[str, Any]]:
    bench = next(b for b in builtin_catalog() if b.name == "GSM8K")
    return bench.subsets[0].load_rows()


def sut(server: FakeOpenAIServer, model: str = "fake-gsm8k") -> dict[str, Any]:
    return {"model": model, "provider": "openai_compatible", "api_base": server.base_url}


@pytest.fixture
def oracle() -> Any:
    server = FakeOpenAIServer(gsm8k_oracle(gsm8k_rows()[:20], correct_every=2)).start()
    yield server
    server.stop()


async def events_of(client: httpx.AsyncClient, run_id: str) -> list[dict[str, Any]]:
    page = await client.get(f"/v1/runs/{run_id}/events", params={"limit": 5000})
    data: list[dict[str, Any]] = page.json()["data"]
    return data


def phases(events: list[dict[str, Any]]) -> list[str]:
    return [e["data"]["phase"] for e in events if e["type"] == "PhaseStarted"]


async def test_natural_language_run_finds_analyzes_and_writes_its_scorer(
    platform: Platform, oracle: FakeOpenAIServer
) -> None:
    client = platform.client
    assert client
    body = {
        "request": "Run GSM8K on the first 6 problems",
        "sut": sut(oracle),
        "driver": "builtin",
    }
    launched = await client.post("/v1/runs", json=body)
    assert launched.status_code == 201, launched.text
    run = launched.json()
    assert run["mode"] == "natural_language" and run["request"] == body["request"]
    done = await platform.wait_terminal(run["id"])
    assert done["status"] == "ok", (done["error"], done["phase"])
    assert done["benchmark"]["name"] == "GSM8K"
    assert done["summary"]["total"] == 6
    assert done["summary"]["passed"] == 3  # the oracle is right on every second problem
    events = await events_of(client, run["id"])
    assert phases(events) == [
        "find",
        "fetch",
        "analyze",
        "setup",
        "attach",
        "atomize",
        "materialize",
        "report",
    ]
    by_type = {e["type"]: e["data"] for e in events}
    assert by_type["DriverSelected"]["driver"] == "builtin"
    assert by_type["BenchmarkResolved"]["benchmark_name"] == "GSM8K"
    assert by_type["AnalyzeArtifact"]["kind"] == "math"
    atomized = by_type["AtomizeArtifact"]
    assert atomized["impl_id"] == done["impl_id"]
    assert done["impl_id"].startswith(done["benchmark"]["id"] + ":")
    assert len(done["impl_id"].split(":")[1]) == 12
    assert all(s == 1.0 for s in atomized["check"]["reference_scores"])
    assert all(s < 1.0 for s in atomized["check"]["wrong_scores"])
    assert "class Task(BenchTask)" in atomized["code"]
    # Snapshots at Fetch, Setup and Atomize exit; the Driver's tool use is on the log.
    assert [e["data"]["phase"] for e in events if e["type"] == "SnapshotCreated"] == [
        "fetch",
        "setup",
        "atomize",
    ]
    calls = [e for e in events if e["type"] == "ToolCallEvent"]
    results = [e for e in events if e["type"] == "ToolResultEvent"]
    assert {c["data"]["tool"] for c in calls} >= {"list_catalog", "sample_rows", "score_outputs"}
    assert len(calls) == len(results)
    derivation = (await client.get(f"/v1/runs/{run['id']}/fingerprint")).json()
    assert derivation["matches"] is True
    assert [r["type"] for r in derivation["records"]] == [
        "FetchArtifact",
        "AnalyzeArtifact",
        "DatasetTasksArtifact",
        "SetupArtifact",
        "ModelProxyArtifact",
        "AtomizeArtifact",
    ]


async def test_without_a_driver_key_a_launch_falls_back_to_builtin_and_says_so(
    platform: Platform, oracle: FakeOpenAIServer
) -> None:
    client = platform.client
    assert client
    run = (
        await client.post(
            "/v1/runs", json={"request": "Run GSM8K, first 2 tasks", "sut": sut(oracle)}
        )
    ).json()
    done = await platform.wait_terminal(run["id"])
    assert done["status"] == "ok", done["error"]
    selected = next(e for e in await events_of(client, run["id"]) if e["type"] == "DriverSelected")
    assert selected["data"]["driver"] == "builtin"
    assert "no" in selected["data"]["note"] and "key" in selected["data"]["note"]


async def test_replay_inherits_the_scorer_and_selection_and_swaps_the_model(
    platform: Platform, oracle: FakeOpenAIServer
) -> None:
    client = platform.client
    assert client
    anchor = (
        await client.post(
            "/v1/runs",
            json={"request": "Run GSM8K, first 6 tasks", "sut": sut(oracle), "driver": "builtin"},
        )
    ).json()
    anchor_done = await platform.wait_terminal(anchor["id"])
    assert anchor_done["status"] == "ok", anchor_done["error"]
    assert (anchor_done["compute"], anchor_done["backend"]) == ("default", "local")

    everything_right = FakeOpenAIServer(gsm8k_oracle(gsm8k_rows()[:20], correct_every=1)).start()
    try:
        replay = await client.post(
            "/v1/runs",
            json={
                "replay": {"from_run": anchor["id"]},
                "sut": sut(everything_right, "bigger-model"),
            },
        )
        assert replay.status_code == 201, replay.text
        done = await platform.wait_terminal(replay.json()["id"])
        assert done["status"] == "ok", done["error"]
        assert done["impl_id"] == anchor_done["impl_id"]
        assert done["derived_from"] == anchor["id"]
        assert done["backend"] == anchor_done["backend"]  # a replay stays where it ran
        assert done["model"]["model"] == "bigger-model"
        assert done["summary"]["total"] == 6 and done["summary"]["passed"] == 6
        assert done["fingerprint"] != anchor_done["fingerprint"]  # the model differs
        events = await events_of(client, done["id"])
        assert phases(events) == ["attach", "materialize", "report"]
        inherited = [e for e in events if e["data"].get("inherited_from") == anchor["id"]]
        assert {e["type"] for e in inherited} >= {"AtomizeArtifact", "DatasetTasksArtifact"}
        assert "ModelProxyArtifact" not in {e["type"] for e in inherited}
    finally:
        everything_right.stop()

    # The same model again: same fingerprint, a noise check.
    same = (await client.post("/v1/runs", json={"replay": {"from_run": anchor["id"]}})).json()
    same_done = await platform.wait_terminal(same["id"])
    assert same_done["fingerprint"] == anchor_done["fingerprint"]
    assert same_done["model"] == anchor_done["model"]

    # Only the failures, then a named slice.
    failed = (
        await client.post(
            "/v1/runs", json={"replay": {"from_run": anchor["id"], "only_failed": True}}
        )
    ).json()
    failed_done = await platform.wait_terminal(failed["id"])
    tasks = (await client.get(f"/v1/runs/{failed['id']}/tasks")).json()["data"]
    assert [t["index"] for t in tasks] == [1, 3, 5]
    assert failed_done["summary"]["total"] == 3
    anchor_tasks = (await client.get(f"/v1/runs/{anchor['id']}/tasks")).json()["data"]
    wanted = [anchor_tasks[0]["task_id"], anchor_tasks[4]["task_id"]]
    sliced = (
        await client.post(
            "/v1/runs", json={"replay": {"from_run": anchor["id"], "task_ids": wanted}}
        )
    ).json()
    await platform.wait_terminal(sliced["id"])
    tasks = (await client.get(f"/v1/runs/{sliced['id']}/tasks")).json()["data"]
    assert [t["task_id"] for t in tasks] == wanted

    for body, status, field in (
        ({"replay": {"from_run": anchor["id"], "task_ids": ["nope"]}}, 400, "replay.task_ids"),
        ({"replay": {"from_run": "0000"}}, 404, "replay.from_run"),
        ({"replay": {"from_run": anchor["id"]}, "request": "Run GSM8K"}, 400, "request"),
        ({"request": "Run GSM8K", "benchmark": "GSM8K", "sut": sut(oracle)}, 400, "request"),
        ({"request": "Run GSM8K", "driver": "gpt"}, 400, "driver"),
        ({"request": "Run GSM8K", "operator": "builtin"}, 400, ""),
        # An Inspect run names its task; the harnesses not supported say so.
        ({"request": "Run GSM8K", "harness": "inspect"}, 400, "metadata.inspect_harness"),
        ({"request": "Run GSM8K", "harness": "lmeval"}, 400, "harness"),
        ({"request": "Run GSM8K", "harness": "nope"}, 400, "harness"),
        ({"request": "Run GSM8K", "compute": "e2bb"}, 400, "compute"),
    ):
        response = await client.post("/v1/runs", json=body)
        assert response.status_code == status, (body, response.text)
        if field:
            assert response.json().get("field", "").startswith(field), response.json()


async def test_fork_rewinds_to_atomize_with_guidance_and_mints_a_new_impl(
    platform: Platform, oracle: FakeOpenAIServer
) -> None:
    client = platform.client
    assert client
    parent = (
        await client.post(
            "/v1/runs",
            json={"request": "Run GSM8K, first 4 tasks", "sut": sut(oracle), "driver": "builtin"},
        )
    ).json()
    parent_done = await platform.wait_terminal(parent["id"])
    forked = await client.post(
        f"/v1/runs/{parent['id']}/fork",
        json={"description": "Answer zero-shot: no worked examples.", "from_phase": "atomize"},
        headers={"Idempotency-Key": "fork-1"},
    )
    assert forked.status_code == 201, forked.text
    fork = forked.json()
    again = await client.post(
        f"/v1/runs/{parent['id']}/fork",
        json={"description": "Answer zero-shot: no worked examples.", "from_phase": "atomize"},
        headers={"Idempotency-Key": "fork-1"},
    )
    assert again.json()["id"] == fork["id"]
    done = await platform.wait_terminal(fork["id"])
    assert done["status"] == "ok", done["error"]
    assert done["derived_from"] == parent["id"] and done["mode"] == "fork"
    assert done["impl_id"] != parent_done["impl_id"]
    events = await events_of(client, fork["id"])
    assert phases(events) == ["fork", "atomize", "materialize", "report"]
    atomized = [
        e for e in events if e["type"] == "AtomizeArtifact" and not e["data"].get("inherited_from")
    ]
    assert "zero-shot" in atomized[-1]["data"]["code"]
    # Nothing upstream of the rewind point ran again: it was inherited.
    inherited = {e["type"] for e in events if e["data"].get("inherited_from") == parent["id"]}
    assert {"FetchArtifact", "AnalyzeArtifact", "SetupArtifact", "ModelProxyArtifact"} <= inherited
    bad = await client.post(
        f"/v1/runs/{parent['id']}/fork", json={"description": "x", "from_phase": "report"}
    )
    assert bad.status_code == 400 and bad.json()["field"] == "from_phase"
    swap = await client.post(
        f"/v1/runs/{parent['id']}/fork",
        json={"description": "x", "from_phase": "atomize", "sut": sut(oracle, "other")},
    )
    assert swap.status_code == 400 and swap.json()["field"] == "sut"


async def test_a_duration_ceiling_halts_the_run_and_a_task_ceiling_fails_only_its_task(
    platform: Platform,
) -> None:
    # The model answers two questions, then holds every other until the test ends: the
    # duration ceiling, not the machine's speed, decides how far the run gets.
    gate = threading.Event()
    answered = itertools.count()

    def slow(prompt: str) -> str:
        if "Janet" in prompt:
            time.sleep(2.5)
        elif next(answered) >= EARLY_ANSWERS:
            gate.wait(120)
        return "The answer is 1."

    server = FakeOpenAIServer(slow, threaded=True).start()
    try:
        client = platform.client
        assert client
        body = {
            "benchmark": "GSM8K",
            "sut": sut(server),
            "metadata": {"limit": 200},
            "limits": {"run": {"duration": 20}},
        }
        run = (await client.post("/v1/runs", json=body)).json()
        done = await platform.wait_terminal(run["id"], timeout=90)
        assert done["halted"] is True
        assert done["halt_reason"] == "limit_exceeded:run.duration"
        assert 0 < (done["summary"] or {}).get("total", 0) < 200
        gate.set()

        per_task = {
            "benchmark": "GSM8K",
            "sut": sut(server),
            "metadata": {"limit": 3},
            "limits": {"attempt": {"duration": 1}},
        }
        run = (await client.post("/v1/runs", json=per_task)).json()
        done = await platform.wait_terminal(run["id"], timeout=60)
        assert done["status"] == "ok" and not done["halted"]
        tasks = (await client.get(f"/v1/runs/{run['id']}/tasks")).json()["data"]
        assert [t["outcome"] for t in tasks] == ["err", "fail", "fail"]  # row 0 is Janet's
        assert tasks[0]["error_type"] == "limit_exceeded:task.duration"
    finally:
        gate.set()
        server.stop()


async def test_pause_resume_and_delete(platform: Platform) -> None:
    def slow(prompt: str) -> str:
        time.sleep(0.2)
        return "The answer is 1."

    server = FakeOpenAIServer(slow).start()
    try:
        client = platform.client
        assert client
        body = {"benchmark": "GSM8K", "sut": sut(server), "metadata": {"limit": 30}}
        run = (await client.post("/v1/runs", json=body)).json()
        not_paused = await client.post(f"/v1/runs/{run['id']}/resume")
        assert not_paused.status_code == 409 and not_paused.json()["code"] == "not_paused"
        for _ in range(300):
            if any(
                e["type"] == "MaterializeTaskResult" for e in await events_of(client, run["id"])
            ):
                break
            await asyncio.sleep(0.05)
        paused = await client.post(f"/v1/runs/{run['id']}/halt", json={"pause": True})
        assert paused.status_code == 202
        parked = await platform.wait_for(
            run["id"], lambda r: r["display_status"] == "paused", timeout=30
        )
        assert parked["status"] == "running" and parked["halted"] is True
        await asyncio.sleep(0.5)
        calls_when_paused = server.state["calls"]
        before = [
            e for e in await events_of(client, run["id"]) if e["type"] == "MaterializeTaskResult"
        ]
        assert 0 < len(before) < 30
        review = await client.patch(f"/v1/runs/{run['id']}", json={"review_resolution": "go"})
        assert review.status_code == 409 and review.json()["code"] == "not_waiting"
        resumed = await client.post(f"/v1/runs/{run['id']}/resume")
        assert resumed.status_code == 202, resumed.text
        done = await platform.wait_terminal(run["id"], timeout=60)
        assert done["status"] == "ok" and done["summary"]["total"] == 30, (
            done["error"],
            done["phase"],
        )
        # Tasks finished before the pause were not sent again; the rest were, and the
        # calls the pause cut off were answered from the proxy's record of them: the
        # model was asked once per task.
        assert calls_when_paused < 30
        assert server.state["calls"] == 30
        events = await events_of(client, run["id"])
        assert "HaltCleared" in {e["type"] for e in events}
        results = [e for e in events if e["type"] == "MaterializeTaskResult"]
        assert len({(e["data"]["index"], e["data"]["trial"]) for e in results}) == len(results)

        deleted = await client.delete(f"/v1/runs/{run['id']}")
        assert deleted.status_code == 200 and deleted.json()["deleted"] is True
        assert (await client.get(f"/v1/runs/{run['id']}")).status_code == 404
        assert (await client.get(f"/v1/runs/{run['id']}/events")).status_code == 404
        assert run["id"] not in json.dumps((await client.get("/v1/runs")).json())
    finally:
        server.stop()


async def test_a_repeat_run_reuses_cached_phases_and_atomize_keys_on_the_model(
    platform: Platform, oracle: FakeOpenAIServer
) -> None:
    client = platform.client
    assert client
    body = {"request": "Run GSM8K, first 3 tasks", "sut": sut(oracle), "driver": "builtin"}
    first = await platform.wait_terminal((await client.post("/v1/runs", json=body)).json()["id"])
    assert first["status"] == "ok", first["error"]
    await asyncio.sleep(0.5)  # the phase-cache index is a read model: let it catch up
    second = await platform.wait_terminal((await client.post("/v1/runs", json=body)).json()["id"])
    assert second["status"] == "ok", second["error"]
    events = await events_of(client, second["id"])
    prints = {e["data"]["phase"]: e["data"] for e in events if e["type"] == "PhaseFingerprint"}
    assert set(prints) == {"fetch", "analyze", "setup", "atomize"}
    assert all(p["cache_hit"] and p["source_run_id"] == first["id"] for p in prints.values())
    # No Driver work was done, and the run is the same experiment as the first.
    assert not any(
        e["type"] == "ToolCallEvent" for e in events if e["data"].get("phase") == "atomize"
    )
    assert second["impl_id"] == first["impl_id"]
    assert second["fingerprint"] == first["fingerprint"]
    assert (second["summary"]["passed"], second["summary"]["total"]) == (
        first["summary"]["passed"],
        first["summary"]["total"],
    )

    other_model = FakeOpenAIServer(gsm8k_oracle(gsm8k_rows()[:20], correct_every=1)).start()
    try:
        third = await platform.wait_terminal(
            (await client.post("/v1/runs", json={**body, "sut": sut(other_model, "other")})).json()[
                "id"
            ]
        )
    finally:
        other_model.stop()
    events = await events_of(client, third["id"])
    hits = {
        e["data"]["phase"]: e["data"]["cache_hit"]
        for e in events
        if e["type"] == "PhaseFingerprint"
    }
    # Fetch, Analyze and Setup are model-free; Atomize's key holds the model's config.
    assert hits == {"fetch": True, "analyze": True, "setup": True, "atomize": False}
    assert third["impl_id"] == first["impl_id"]  # the same code, so the same impl


async def test_a_cache_hit_after_a_miss_runs_on_the_inherited_snapshot(
    platform: Platform, oracle: FakeOpenAIServer
) -> None:
    """Another scope misses Analyze (a work sandbox is made for it from Fetch's
    snapshot), then hits Setup and Atomize: Materialize must run on the snapshot those
    brought (the scorer is in it), not in the sandbox Analyze used."""
    client = platform.client
    assert client
    body = {"request": "Run GSM8K, first 3 tasks", "sut": sut(oracle), "driver": "builtin"}
    first = await platform.wait_terminal((await client.post("/v1/runs", json=body)).json()["id"])
    assert first["status"] == "ok", first["error"]
    await asyncio.sleep(0.5)  # the phase-cache index is a read model: let it catch up
    narrower = {**body, "request": "Run GSM8K, first 2 tasks"}
    second = await platform.wait_terminal(
        (await client.post("/v1/runs", json=narrower)).json()["id"]
    )
    assert second["status"] == "ok", second["error"]
    assert second["summary"]["total"] == 2
    events = await events_of(client, second["id"])
    hits = {
        e["data"]["phase"]: e["data"]["cache_hit"]
        for e in events
        if e["type"] == "PhaseFingerprint"
    }
    assert hits == {"fetch": True, "analyze": False, "setup": True, "atomize": True}
