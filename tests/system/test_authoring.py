"""Authoring end to end through the SDK (guide section 6, and the rolling subsets of
section 9): a benchmark, a subset of tiny sums and a scorer, a pinned run against a
fake model, another account that sees none of it, and a rolling subset whose
appends make snapshots that runs pin."""

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from benchwright import (
    AsyncBenchwright,
    BadRequestError,
    Benchwright,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
)
from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = [pytest.mark.slow, pytest.mark.connected]

RUN_TIMEOUT = 120.0
PAIRS = [(2, 3), (7, 5), (13, 29), (40, 2), (11, 11)]
TASKS = [
    {"task_id": f"sum-{a}-{b}", "input": {"a": a, "b": b}, "expected": str(a + b)} for a, b in PAIRS
]
# The model gets every sum right but 13 + 29.
WRONG = {(13, 29)}
TASK_IMPL = '''\
import re

from bench_task import BenchTask


class Task(BenchTask):
    """Ask for a sum; pass when the reply's last number is it."""

    def solve(self, index, input):
        prompt = f"What is {input['a']} + {input['b']}? Reply with the number."
        return self.complete(prompt, max_tokens=16, temperature=0)

    def score(self, index, output, expected):
        numbers = re.findall(r"-?[0-9]+", output or "")
        return 1.0 if numbers and numbers[-1] == str(expected) else 0.0
'''
SUM = re.compile(r"What is (\d+) \+ (\d+)\?")


def arithmetic(prompt: str) -> str:
    found = SUM.search(prompt)
    if not found:
        return "I do not know."
    a, b = int(found.group(1)), int(found.group(2))
    return f"The sum is {a + b + (1 if (a, b) in WRONG else 0)}"


@pytest.fixture
def calculator() -> Any:
    server = FakeOpenAIServer(arithmetic).start()
    yield server
    server.stop()


def sut(server: FakeOpenAIServer) -> dict[str, str]:
    return {"model": "calc", "provider": "openai_compatible", "api_base": server.base_url}


@pytest.fixture
async def alice(platform: Platform) -> AsyncIterator[AsyncBenchwright]:
    assert platform.client is not None
    async with AsyncBenchwright(
        api_key=platform.token, base_url=str(platform.client.base_url).rstrip("/")
    ) as bw:
        yield bw


async def new_account(platform: Platform, username: str, scopes: list[str]) -> str:
    """A second account, logged in, with a token of ``scopes``."""
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
        json={"username": username, "password": "a long enough password"},
        headers={"Authorization": f"Bearer {admin}"},
    )
    assert made.status_code == 201, made.text
    theirs = await session(username, "a long enough password")
    minted = await client.post(
        "/v1/tokens",
        json={"label": "test", "scopes": scopes},
        headers={"Authorization": f"Bearer {theirs}"},
    )
    assert minted.status_code == 201, minted.text
    return str(minted.json()["token"])


