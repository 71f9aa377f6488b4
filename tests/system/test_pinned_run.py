"""A pinned GSM8K run end to end through every service, against a fake model server."""

import asyncio
import json
from typing import Any

import httpx
import pytest

from benchwright_registry.catalog import builtin_catalog
from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer, gsm8k_oracle

pytestmark = [pytest.mark.slow, pytest.mark.connected]

PINNED_PHASES = ["fetch", "setup", "attach", "materialize", "report"]


def gsm8k_rows() -> list[dict[str, Any]]:
    bench = next(b for b in builtin_catalog() if b.name == "GSM8K")
    return bench.subsets[0].load_rows()


@pytest.fixture
def oracle_model() -> Any:
    server = FakeOpenAIServer(gsm8k_oracle(gsm8k_rows()[:20], correct_every=2)).start()
    yield server
    server.stop()


def launch_body(server: FakeOpenAIServer, limit: int = 10, **extra: Any) -> dict[str, Any]:
    return {
        "benchmark": "GSM8K",
        "sut": {
            "model": "fake-gsm8k",
            "provider": "openai_compatible",
            "api_base": server.base_url,
        },
        "metadata": {"limit": limit},
        **extra,
    }


async def test_pinned_run_scores_every_task(
    platform: Platform, oracle_model: FakeOpenAIServer
) -> None:
    client = platform.client
    assert client
    response = await client.post(
        "/v1/runs", json=launch_body(oracle_model), headers={"Idempotency-Key": "first-run"}
    )
    assert response.status_code == 201, response.text
    run = response.json()
    assert run["status"] == "running"
    assert run["benchmark"]["name"] == "GSM8K"

    done = await platform.wait_terminal(run["id"])
    assert done["status"] == "ok", (done["error"], done["phase"])
    assert done["display_status"] == "ok"
    assert done["summary"]["total"] == 10
    # Usage is reported in short windows by the proxy: the cost converges.
    done = await platform.wait_for(run["id"], lambda r: r["cost"]["model"]["calls"] == 10)
    assert done["cost"]["model"]["prompt_tokens"] > 0

    tasks = (await client.get(f"/v1/runs/{run['id']}/tasks")).json()
    # The oracle answers every second question right.
    assert tasks["summary"]["passed"] == 5
    assert tasks["summary"]["failed"] == 5
    assert tasks["summary"]["pass_rate"] == 0.5
    assert [t["outcome"] for t in tasks["data"]] == ["pass", "fail"] * 5
    failed = (await client.get(f"/v1/runs/{run['id']}/tasks", params={"passed": "false"})).json()
    assert {t["index"] for t in failed["data"]} == {1, 3, 5, 7, 9}

    payload = (
        await client.get(f"/v1/runs/{run['id']}/tasks/{tasks['data'][0]['id']}/payload")
    ).json()
    assert payload["expected"] == gsm8k_rows()[0]["expected"]
    assert "question" in payload["input"]
    assert "The answer is" in payload["output"]

    # The scorer reached the model only through the proxy, with the run's fake key.
    assert all(a == "" or not a.startswith("Bearer bw_proxy_") for a in oracle_model.state["auth"])

    events = (await client.get(f"/v1/runs/{run['id']}/events", params={"limit": 5000})).json()[
        "data"
    ]
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert events[0]["type"] == "RunLaunched"
    assert events[1]["type"] == "PipelineStarted"
    assert events[-1]["type"] == "PipelineFinished"
    started = [e["data"]["phase"] for e in events if e["type"] == "PhaseStarted"]
    completed = [e["data"]["phase"] for e in events if e["type"] == "PhaseCompleted"]
    assert started == completed == PINNED_PHASES
    types = {e["type"] for e in events}
    for expected_type in (
        "SandboxCreated",
        "SandboxKilled",
        "DatasetTasksArtifact",
        "ModelProxyArtifact",
        "MaterializeTaskResult",
        "MaterializeTaskAggregated",
        "ReportFile",
    ):
        assert expected_type in types
    created = next(e for e in events if e["type"] == "SandboxCreated")
    assert created["data"]["metadata"]["benchwright_role"] == "work"
    # No secret ever reaches the log.
    assert "bw_proxy_" not in json.dumps(events)

    paged = (
        await client.get(
            f"/v1/runs/{run['id']}/events",
            params={"after_seq": 3, "types": "PhaseStarted", "limit": 2},
        )
    ).json()
    assert [e["type"] for e in paged["data"]] == ["PhaseStarted", "PhaseStarted"]
    assert all(e["seq"] > 3 for e in paged["data"]) and paged["has_more"] is True

    # SSE: history then (nothing more) live, closing at the terminal event.
    streamed: list[dict[str, Any]] = []
    async with client.stream("GET", f"/v1/runs/{run['id']}/stream") as sse:
        assert sse.headers["content-type"].startswith("text/event-stream")
        async for line in sse.aiter_lines():
            if line.startswith("data:"):
                streamed.append(json.loads(line[5:]))
    assert [e["seq"] for e in streamed] == [e["seq"] for e in events]
    # A client that reconnects with Last-Event-ID gets only what came after it.
    resumed: list[int] = []
    middle = events[len(events) // 2]["seq"]
    headers = {"Last-Event-ID": str(middle)}
    async with client.stream("GET", f"/v1/runs/{run['id']}/stream", headers=headers) as sse:
        async for line in sse.aiter_lines():
            if line.startswith("data:"):
                resumed.append(json.loads(line[5:])["seq"])
    assert resumed == [e["seq"] for e in events if e["seq"] > middle]
    bad = await client.get(f"/v1/runs/{run['id']}/stream", headers={"Last-Event-ID": "not-a-seq"})
    assert bad.status_code == 400 and bad.json()["field"] == "Last-Event-ID"

    # The fingerprint recorded at the end is the one recomputed from the log now.
    assert len(done["fingerprint"]) == 12
    derivation = (await client.get(f"/v1/runs/{run['id']}/fingerprint")).json()
    assert derivation["matches"] is True and derivation["recomputed"] == done["fingerprint"]
    assert [r["type"] for r in derivation["records"]] == [
        "FetchArtifact",
        "DatasetTasksArtifact",
        "SetupArtifact",
        "ModelProxyArtifact",
    ]
    assert "proxy_url" not in json.dumps(derivation["records"])

    # The same idempotency key returns the same run, never a second one.
    again = await client.post(
        "/v1/runs", json=launch_body(oracle_model), headers={"Idempotency-Key": "first-run"}
    )
    assert again.status_code == 200 and again.json()["id"] == run["id"]
    reused = await client.post(
        "/v1/runs",
        json=launch_body(oracle_model, limit=3),
        headers={"Idempotency-Key": "first-run"},
    )
    assert reused.status_code == 409
    listed = (await client.get("/v1/runs")).json()["data"]
    assert [r["id"] for r in listed] == [run["id"]]


async def test_bad_launches_are_problems_and_create_nothing(
    platform: Platform, fake_model: FakeOpenAIServer
) -> None:
    client = platform.client
    assert client
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({"sut": {"model": "m", "provider": "openrouter"}}, 400, "request"),
        ({"benchmark": "GSM8K"}, 400, "sut"),
        ({"benchmark": "GSM8K", "sut": {"model": "m", "provider": "nope"}}, 400, "sut"),
        (launch_body(fake_model, limit=0), 400, "metadata.limit"),
        ({**launch_body(fake_model), "agent": "x"}, 400, ""),
        ({**launch_body(fake_model), "surprise": 1}, 400, "surprise"),
        ({**launch_body(fake_model), "benchmark": "No Such Bench"}, 404, "benchmark"),
        ({**launch_body(fake_model), "subset": "nope"}, 404, "subset"),
    ]
    for body, status, field in cases:
        response = await client.post("/v1/runs", json=body)
        assert response.status_code == status, (body, response.text)
        assert response.headers["content-type"].startswith("application/problem+json")
        problem = response.json()
        assert problem["status"] == status and problem["title"]
        if field:
            assert problem.get("field", "").startswith(field), problem
    assert (await client.get("/v1/runs")).json()["data"] == []
    unauthenticated = await httpx.AsyncClient(base_url=str(client.base_url)).get("/v1/runs")
    assert unauthenticated.status_code == 401
    missing = await client.get("/v1/runs/00000000-0000-0000-0000-000000000000")
    assert missing.status_code == 404


