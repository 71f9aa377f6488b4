"""The registry's reads over runs in the SDK: leaderboards, run listings, the same-impl
comparison, task ranges and impls frozen from a run, sync and async, on the fake gateway."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from benchwright import AsyncBenchwright, Benchwright, ConflictError
from benchwright.registry import Leaderboard, RegistryRun, TaskRange

from .fakes import RUN_ID, TOKEN, FakeGateway, problem

SUB = "sub_0123456789ab"
IMPL = "bm_x:0123456789ab"
BM = "bm_x"


def registry_run(run_id: str = RUN_ID, **overrides: Any) -> dict[str, Any]:
    return {
        "object": "registry_run",
        "run_id": run_id,
        "model": "openrouter/qwen/qwen3-32b",
        "benchmark_id": BM,
        "subset_id": SUB,
        "impl_id": IMPL,
        "status": "ok",
        "visibility": "public",
        "mine": True,
        "pass_rate": 0.5,
        "tasks": 4,
        "passed": 2,
        "failed": 2,
        "trials": {"plan": {"k": 1}},
        "finished_at": "2026-04-01T10:00:00+00:00",
        **overrides,
    }


def page(*runs: dict[str, Any], token: str | None = None) -> httpx.Response:
    return httpx.Response(
        200, json={"object": "list", "data": list(runs), "next_page_token": token}
    )


IMPL_BODY = {
    "id": "bm_y:abcdefabcdef",
    "object": "impl",
    "benchmark_id": "bm_y",
    "subset_id": "sub_y",
    "label": "inherited",
    "sha256": "0" * 64,
}


def test_leaderboard_runs_compare_and_range(bw: Benchwright, gateway: FakeGateway) -> None:
    gateway.on(
        "GET",
        f"/v1/subsets/{SUB}/leaderboard",
        httpx.Response(
            200,
            json={
                "object": "leaderboard",
                "subset_id": SUB,
                "benchmark_id": BM,
                "snapshot_ids": [SUB],
                "data": [
                    {"rank": 1, "model": "a/b", "pass_rate": 0.75, "run_id": RUN_ID, "tasks": 4}
                ],
            },
        ),
    )
    board = bw.registry.subsets.leaderboard(SUB)
    assert isinstance(board, Leaderboard)
    assert (board.data[0].rank, board.data[0].model, board.data[0].pass_rate) == (1, "a/b", 0.75)

    second = "3f2b9c1e-0000-4000-8000-000000000002"
    gateway.on(
        "GET",
        f"/v1/subsets/{SUB}/runs",
        page(registry_run(), token="next"),
        page(registry_run(second, mine=False)),
    )
    runs = list(bw.registry.subsets.iter_runs(SUB, model="a/b"))
    assert [r.id for r in runs] == [RUN_ID, second] and isinstance(runs[0], RegistryRun)
    assert runs[0].trials is not None and runs[0].trials.plan.k == 1
    sent = gateway.seen("GET", f"/v1/subsets/{SUB}/runs")
    assert [r.url.params.get("page_token") for r in sent] == [None, "next"]
    assert sent[0].url.params["model"] == "a/b" and sent[0].url.params["limit"] == "100"

    gateway.on("GET", f"/v1/impls/{IMPL}/runs", page(registry_run()))
    listed = bw.registry.impls.runs(IMPL, limit=5)
    assert listed.data[0].impl_id == IMPL and listed.next_page_token is None
    assert gateway.seen("GET", f"/v1/impls/{IMPL}/runs")[0].url.params["limit"] == "5"

    gateway.on(
        "GET",
        f"/v1/impls/{IMPL}/compare",
        httpx.Response(
            200,
            json={
                "object": "impl_comparison",
                "impl_id": IMPL,
                "benchmark_id": BM,
                "data": [
                    {
                        "model": "a/b",
                        "subset_id": SUB,
                        "runs": 2,
                        "best_pass_rate": 0.75,
                        "mean_pass_rate": 0.5,
                        "best_run_id": RUN_ID,
                        "latest_run_id": second,
                        "run_ids": [second, RUN_ID],
                    }
                ],
            },
        ),
    )
    comparison = bw.registry.impls.compare(IMPL, subset=SUB)
    assert comparison.data[0].runs == 2 and comparison.data[0].best_run_id == RUN_ID
    assert gateway.seen("GET", f"/v1/impls/{IMPL}/compare")[0].url.params["subset"] == SUB

    gateway.on(
        "GET",
        f"/v1/benchmarks/{BM}/range",
        httpx.Response(
            200,
            json={
                "object": "task_range",
                "benchmark_id": BM,
                "start": 0,
                "end": 5,
                "data": [
                    {
                        **registry_run(),
                        "covered": 2,
                        "complete": False,
                        "outcomes": {"0": "pass", "1": "fail"},
                    }
                ],
            },
        ),
    )
    found = bw.registry.benchmarks.range(BM, 0, 5)
    assert isinstance(found, TaskRange) and found.data[0].outcomes == {"0": "pass", "1": "fail"}
    params = gateway.seen("GET", f"/v1/benchmarks/{BM}/range")[0].url.params
    assert (params["start"], params["end"]) == ("0", "5") and "subset" not in params


def test_create_from_run_posts_the_run_and_is_retried(
    bw: Benchwright, gateway: FakeGateway, sleeps: list[float]
) -> None:
    gateway.on(
        "POST",
        "/v1/impls/from_run",
        problem(503, "run log unavailable", "the orchestrator did not answer"),
        httpx.Response(201, json=IMPL_BODY),
    )
    impl = bw.impls.create_from_run(
        from_run=RUN_ID, benchmark="bm_y", subset="sub_y", label="inherited"
    )
    assert impl.id == IMPL_BODY["id"] and len(sleeps) == 1
    bodies = [json.loads(r.content) for r in gateway.seen("POST", "/v1/impls/from_run")]
    assert (
        bodies[0]
        == bodies[1]
        == {
            "from_run": RUN_ID,
            "benchmark": "bm_y",
            "subset": "sub_y",
            "label": "inherited",
            "description": "",
        }
    )
    gateway.on(
        "POST",
        "/v1/impls/from_run",
        problem(409, "run has no scorer", "no code yet", code="no_scorer"),
    )
    with pytest.raises(ConflictError):
        bw.registry.impls.create_from_run(RUN_ID, subset="sub_y")


@pytest.fixture
async def abw(gateway: FakeGateway) -> AsyncIterator[AsyncBenchwright]:
    async with AsyncBenchwright(
        api_key=TOKEN, base_url="http://bw.test", http_client=gateway.async_client()
    ) as client:
        yield client


async def test_the_async_client_reads_the_same(abw: AsyncBenchwright, gateway: FakeGateway) -> None:
    gateway.on("GET", f"/v1/subsets/{SUB}/runs", page(registry_run()))
    gateway.on("GET", f"/v1/impls/{IMPL}/runs", page(registry_run()))
    assert [r.run_id async for r in abw.registry.subsets.iter_runs(SUB)] == [RUN_ID]
    assert (await abw.registry.impls.runs(IMPL)).data[0].pass_rate == 0.5
    gateway.on("POST", "/v1/impls/from_run", httpx.Response(200, json=IMPL_BODY))
    impl = await abw.impls.create_from_run(RUN_ID, subset="sub_y")
    assert impl.label == "inherited"
    gateway.on(
        "GET",
        f"/v1/benchmarks/{BM}/range",
        httpx.Response(
            200, json={"object": "task_range", "benchmark_id": BM, "start": 3, "end": 4}
        ),
    )
    found = await abw.registry.benchmarks.range(BM, 3, 4, subset=SUB)
    assert (found.start, found.end, found.data) == (3, 4, [])
    params = gateway.seen("GET", f"/v1/benchmarks/{BM}/range")[0].url.params
    assert params["subset"] == SUB