async def test_author_a_benchmark_and_run_it_pinned(
    platform: Platform, alice: AsyncBenchwright, calculator: FakeOpenAIServer
) -> None:
    bm = await alice.benchmarks.create(
        name="Tiny Arithmetic",
        description="Five sums of two small numbers.",
        category="math",
        tags=["arithmetic", "tiny"],
    )
    assert bm.id.startswith("bm_") and bm.visibility == "private" and bm.subsets == []
    sub = await alice.benchmarks.subsets.create(
        benchmark=bm.id, slug="v1", name="Five sums", tasks=TASKS
    )
    assert (sub.task_count, sub.rolling, sub.snapshot_id) == (5, False, sub.id)
    impl = await alice.impls.create(
        benchmark=bm.id, subset=sub.id, label="last number", language="python", code=TASK_IMPL
    )
    assert impl.id.startswith(f"{bm.id}:") and len(impl.id.split(":")[1]) == 12
    # Immutable and content-addressed: the same code again is the same impl.
    assert (await alice.impls.create(subset=sub.id, code=TASK_IMPL)).id == impl.id
    assert await alice.impls.code(impl.id) == TASK_IMPL
    assert (await alice.registry.impls.get(impl.id)).label == "last number"
    detail = await alice.registry.benchmarks.get(bm.id)
    assert [s.id for s in detail.subsets] == [sub.id] and [i.id for i in detail.impls] == [impl.id]
    assert (await alice.registry.benchmarks.find("tiny arith")) is not None
    listed = await alice.registry.benchmarks.list(tag="TINY")
    assert [b.id for b in listed.data] == [bm.id]
    with_builtins = await alice.registry.benchmarks.list(tag="arithmetic")
    assert bm.id in [b.id for b in with_builtins.data]

    run = await alice.runs.launch(benchmark=bm.id, subset=sub.id, impl=impl.id, sut=sut(calculator))
    done = await alice.runs.wait(run.id, timeout=RUN_TIMEOUT, poll_interval=0.2)
    assert done.status == "ok", (done.phase, done.halt_reason, done.summary)
    assert done.impl_id == impl.id
    assert done.benchmark is not None and done.benchmark.id == bm.id
    assert done.subset is not None and done.subset.id == sub.id
    tasks = await alice.runs.tasks(run.id)
    assert (tasks.summary.total, tasks.summary.passed, tasks.summary.failed) == (5, 4, 1)
    failed = [t.task_id for t in tasks.data if t.outcome == "fail"]
    assert failed == ["sum-13-29"]
    payload = await tasks.payload(tasks.data[0].id)
    assert payload.expected == "5" and payload.input == {"a": 2, "b": 3}
    assert calculator.state["calls"] == 5

    # Without an impl, a pin runs the latest official one; none is official yet, so
    # the admin (this deployment's first token) promotes it.
    promoted = await alice.impls.update(impl.id, official=True)
    assert promoted.official
    again = await alice.runs.launch(
        benchmark="Tiny Arithmetic", impl="latest:official", sut=sut(calculator)
    )
    again = await alice.runs.wait(again.id, timeout=RUN_TIMEOUT, poll_interval=0.2)
    assert again.status == "ok" and again.impl_id == impl.id

    # -- another account sees nothing of it, exactly as if it did not exist ------------------
    bob_token = await new_account(
        platform, "bob", ["registry:read", "registry:publish", "runs:read", "runs:write"]
    )
    missing_bm = "bm_00000000-0000-4000-8000-00000000dead"
    async with AsyncBenchwright(api_key=bob_token, base_url=alice.base_url) as bob:

        async def problem(call: Any) -> dict[str, Any]:
            with pytest.raises(NotFoundError) as exc:
                await call
            body = dict(exc.value.problem)
            body.pop("detail", None)  # names the id asked for
            return body

        theirs = await problem(bob.registry.benchmarks.get(bm.id))
        assert theirs == await problem(bob.registry.benchmarks.get(missing_bm))
        assert theirs["status"] == 404
        for call in (
            bob.registry.subsets.get(sub.id),
            bob.registry.subsets.tasks(sub.id),
            bob.registry.impls.get(impl.id),
            bob.registry.impls.code(impl.id),
            bob.benchmarks.update(bm.id, name="mine now"),
            bob.benchmarks.delete(bm.id),
            bob.benchmarks.subsets.create(benchmark=bm.id, slug="x", tasks=TASKS[:1]),
            bob.benchmarks.subsets.append_tasks(sub.id, TASKS[:1]),
            bob.benchmarks.subsets.delete(sub.id),
            bob.impls.create(subset=sub.id, code=TASK_IMPL),
            bob.impls.delete(impl.id),
        ):
            await problem(call)
        pinned = await problem(bob.runs.launch(benchmark=bm.id, sut=sut(calculator)))
        nothing = await problem(bob.runs.launch(benchmark=missing_bm, sut=sut(calculator)))
        assert pinned == nothing and pinned["field"] == "benchmark"
        await problem(bob.runs.launch(benchmark="Tiny Arithmetic", sut=sut(calculator)))
        assert bm.id not in [b.id async for b in bob.registry.benchmarks.iter()]
        # Bob's own benchmark of the same name is his alone.
        own = await bob.benchmarks.create(name="Tiny Arithmetic")
        assert own.id != bm.id and (await alice.registry.benchmarks.find("nope")) is None
        with pytest.raises(PermissionDeniedError):
            await bob.impls.create(benchmark=own.id, code=TASK_IMPL, official=True)

    # -- refusals name what is wrong -----------------------------------------------------------
    with pytest.raises(BadRequestError) as bad:
        await alice.benchmarks.subsets.create(
            benchmark=bm.id, slug="big", tasks=[{"task_id": str(i)} for i in range(1001)]
        )
    assert bad.value.field == "tasks"
    with pytest.raises(ConflictError) as frozen:
        await alice.benchmarks.subsets.append_tasks(sub.id, [{"task_id": "more"}])
    assert frozen.value.code == "subset_frozen"
    with pytest.raises(ConflictError) as taken:
        await alice.benchmarks.subsets.create(benchmark=bm.id, slug="v1", tasks=TASKS[:2])
    assert taken.value.code == "slug_taken"
    with pytest.raises(BadRequestError) as broken:
        await alice.impls.create(subset=sub.id, code="def broken(:\n")
    assert broken.value.field == "code"

    # The code reads back as text for anyone who asks with curl.
    assert platform.client is not None
    text = await platform.client.get(f"/v1/impls/{impl.id}/code", headers={"Accept": "*/*"})
    assert text.status_code == 200 and text.text == TASK_IMPL
    assert text.headers["content-type"].startswith("text/x-python")