async def test_projection_rebuild_matches_live_view(
    platform: Platform, oracle_model: FakeOpenAIServer
) -> None:
    client = platform.client
    assert client
    ids = []
    for limit in (3, 4):
        r = await client.post("/v1/runs", json=launch_body(oracle_model, limit=limit))
        ids.append(r.json()["id"])
    for run_id in ids:
        await platform.wait_terminal(run_id)
    # Let the registry and billing projections catch up: sandbox and usage events
    # are relayed after commit (the relay polls each second as a fallback).
    await asyncio.sleep(2.0)
    for projection in ("runs", "run_summaries", "phase_cells", "ledger"):
        result = (await client.post(f"/v1/admin/projections/{projection}/rebuild")).json()
        assert result["applied"] > 0, result
        assert result["digest"] == result["before_digest"], projection
    tasks = (await client.get(f"/v1/runs/{ids[1]}/tasks")).json()
    assert tasks["summary"]["total"] == 4


async def test_humaneval_code_runs_in_the_sandbox(platform: Platform) -> None:
    """The code scorer executes the model's code against the tests, in the work sandbox."""
    bench = next(b for b in builtin_catalog() if b.name == "HumanEval")
    rows = bench.subsets[0].load_rows()[:4]
    solutions = {
        r["input"]["entry_point"]: r["input"]["prompt"] + r["expected"]["canonical_solution"]
        for r in rows
    }

    def answer(prompt: str) -> str:
        # Right code for the first two problems, code that fails its tests for the rest.
        for i, (entry, code) in enumerate(solutions.items()):
            if f"def {entry}(" in prompt:
                body = code if i < 2 else f"def {entry}(*args, **kwargs):\n    return None\n"
                return f"```python\n{body}\n```"
        return "no idea"

    server = FakeOpenAIServer(answer).start()
    try:
        client = platform.client
        assert client
        body = {**launch_body(server, limit=4), "benchmark": "HumanEval"}
        run = (await client.post("/v1/runs", json=body)).json()
        done = await platform.wait_terminal(run["id"])
        assert done["status"] == "ok", (done["error"], done["phase"])
        tasks = (await client.get(f"/v1/runs/{run['id']}/tasks")).json()
        assert [t["outcome"] for t in tasks["data"]] == ["pass", "pass", "fail", "fail"]
    finally:
        server.stop()


