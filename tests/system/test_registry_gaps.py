"""The registry, end to end through the SDK, where the guide's scenarios found it short:

* §4: ``bw.registry.benchmarks.find(name="BFCL v4")`` finds the catalog's BFCL, whose
  aliases the listing carries;
* §5.1: the impl a pipeline wrote (Atomize's code in a run's log) lives in the registry
  like any other: ``impls.get``, ``impls.code`` and ``impls.runs`` answer for it, to its
  run's account, and to everyone once one of its runs is public;
* §8.5-8.6: a run over a composite subset (rows carrying ``input.kind``) has a per-kind
  breakdown on the leaderboard and in the run listings.
"""

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from benchwright import AsyncBenchwright, NotFoundError
from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer, gsm8k_oracle
from tests.system.test_authoring import TASK_IMPL, arithmetic
from tests.system.test_leaderboards import eventually, finish, gsm8k_rows, new_account

pytestmark = [pytest.mark.slow, pytest.mark.connected]

# Tiny sums, each tagged with a kind; the calculator gets 13 + 29 wrong.
KINDS = {(2, 3): "small", (7, 5): "small", (13, 29): "large", (40, 2): "large", (11, 11): "small"}
COMPOSITE: list[dict[str, Any]] = [
    {
        "task_id": f"{kind}::sum-{a}-{b}",
        "input": {"kind": kind, "a": a, "b": b},
        "expected": str(a + b),
    }
    for (a, b), kind in KINDS.items()
]


@pytest.fixture
async def clients(platform: Platform) -> AsyncIterator[tuple[AsyncBenchwright, AsyncBenchwright]]:
    """Alice (the deployment's admin account) and Bob (a plain account)."""
    assert platform.client is not None
    base_url = str(platform.client.base_url).rstrip("/")
    bob_token = await new_account(
        platform, "bob", ["runs:read", "runs:write", "registry:read", "registry:publish"]
    )
    async with (
        AsyncBenchwright(api_key=platform.token, base_url=base_url) as alice,
        AsyncBenchwright(api_key=bob_token, base_url=base_url) as bob,
    ):
        yield alice, bob


@pytest.fixture
def servers() -> Iterator[dict[str, FakeOpenAIServer]]:
    found = {
        "gsm8k": FakeOpenAIServer(gsm8k_oracle(gsm8k_rows(), correct_every=2)).start(),
        "calc": FakeOpenAIServer(arithmetic).start(),
    }
    yield found
    for server in found.values():
        server.stop()


def sut(servers: dict[str, FakeOpenAIServer], name: str) -> dict[str, str]:
    return {"model": name, "provider": "openai_compatible", "api_base": servers[name].base_url}


async def test_find_by_an_alias(clients: tuple[AsyncBenchwright, AsyncBenchwright]) -> None:
    alice, _ = clients
    bm = await alice.registry.benchmarks.find(name="bfcl")
    assert bm is not None and bm.name == "BFCL v4" and "function-calling" in bm.tags
    assert "bfcl" in bm.aliases
    assert (await alice.registry.benchmarks.get(bm.id)).aliases == bm.aliases
    gsm8k = await alice.registry.benchmarks.find(name="gsm8k")
    assert gsm8k is not None and gsm8k.name == "GSM8K"


async def test_the_impl_a_pipeline_wrote_lives_in_the_registry(
    clients: tuple[AsyncBenchwright, AsyncBenchwright], servers: dict[str, FakeOpenAIServer]
) -> None:
    alice, bob = clients
    launched = await alice.runs.launch(
        request="Run GSM8K, first 3 tasks", sut=sut(servers, "gsm8k"), driver="builtin"
    )
    run = await finish(alice, launched.id)
    atomized = (await alice.runs.events(run.id, types=["AtomizeArtifact"])).data[-1]
    assert run.impl_id == atomized.data.impl_id and run.benchmark is not None

    impl = await eventually(
        lambda: alice.registry.impls.get(run.impl_id), lambda i: True, "the written impl"
    )
    assert (impl.id, impl.benchmark_id) == (run.impl_id, run.benchmark.id)
    assert impl.label == f"written by the builtin Driver for run {run.id}"
    assert impl.visibility == "private" and not impl.builtin
    assert await alice.registry.impls.code(impl.id) == atomized.data.code
    scored = await eventually(
        lambda: alice.registry.impls.runs(impl.id), lambda p: len(p.data) == 1, "its runs"
    )
    assert scored.data[0].run_id == run.id

    # Another account: missing, until the run is public.
    with pytest.raises(NotFoundError):
        await bob.registry.impls.get(impl.id)
    await alice.runs.publish(run.id)
    shown = await eventually(
        lambda: bob.registry.impls.get(impl.id), lambda i: i.visibility == "public", "public"
    )
    assert shown.id == impl.id
    assert await bob.registry.impls.code(impl.id) == atomized.data.code


async def test_a_composite_runs_per_kind_breakdown(
    clients: tuple[AsyncBenchwright, AsyncBenchwright], servers: dict[str, FakeOpenAIServer]
) -> None:
    alice, bob = clients
    bm = await alice.benchmarks.create(name="Sum Gauntlet", category="composite")
    sub = await alice.benchmarks.subsets.create(benchmark=bm.id, slug="v1", tasks=COMPOSITE)
    impl = await alice.impls.create(subset=sub.id, label="sums", code=TASK_IMPL)
    launched = await alice.runs.launch(
        benchmark=bm.id, subset=sub.id, impl=impl.id, sut=sut(servers, "calc")
    )
    run = await finish(alice, launched.id)
    assert (run.summary.passed, run.summary.total) == (4, 5)

    def tallies(by_kind: Any) -> dict[str, tuple[int, int, float]]:
        return {k: (v.passed, v.total, v.pass_rate) for k, v in (by_kind or {}).items()}

    want = {"large": (1, 2, 0.5), "small": (3, 3, 1.0)}
    listed = await eventually(
        lambda: alice.registry.subsets.runs(sub.id), lambda p: len(p.data) == 1, "the run"
    )
    assert tallies(listed.data[0].by_kind) == want

    await alice.runs.publish(run.id)
    board = await eventually(
        lambda: bob.registry.subsets.leaderboard(sub.id), lambda b: len(b.data) == 1, "board"
    )
    (row,) = board.data
    assert (row.run_id, row.pass_rate) == (run.id, 0.8)
    assert tallies(row.by_kind) == want
    assert row.by_kind is not None and row.by_kind["large"].failed == 1

    # Rows without kinds: no breakdown.
    plain = await alice.benchmarks.subsets.create(
        benchmark=bm.id,
        slug="plain",
        tasks=[{**t, "input": dict(t["input"], kind=None)} for t in COMPOSITE],
    )
    launched = await alice.runs.launch(
        benchmark=bm.id, subset=plain.id, impl=impl.id, sut=sut(servers, "calc")
    )
    await finish(alice, launched.id)
    listed = await eventually(
        lambda: alice.registry.subsets.runs(plain.id), lambda p: len(p.data) == 1, "plain run"
    )
    assert listed.data[0].by_kind is None
