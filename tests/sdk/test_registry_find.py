"""``registry.benchmarks.find``: a client-side scan of the first 100 listed benchmarks for
an exact name, then an alias, then a name or alias containing what was asked; and the
per-kind breakdown a composite subset's leaderboard and run rows carry."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from benchwright import AsyncBenchwright, Benchwright
from benchwright.registry import KindTally

from .fakes import RUN_ID, TOKEN, FakeGateway


def benchmark(ident: str, name: str, *aliases: str) -> dict[str, Any]:
    return {"id": ident, "object": "benchmark", "name": name, "aliases": list(aliases)}


LISTING = [
    benchmark("bm_gauntlet", "BFCL v4 hard tasks"),
    benchmark("bm_bfcl", "BFCL", "bfcl", "bfcl v4", "berkeley function calling"),
    benchmark("bm_gsm8k", "GSM8K", "gsm-8k", "grade school math"),
    benchmark("bm_mine", "grade school math"),
]


def listing() -> httpx.Response:
    return httpx.Response(200, json={"object": "list", "data": LISTING, "next_page_token": None})


@pytest.mark.parametrize(
    ("asked", "found"),
    [
        ("BFCL v4", "bm_bfcl"),  # an alias beats a name that merely contains it
        ("bfcl", "bm_bfcl"),  # the exact name, case-insensitively
        ("Grade School Math", "bm_mine"),  # an exact name beats another's alias
        ("gsm-8K", "bm_gsm8k"),
        ("hard tasks", "bm_gauntlet"),  # then substrings of names ...
        ("berkeley", "bm_bfcl"),  # ... and of aliases
        ("MMLU", None),
    ],
)
def test_find_matches_names_then_aliases_then_substrings(
    bw: Benchwright, gateway: FakeGateway, asked: str, found: str | None
) -> None:
    gateway.on("GET", "/v1/benchmarks", listing())
    match = bw.registry.benchmarks.find(name=asked)
    assert (match.id if match else None) == found
    (request,) = gateway.seen("GET", "/v1/benchmarks")
    assert request.url.params["limit"] == "100"


def test_a_listed_benchmark_carries_its_aliases(bw: Benchwright, gateway: FakeGateway) -> None:
    gateway.on("GET", "/v1/benchmarks", listing())
    bfcl = bw.registry.benchmarks.list(limit=100).data[1]
    assert bfcl.aliases == ["bfcl", "bfcl v4", "berkeley function calling"]


@pytest.fixture
async def abw(gateway: FakeGateway) -> AsyncIterator[AsyncBenchwright]:
    async with AsyncBenchwright(
        api_key=TOKEN, base_url="http://bw.test", http_client=gateway.async_client()
    ) as client:
        yield client


async def test_the_async_find_matches_the_same(abw: AsyncBenchwright, gateway: FakeGateway) -> None:
    gateway.on("GET", "/v1/benchmarks", listing())
    found = await abw.registry.benchmarks.find(name="BFCL v4")
    assert found is not None and found.id == "bm_bfcl"


def test_leaderboard_rows_carry_the_per_kind_breakdown(
    bw: Benchwright, gateway: FakeGateway
) -> None:
    kinds = {
        "code": {"passed": 1, "failed": 1, "errored": 0, "total": 2, "pass_rate": 0.5},
        "math": {"passed": 0, "failed": 0, "errored": 1, "total": 1, "pass_rate": None},
    }
    row = {"rank": 1, "model": "a/b", "pass_rate": 0.5, "run_id": RUN_ID, "by_kind": kinds}
    gateway.on(
        "GET",
        "/v1/subsets/sub_x/leaderboard",
        httpx.Response(200, json={"object": "leaderboard", "subset_id": "sub_x", "data": [row]}),
    )
    (shown,) = bw.registry.subsets.leaderboard("sub_x").data
    assert shown.by_kind is not None
    assert shown.by_kind["code"] == KindTally(passed=1, failed=1, total=2, pass_rate=0.5)
    assert shown.by_kind["math"].pass_rate is None
