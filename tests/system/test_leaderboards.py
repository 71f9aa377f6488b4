"""Registry reads over runs, end to end through the SDK (guide §4, §5.1, §7, §10, §14;
concepts §6, §7, §12): two accounts run the catalog's GSM8K pinned against fake models
that are right on every first, second or third problem, some runs public, some not.

The leaderboard shows the best public run per model; run listings, the same-impl
comparison and task ranges show the caller's own runs and public ones; an impl
frozen from a run holds that run's scorer, and a pinned run with it scores the same.
"""

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest

from benchwright import AsyncBenchwright, NotFoundError
from benchwright_registry.catalog import builtin_catalog
from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer, gsm8k_oracle

pytestmark = [pytest.mark.slow, pytest.mark.connected]

RUN_TIMEOUT = 180.0
CONVERGE_S = 20.0
PASSWORD = "a long enough password"


def gsm8k_rows() -> list[dict[str, Any]]:
    bench = next(b for b in builtin_catalog() if b.name == "GSM8K")
    return bench.subsets[0].load_rows()[:20]


@pytest.fixture
def models() -> Iterator[dict[str, FakeOpenAIServer]]:
    """Fake models right on every first ("good"), second ("half") or third ("third")
    GSM8K problem."""
    rows = gsm8k_rows()
    servers = {
        name: FakeOpenAIServer(gsm8k_oracle(rows, correct_every=every)).start()
        for name, every in (("good", 1), ("half", 2), ("third", 3))
    }
    yield servers
    for server in servers.values():
        server.stop()


async def new_account(platform: Platform, username: str, scopes: list[str]) -> str:
    """Another account, logged in, with a token of ``scopes``."""
    client = platform.client
    assert client is not None
    creds = json.loads((platform.settings.data_dir / "credentials.json").read_text())

    async def session(user: str, password: str) -> str:
        opened = await client.post("/v1/sessions", json={"username": user, "password": password})
        assert opened.status_code == 201, opened.text
        return str(opened.json()["token"])

    admin = await session(creds["login"]["username"], creds["login"]["password"])
    made = await client.post(
        "/v1/accounts",
        json={"username": username, "password": PASSWORD},
        headers={"Authorization": f"Bearer {admin}"},
    )
    assert made.status_code == 201, made.text
    theirs = await session(username, PASSWORD)
    minted = await client.post(
        "/v1/tokens",
        json={"label": "test", "scopes": scopes},
        headers={"Authorization": f"Bearer {theirs}"},
    )
    assert minted.status_code == 201, minted.text
    return str(minted.json()["token"])


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


def sut(models: dict[str, FakeOpenAIServer], name: str) -> dict[str, str]:
    return {"model": name, "provider": "openai_compatible", "api_base": models[name].base_url}


def model(name: str) -> str:
    """How the registry names a model: ``<provider>/<model>``."""
    return f"openai_compatible/{name}"


async def eventually[T](
    read: Callable[[], Awaitable[T]], check: Callable[[T], bool], what: str
) -> T:
    """The registry's views follow the run log: poll until ``check`` holds."""
    deadline = asyncio.get_running_loop().time() + CONVERGE_S
    while True:
        try:
            found = await read()
        except NotFoundError:
            # Not visible yet: a publish reaches the registry's view a moment later.
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.2)
            continue
        if check(found):
            return found
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{what} never converged: {found!r}")
        await asyncio.sleep(0.2)


async def finish(bw: AsyncBenchwright, run_id: str) -> Any:
    run = await bw.runs.wait(run_id, timeout=RUN_TIMEOUT, poll_interval=0.2)
    assert run.status == "ok", run.error
    return run