async def test_runs_pin_the_snapshot_of_a_rolling_subset_they_saw(
    platform: Platform, alice: AsyncBenchwright, calculator: FakeOpenAIServer
) -> None:
    bm = await alice.benchmarks.create(name="Live Sums", category="math", tags=["rolling"])
    daily = await alice.benchmarks.subsets.create(
        benchmark=bm.id, slug="daily", rolling=True, tasks=TASKS[:3]
    )
    impl = await alice.impls.create(subset=daily.id, label="last number", code=TASK_IMPL)

    async def run_on(subset: str) -> Any:
        run = await alice.runs.launch(
            benchmark=bm.id, subset=subset, impl=impl.id, sut=sut(calculator)
        )
        done = await alice.runs.wait(run.id, timeout=RUN_TIMEOUT, poll_interval=0.2)
        assert done.status == "ok", (done.phase, done.halt_reason, done.summary)
        return done

    before = await run_on("daily")
    assert before.subset is not None and before.subset.id == daily.id
    assert (await alice.runs.tasks(before.id)).summary.total == 3

    appended = await alice.benchmarks.subsets.append_tasks(
        daily.id, TASKS[3:], idempotency_key="day-2"
    )
    assert (appended.appended, appended.task_count) == (2, 5)
    assert appended.snapshot_id != daily.id
    # The same key again adds nothing and answers the same.
    repeat = await alice.benchmarks.subsets.append_tasks(
        daily.id, TASKS[3:], idempotency_key="day-2"
    )
    assert repeat == appended
    now = await alice.registry.subsets.get(daily.id)
    assert now.task_count == 5 and now.snapshot_id == appended.snapshot_id
    assert [s.id for s in now.snapshots] == [daily.id, appended.snapshot_id]
    rows = [r.task_id async for r in alice.registry.subsets.iter_tasks(appended.snapshot_id)]
    assert rows == [t["task_id"] for t in TASKS]
    assert (await alice.registry.subsets.tasks(daily.id)).total == 5

    after = await run_on(appended.snapshot_id)
    assert after.subset is not None and after.subset.id == appended.snapshot_id
    summary = (await alice.runs.tasks(after.id)).summary
    assert (summary.total, summary.passed) == (5, 4)
    # The earlier run still reads the three rows it ran.
    early = await alice.runs.tasks(before.id)
    assert early.summary.total == 3
    assert (await early.payload(early.data[2].id)).expected == TASKS[2]["expected"]

    # Freezing is one way.
    frozen = await alice.benchmarks.subsets.freeze(daily.id)
    assert frozen.frozen
    with pytest.raises(ConflictError) as exc:
        await alice.benchmarks.subsets.append_tasks(daily.id, [{"task_id": "late"}])
    assert exc.value.code == "subset_frozen"
    with pytest.raises(ConflictError):
        await alice.benchmarks.subsets.update(daily.id, rolling=True)

    # Publishing a run makes its benchmark public: others read it, and nothing it ran
    # can be deleted while the run stays public.
    await alice.runs.publish(after.id)
    await until_visibility(alice, bm.id, "public")
    carol = await new_account(platform, "carol", ["registry:read"])
    async with AsyncBenchwright(api_key=carol, base_url=alice.base_url) as theirs:
        seen = await theirs.registry.benchmarks.get(bm.id)
        assert seen.visibility == "public" and [s.id for s in seen.subsets] == [daily.id]
        assert await theirs.registry.impls.code(impl.id) == TASK_IMPL
        assert bm.id in [b.id for b in (await theirs.registry.benchmarks.list()).data]
    for held in (
        alice.impls.delete(impl.id),
        alice.benchmarks.subsets.delete(daily.id),
        alice.benchmarks.delete(bm.id),
    ):
        with pytest.raises(ConflictError) as exc:
            await held
        assert exc.value.code == "referenced_by_public_runs"
    await alice.runs.update(after.id, visibility="private")
    await until_visibility(alice, bm.id, "private")

    # Owner-only deletes; nothing public references these now, so they go.
    assert (await alice.impls.delete(impl.id)).deleted
    assert (await alice.benchmarks.subsets.delete(daily.id)).deleted
    assert (await alice.benchmarks.delete(bm.id)).deleted
    with pytest.raises(NotFoundError):
        await alice.registry.benchmarks.get(bm.id)
    # The runs that pinned them keep their rows.
    assert (await alice.runs.tasks(after.id)).summary.total == 5