async def test_trials_run_k_times_and_reduce_by_the_aggregator(platform: Platform) -> None:
    rows = gsm8k_rows()[:4]
    calls: dict[str, int] = {}

    def answer(prompt: str) -> str:
        # Every question is answered right on its third attempt only.
        for row in rows:
            question = row["input"]["question"].strip()
            if question in prompt:
                calls[question] = calls.get(question, 0) + 1
                right = calls[question] % 3 == 0
                value = row["expected"] if right else "-1"
                return f"The answer is {value}."
        return "The answer is 0."

    server = FakeOpenAIServer(answer).start()
    try:
        client = platform.client
        assert client
        results = {}
        for aggregator in ("any_pass", "all_pass"):
            calls.clear()
            body = launch_body(
                server, limit=4, trials={"plan": {"k": 3}, "aggregator": {"name": aggregator}}
            )
            run = (await client.post("/v1/runs", json=body)).json()
            done = await platform.wait_terminal(run["id"])
            assert done["status"] == "ok", (done["error"], done["phase"])
            events = (
                await client.get(f"/v1/runs/{run['id']}/events", params={"limit": 5000})
            ).json()["data"]
            per_trial = [e for e in events if e["type"] == "MaterializeTaskResult"]
            rows_done = [e for e in events if e["type"] == "MaterializeTaskAggregated"]
            assert len(per_trial) == 12 and len(rows_done) == 4
            assert sorted((e["data"]["index"], e["data"]["trial"]) for e in per_trial) == [
                (i, t) for i in range(4) for t in range(3)
            ]
            assert all(len(e["data"]["trial_scores"]) == 3 for e in rows_done)
            assert events[0]["data"]["trials"]["plan"]["k"] == 3  # frozen on the run
            results[aggregator] = done["summary"]
            # Each trial's own result comes back on the rows and in the payload.
            listed = (
                await client.get(f"/v1/runs/{run['id']}/tasks", params={"sort": "-index"})
            ).json()
            assert (listed["version"], listed["versions"], listed["sort"]) == (1, [1], "-index")
            assert [t["index"] for t in listed["data"]] == [3, 2, 1, 0]
            for row in listed["data"]:
                assert [t["trial"] for t in row["trials"]] == [0, 1, 2]
                # One of the three calls for a question is answered right (which one
                # depends on the order the trials ran in).
                assert sorted(t["outcome"] for t in row["trials"]) == ["fail", "fail", "pass"]
                assert row["outcome"] == ("pass" if aggregator == "any_pass" else "fail")
            row = listed["data"][0]
            payload = (await client.get(f"/v1/runs/{run['id']}/tasks/{row['id']}/payload")).json()
            assert [t["output"] for t in payload["trials"]] == [
                e["data"]["output"]
                for e in sorted(per_trial, key=lambda e: e["data"]["trial"])
                if e["data"]["index"] == 3
            ]
            assert sorted(t["score"] for t in payload["trials"]) == [0.0, 0.0, 1.0]
            for params, field in (
                ({"version": 2}, "version"),
                ({"sort": "colour"}, "sort"),
                ({"page_token": "t1_2"}, "page_token"),
            ):
                refused = await client.get(f"/v1/runs/{run['id']}/tasks", params=params)
                assert refused.status_code == 400, (params, refused.text)
                assert refused.json()["field"] == field
        assert results["any_pass"]["passed"] == 4
        assert results["all_pass"]["failed"] == 4

        bad = await client.post(
            "/v1/runs",
            json=launch_body(server, trials={"plan": {"k": 2}, "aggregator": {"name": "best_of"}}),
        )
        assert bad.status_code == 400 and bad.json()["field"].startswith("trials.aggregator")
    finally:
        server.stop()