async def test_leaderboards_listings_comparisons_ranges_and_impls_from_runs(
    platform: Platform,
    clients: tuple[AsyncBenchwright, AsyncBenchwright],
    models: dict[str, FakeOpenAIServer],
) -> None:
    alice, bob = clients

    async def pinned(bw: AsyncBenchwright, name: str, limit: int) -> str:
        run = await bw.runs.launch(
            benchmark="GSM8K", sut=sut(models, name), metadata={"limit": limit}
        )
        return run.id

    # Alice: half (3/6) public, good (6/6) private, third (2/6) public.
    # Bob: good (6/6) public, half on 3 tasks (2/3) public, half (3/6) private.
    launched = await asyncio.gather(
        pinned(alice, "half", 6),
        pinned(alice, "good", 6),
        pinned(alice, "third", 6),
        pinned(bob, "good", 6),
        pinned(bob, "half", 3),
        pinned(bob, "half", 6),
    )
    a_half, a_good, a_third, b_good, b_half3, b_half = launched
    owners = [alice, alice, alice, bob, bob, bob]
    runs = {run_id: await finish(bw, run_id) for bw, run_id in zip(owners, launched, strict=True)}
    passes = {run_id: (r.summary.passed, r.summary.total) for run_id, r in runs.items()}
    assert [passes[r] for r in launched] == [(3, 6), (6, 6), (2, 6), (6, 6), (2, 3), (3, 6)]
    gsm8k = runs[a_half]
    bm_id, sub_id, impl_id = gsm8k.benchmark.id, gsm8k.subset.id, gsm8k.impl_id
    assert impl_id and all(r.impl_id == impl_id for r in runs.values())
    for bw, run_id in ((alice, a_half), (alice, a_third), (bob, b_good), (bob, b_half3)):
        await bw.runs.publish(run_id)

    # -- the leaderboard: the best public run per model, whoever reads it ------------------
    expected = [
        (1, model("good"), 1.0, b_good),
        (2, model("half"), pytest.approx(2 / 3), b_half3),
        (3, model("third"), pytest.approx(1 / 3), a_third),
    ]
    for bw in (alice, bob):
        # Every publish has to reach the registry's view, not just three of them.
        board = await eventually(
            lambda bw=bw: bw.registry.subsets.leaderboard(sub_id),
            lambda b: [(r.rank, r.model, r.pass_rate, r.run_id) for r in b.data] == expected,
            "the leaderboard",
        )
        assert [(r.rank, r.model, r.pass_rate, r.run_id) for r in board.data] == expected
        assert board.benchmark_id == bm_id and board.snapshot_ids == [sub_id]
    half_row = board.data[1]
    assert (half_row.runs, half_row.tasks, half_row.impl_id) == (2, 3, impl_id)
    # Three tasks say little: each rate carries its Wilson interval, and these overlap.
    for row in board.data:
        assert row.pass_rate_low is not None and row.pass_rate_high is not None
        assert row.pass_rate_low <= row.pass_rate <= row.pass_rate_high
    assert board.data[0].pass_rate_low < board.data[2].pass_rate_high

    # -- listings: your own runs, whatever their visibility, and public ones ----------------
    visible = {
        "alice": {a_half, a_good, a_third, b_good, b_half3},
        "bob": {b_good, b_half3, b_half, a_half, a_third},
    }
    own = {"alice": {a_half, a_good, a_third}, "bob": {b_good, b_half3, b_half}}
    for who, bw in (("alice", alice), ("bob", bob)):
        listed = await bw.registry.subsets.runs(sub_id)
        assert {r.run_id for r in listed.data} == visible[who]
        assert {r.run_id for r in listed.data if r.mine} == own[who]
        by_impl = await bw.registry.impls.runs(impl_id)
        assert [r.run_id for r in by_impl.data] == [r.run_id for r in listed.data]
        finished = [r.finished_at for r in listed.data]
        assert finished == sorted(finished, reverse=True)
        paged = [r.run_id async for r in bw.registry.subsets.iter_runs(sub_id)]
        assert paged == [r.run_id for r in listed.data]
    page = await alice.registry.subsets.runs(sub_id, limit=2)
    assert len(page.data) == 2 and page.next_page_token
    halves = await alice.registry.impls.runs(impl_id, model=model("half"))
    assert {r.run_id for r in halves.data} == {a_half, b_half3}
    row = next(r for r in halves.data if r.run_id == a_half)
    assert (row.benchmark_id, row.subset_id, row.impl_id, row.model) == (
        bm_id,
        sub_id,
        impl_id,
        model("half"),
    )
    assert (row.visibility, row.mine, row.pass_rate, row.tasks) == ("public", True, 0.5, 6)

    # -- the same-impl comparison: side by side by model -------------------------------------
    comparison = await alice.registry.impls.compare(impl_id)
    assert comparison.benchmark_id == bm_id
    assert [(r.model, r.runs, r.best_pass_rate) for r in comparison.data] == [
        (model("good"), 2, 1.0),
        (model("half"), 2, pytest.approx(2 / 3)),
        (model("third"), 1, pytest.approx(1 / 3)),
    ]
    assert comparison.data[0].best_run_id in {a_good, b_good}
    assert [r.best_run_id for r in comparison.data[1:]] == [b_half3, a_third]
    assert set(comparison.data[0].run_ids) == {a_good, b_good}
    assert comparison.data[1].mean_pass_rate == pytest.approx((0.5 + 2 / 3) / 2)

    # -- task ranges: which runs have results for which task indices --------------------------
    covering = await alice.registry.benchmarks.range(bm_id, 0, 5)
    assert (covering.start, covering.end) == (0, 5)
    by_run = {r.run_id: r for r in covering.data}
    assert set(by_run) == visible["alice"]
    assert (by_run[a_half].covered, by_run[a_half].complete) == (5, True)
    assert by_run[a_half].outcomes == {
        "0": "pass",
        "1": "fail",
        "2": "pass",
        "3": "fail",
        "4": "pass",
    }
    assert (by_run[a_half].range_passed, by_run[a_half].range_failed) == (3, 2)
    assert (by_run[b_half3].covered, by_run[b_half3].complete) == (3, False)
    assert by_run[a_third].outcomes["3"] == "pass" and by_run[a_third].outcomes["4"] == "fail"
    tail = await bob.registry.benchmarks.range(bm_id, 4, 6)
    assert {r.run_id for r in tail.data} == {b_good, b_half, a_half, a_third}
    assert all(r.complete and r.covered == 2 for r in tail.data)

    # -- hiding a run takes it off the leaderboard --------------------------------------------
    await bob.runs.update(b_good, visibility="private")
    board = await eventually(
        lambda: alice.registry.subsets.leaderboard(sub_id),
        lambda b: len(b.data) == 2,
        "the leaderboard after a run was hidden",
    )
    assert [r.model for r in board.data] == [model("half"), model("third")]
    assert b_good not in {r.run_id for r in (await alice.registry.subsets.runs(sub_id)).data}

    # -- an impl frozen from a run (guide §5.1, §7 step 4) ------------------------------------
    rows = [{k: r[k] for k in ("task_id", "input", "expected")} for r in gsm8k_rows()[:6]]
    mini = await alice.benchmarks.create(name="GSM8K mini", category="math", tags=["distilled"])
    sub = await alice.benchmarks.subsets.create(benchmark=mini.id, slug="first-six", tasks=rows)
    impl = await alice.impls.create_from_run(
        from_run=a_half, benchmark=mini.id, subset=sub.id, label="inherited from GSM8K"
    )
    assert impl.id.startswith(f"{mini.id}:") and impl.subset_id == sub.id
    assert impl.label == "inherited from GSM8K" and impl_id in impl.description
    setup = (await alice.runs.events(a_half, types=["SetupArtifact"])).data[-1]
    code = await alice.impls.code(impl.id)
    assert code == setup.data.code == await alice.registry.impls.code(impl_id)
    again = await alice.impls.create_from_run(from_run=a_half, subset=sub.id)
    assert again.id == impl.id  # content-addressed: the same code is the same impl
    with pytest.raises(NotFoundError):
        await bob.impls.create_from_run(from_run=a_half, subset=sub.id)
    with pytest.raises(NotFoundError):
        await alice.impls.create_from_run(from_run=b_half, subset=sub.id)

    rerun = await alice.runs.launch(
        benchmark=mini.id, subset=sub.id, impl=impl.id, sut=sut(models, "half")
    )
    rerun = await finish(alice, rerun.id)
    assert rerun.impl_id == impl.id
    assert (rerun.summary.passed, rerun.summary.total) == passes[a_half]
    mini_runs = await eventually(
        lambda: alice.registry.impls.runs(impl.id),
        lambda page: len(page.data) == 1,
        "the frozen impl's runs",
    )
    assert mini_runs.data[0].run_id == rerun.id and mini_runs.data[0].pass_rate == 0.5

    # A private benchmark's subset: an empty leaderboard for its owner, missing to others.
    assert (await alice.registry.subsets.leaderboard(sub.id)).data == []
    for call in (
        lambda: bob.registry.subsets.leaderboard(sub.id),
        lambda: bob.registry.subsets.runs(sub.id),
        lambda: bob.registry.impls.runs(impl.id),
        lambda: bob.registry.impls.compare(impl.id),
        lambda: bob.registry.benchmarks.range(mini.id, 0, 5),
    ):
        with pytest.raises(NotFoundError):
            await call()
    # Published, the run puts its benchmark on the registry and on the subset's leaderboard.
    await alice.runs.publish(rerun.id)
    board = await eventually(
        lambda: bob.registry.subsets.leaderboard(sub.id),
        lambda b: len(b.data) == 1,
        "the mini leaderboard",
    )
    assert (board.data[0].run_id, board.data[0].impl_id) == (rerun.id, impl.id)
    assert [r.run_id for r in (await bob.registry.impls.runs(impl.id)).data] == [rerun.id]