async def until_visibility(bw: AsyncBenchwright, bm_id: str, visibility: str) -> None:
    """The registry learns a run's visibility from the run log: it converges."""
    for _ in range(100):
        if (await bw.registry.benchmarks.get(bm_id)).visibility == visibility:
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"{bm_id} never became {visibility}")


def sync_client_round_trip(token: str, base_url: str) -> dict[str, Any]:
    """The synchronous client over the same calls (it blocks: run it on a thread)."""
    with Benchwright(api_key=token, base_url=base_url) as bw:
        bm = bw.benchmarks.create(name="Sync Sums", tags=["sync"], idempotency_key="sync-1")
        again = bw.benchmarks.create(name="Sync Sums", tags=["sync"], idempotency_key="sync-1")
        sub = bw.benchmarks.subsets.create(benchmark=bm.id, slug="v1", tasks=TASKS, rolling=True)
        appended = bw.benchmarks.subsets.append(sub.id, [{"task_id": "extra", "input": {}}])
        impl = bw.impls.create(subset=sub.id, label="sum", code=TASK_IMPL)
        relabelled = bw.impls.update(impl.id, label="sum v1")
        renamed = bw.benchmarks.update(bm.id, description="sums, synchronously")
        seen = {
            "same": again.id == bm.id,
            "rows": [r.task_id for r in bw.registry.subsets.iter_tasks(sub.id, page_size=2)],
            "code": bw.registry.impls.code(impl.id),
            "label": relabelled.label,
            "description": bw.registry.benchmarks.get(bm.id).description,
            "renamed": renamed.description,
            "tagged": [b.id for b in bw.registry.benchmarks.iter(tag="sync")] == [bm.id],
            "appended": appended.task_count,
            "deleted": [
                bw.impls.delete(impl.id).deleted,
                bw.benchmarks.subsets.delete(sub.id).deleted,
                bw.benchmarks.delete(bm.id).deleted,
            ],
        }
        try:
            bw.registry.benchmarks.get(bm.id)
        except NotFoundError:
            seen["gone"] = True
        return seen


async def test_registry_scopes(platform: Platform) -> None:
    reader = await new_account(platform, "reader", ["registry:read"])
    assert platform.client is not None
    base = str(platform.client.base_url).rstrip("/")
    async with AsyncBenchwright(api_key=reader, base_url=base) as bw:
        listed = await bw.registry.benchmarks.list()
        assert "GSM8K" in [b.name for b in listed.data]
        gsm8k = next(b for b in listed.data if b.name == "GSM8K")
        assert gsm8k.builtin and gsm8k.visibility == "public" and gsm8k.owner is None
        full = await bw.registry.benchmarks.get(gsm8k.id)
        official = full.impls[0]
        assert official.official and "class Task" in await bw.registry.impls.code(official.id)
        with pytest.raises(PermissionDeniedError) as exc:
            await bw.benchmarks.create(name="not allowed")
        assert exc.value.problem["field"] == "scope" and "registry:publish" in str(exc.value)
    async with httpx.AsyncClient(base_url=base) as anonymous:
        assert (await anonymous.get("/v1/benchmarks")).status_code == 401

    # The catalog read model rebuilds from the registry's own store, to the same rows.
    rebuilt = await platform.client.post("/v1/admin/projections/catalog/rebuild")
    assert rebuilt.status_code == 200, rebuilt.text
    assert rebuilt.json()["digest"] == rebuilt.json()["before_digest"]

    # The platform shares this event loop: the sync client runs on another thread.
    seen = await asyncio.to_thread(sync_client_round_trip, platform.token, base)
    assert seen == {
        "same": True,
        "rows": [t["task_id"] for t in TASKS] + ["extra"],
        "code": TASK_IMPL,
        "label": "sum v1",
        "description": "sums, synchronously",
        "renamed": "sums, synchronously",
        "tagged": True,
        "appended": 6,
        "deleted": [True, True, True],
        "gone": True,
    }