async def test_task_caps_take_the_narrowest_and_unenforced_limits_are_refused(
    platform: Platform, fake_model: FakeOpenAIServer
) -> None:
    client = platform.client
    assert client
    body = launch_body(
        fake_model, limit=5, limits={"run": {"tasks": 3}}, constraints={"max_tasks": 4}
    )
    run = (await client.post("/v1/runs", json=body)).json()
    done = await platform.wait_terminal(run["id"])
    assert done["summary"]["total"] == 3
    for extra, field in (
        ({"limits": {"attempt": {"attempts": 2}}}, "limits"),
        ({"limits": {"phase": {"tasks": 3}}}, "limits"),
        ({"limits": {"phase:lunch": {"duration": 3}}}, "limits"),
        ({"limits": {"galaxy": {"tasks": 1}}}, "limits"),
        ({"limits": {"run": {"tasks": -1}}}, "limits"),
        ({"constraints": {"max_cost_cents": -1}}, "constraints"),
    ):
        response = await client.post("/v1/runs", json=launch_body(fake_model, **extra))
        assert response.status_code == 400, (extra, response.text)
        assert response.json()["field"].startswith(field)


async def test_a_halted_run_stops_tears_down_and_stays_readable(platform: Platform) -> None:
    import time as _time

    def slow(prompt: str) -> str:
        _time.sleep(0.2)
        return "The answer is 1."

    server = FakeOpenAIServer(slow).start()
    try:
        client = platform.client
        assert client
        run = (await client.post("/v1/runs", json=launch_body(server, limit=40))).json()
        for _ in range(200):
            events = (await client.get(f"/v1/runs/{run['id']}/events")).json()["data"]
            if any(e["type"] == "MaterializeTaskAggregated" for e in events):
                break
            await asyncio.sleep(0.05)
        halted = await client.post(f"/v1/runs/{run['id']}/halt", json={"reason": "enough"})
        assert halted.status_code == 202, halted.text
        done = await platform.wait_terminal(run["id"], timeout=30)
        assert done["halted"] is True
        assert done["halt_reason"] == "operator_kill: enough"
        assert done["display_status"] == "killed"
        events = (await client.get(f"/v1/runs/{run['id']}/events", params={"limit": 5000})).json()[
            "data"
        ]
        types = [e["type"] for e in events]
        assert "RunHalted" in types and types[-1] == "PipelineFinished"
        assert "SandboxKilled" in types  # torn down
        failed = [e for e in events if e["type"] == "PhaseFailed"]
        assert failed and failed[-1]["data"]["error_type"] == "halted"
        aggregated = types.count("MaterializeTaskAggregated")
        assert 0 < aggregated < 40  # partial results are kept
        again = await client.post(f"/v1/runs/{run['id']}/halt")
        assert again.status_code == 409
    finally:
        server.stop()