async def test_a_public_runs_phase_cells_serve_other_accounts(
    platform: Platform,
    clients: tuple[AsyncBenchwright, AsyncBenchwright],
    models: dict[str, FakeOpenAIServer],
) -> None:
    """The phase-cache index lives in the registry (decision 0012): a run reuses the cells
    of its own account's runs and of public runs, never of another account's private ones."""
    alice, bob = clients
    assert platform.client is not None
    carol = AsyncBenchwright(
        api_key=await new_account(platform, "carol", ["runs:read", "runs:write"]),
        base_url=str(platform.client.base_url).rstrip("/"),
    )
    body: dict[str, Any] = {
        "request": "Run GSM8K, first 3 tasks",
        "sut": sut(models, "half"),
        "driver": "builtin",
    }

    async def cells(bw: AsyncBenchwright) -> tuple[str, dict[str, Any]]:
        run = await finish(bw, (await bw.runs.launch(**body)).id)
        page = await bw.runs.events(run.id, types=["PhaseFingerprint"])
        return run.id, {e.data.phase: e.data.source_run_id for e in page.data}

    async with carol:
        bobs, seen = await cells(bob)
        assert seen == dict.fromkeys(("fetch", "analyze", "setup", "atomize"))
        # Bob's run is private: carol's identical run does all its own work.
        await asyncio.sleep(0.5)
        _, seen = await cells(carol)
        assert set(seen.values()) == {None}
        subset = (await bob.runs.get(bobs)).subset
        assert subset is not None
        await bob.runs.publish(bobs)
        # The registry's views follow the log: wait until bob's run reads as public there.
        await eventually(
            lambda: alice.registry.subsets.runs(subset.id),
            lambda page: bobs in {r.run_id for r in page.data},
            "bob's published run",
        )
        await asyncio.sleep(0.5)
        _, seen = await cells(alice)
        assert seen == dict.fromkeys(("fetch", "analyze", "setup", "atomize"), bobs)
