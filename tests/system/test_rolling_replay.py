"""Replays of runs on a rolling subset (guide section 9), through the SDK on the
embedded platform: a replay of yesterday's anchor runs against the subset as it is
now, with the anchor's scorer, and ``replay.task_ids`` may name the fresh rows. The
anchor keeps what it ran; a replay of a run on a frozen subset is pinned as before.
"""

import re
from typing import Any

import pytest

from benchwright import AsyncBenchwright, BadRequestError
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = [pytest.mark.slow, pytest.mark.connected]

RUN_TIMEOUT = 120.0
PAIRS = [(7, 5), (13, 29), (40, 2)]
TASKS = [
    {"task_id": f"sum-{a}-{b}", "input": {"a": a, "b": b}, "expected": str(a + b)} for a, b in PAIRS
]
# The model gets every sum right but 13 + 29.
WRONG = {(13, 29)}
TASK_IMPL = """\
import re

from bench_task import BenchTask


class Task(BenchTask):
    def solve(self, index, input):
        prompt = f"What is {input['a']} + {input['b']}? Reply with the number."
        return self.complete(prompt, max_tokens=16, temperature=0)

    def score(self, index, output, expected):
        numbers = re.findall(r"-?[0-9]+", output or "")
        return 1.0 if numbers and numbers[-1] == str(expected) else 0.0
"""
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


def sut(server: FakeOpenAIServer, model: str = "calc") -> dict[str, str]:
    return {"model": model, "provider": "openai_compatible", "api_base": server.base_url}


async def finished(bw: AsyncBenchwright, launched: Any) -> Any:
    done = await bw.runs.wait(launched.id, timeout=RUN_TIMEOUT, poll_interval=0.2)
    assert done.status == "ok", (done.phase, done.halt_reason, done.error)
    return done


async def ran(bw: AsyncBenchwright, run_id: str) -> list[str]:
    return [t.task_id for t in (await bw.runs.tasks(run_id)).data]


async def log(bw: AsyncBenchwright, run_id: str) -> list[Any]:
    return list((await bw.runs.events(run_id, limit=2000)).data)


def phases(events: list[Any]) -> list[str]:
    return [e.data["phase"] for e in events if e.type == "PhaseStarted"]


def phase_fingerprint(events: list[Any], phase: str) -> str:
    return next(
        str(e.data["fingerprint"])
        for e in events
        if e.type == "PhaseFingerprint" and e.data["phase"] == phase
    )


async def test_a_replay_follows_its_rolling_subset_to_the_current_snapshot(
    bw: AsyncBenchwright, calculator: FakeOpenAIServer
) -> None:
    bm = await bw.benchmarks.create(name="Growing Sums", category="math", tags=["rolling"])
    daily = await bw.benchmarks.subsets.create(
        benchmark=bm.id, slug="daily", rolling=True, tasks=TASKS[:2]
    )
    impl = await bw.impls.create(subset=daily.id, label="last number", code=TASK_IMPL)
    anchor = await finished(
        bw,
        await bw.runs.launch(benchmark=bm.id, subset=daily.id, impl=impl.id, sut=sut(calculator)),
    )
    assert anchor.subset is not None and anchor.subset.id == daily.id
    assert await ran(bw, anchor.id) == ["sum-7-5", "sum-13-29"]
    anchor_log = await log(bw, anchor.id)

    # Nothing appended yet: a plain replay, everything inherited.
    plain = await finished(bw, await bw.runs.launch(replay={"from_run": anchor.id}))
    assert phases(await log(bw, plain.id)) == ["attach", "materialize", "report"]
    assert plain.fingerprint == anchor.fingerprint  # a true replay

    appended = await bw.benchmarks.subsets.append_tasks(
        daily.id, TASKS[2:], idempotency_key="day-2"
    )
    assert appended.task_count == 3 and appended.snapshot_id != daily.id

    # The whole current subset, with the anchor's impl, on the snapshot it resolved.
    grown = await finished(bw, await bw.runs.launch(replay={"from_run": anchor.id}))
    assert grown.derived_from == anchor.id and grown.impl_id == anchor.impl_id == impl.id
    assert grown.subset is not None and grown.subset.id == appended.snapshot_id
    assert await ran(bw, grown.id) == ["sum-7-5", "sum-13-29", "sum-40-2"]
    summary = (await bw.runs.tasks(grown.id)).summary
    assert (summary.total, summary.passed) == (3, 2)
    grown_log = await log(bw, grown.id)
    assert phases(grown_log) == ["fetch", "setup", "attach", "materialize", "report"]
    launched = next(e for e in grown_log if e.type == "RunLaunched")
    assert launched.data["subset_id"] == appended.snapshot_id
    assert launched.data["replay"]["from_subset_id"] == daily.id
    dataset = [e for e in grown_log if e.type == "DatasetTasksArtifact"]
    assert [d.data["subset_id"] for d in dataset] == [appended.snapshot_id]
    assert not dataset[0].data.get("inherited_from")
    assert grown.fingerprint != anchor.fingerprint  # other rows

    # The same experiment as a pin of the current snapshot with the same impl and model:
    # the same phase-cache key for the rows, the same run fingerprint.
    pinned = await finished(
        bw,
        await bw.runs.launch(
            benchmark=bm.id, subset=appended.snapshot_id, impl=impl.id, sut=sut(calculator)
        ),
    )
    pinned_log = await log(bw, pinned.id)
    assert phase_fingerprint(pinned_log, "fetch") == phase_fingerprint(grown_log, "fetch")
    assert phase_fingerprint(pinned_log, "setup") == phase_fingerprint(grown_log, "setup")
    assert pinned.fingerprint == grown.fingerprint

    # ``task_ids`` may name a fresh row: exactly that row, on another model.
    other = FakeOpenAIServer(arithmetic).start()
    try:
        fresh = await finished(
            bw,
            await bw.runs.launch(
                replay={"from_run": anchor.id, "task_ids": ["sum-40-2"]},
                sut=sut(other, "other-calc"),
            ),
        )
    finally:
        other.stop()
    assert fresh.subset is not None and fresh.subset.id == appended.snapshot_id
    assert fresh.impl_id == anchor.impl_id
    assert fresh.model is not None and fresh.model.model == "other-calc"
    tasks = await bw.runs.tasks(fresh.id)
    assert [(t.task_id, t.index) for t in tasks.data] == [("sum-40-2", 2)]
    assert tasks.summary.passed == 1
    assert other.state["calls"] == 1

    # ``only_failed`` still means the anchor's failures.
    failed = await finished(
        bw, await bw.runs.launch(replay={"from_run": anchor.id, "only_failed": True})
    )
    assert await ran(bw, failed.id) == ["sum-13-29"]

    with pytest.raises(BadRequestError) as unknown:
        await bw.runs.launch(replay={"from_run": anchor.id, "task_ids": ["sum-1-1"]})
    assert unknown.value.field == "replay.task_ids"

    # The anchor is as it was.
    again = await bw.runs.get(anchor.id)
    assert again.subset is not None and again.subset.id == daily.id
    assert again.fingerprint == anchor.fingerprint
    assert await ran(bw, anchor.id) == ["sum-7-5", "sum-13-29"]
    assert len(await log(bw, anchor.id)) == len(anchor_log)


async def test_a_replay_on_a_frozen_subset_stays_pinned(
    bw: AsyncBenchwright, calculator: FakeOpenAIServer
) -> None:
    bm = await bw.benchmarks.create(name="Fixed Sums", category="math")
    fixed = await bw.benchmarks.subsets.create(benchmark=bm.id, slug="v1", tasks=TASKS[:2])
    impl = await bw.impls.create(subset=fixed.id, label="last number", code=TASK_IMPL)
    anchor = await finished(
        bw,
        await bw.runs.launch(benchmark=bm.id, subset=fixed.id, impl=impl.id, sut=sut(calculator)),
    )
    rerun = await finished(
        bw, await bw.runs.launch(replay={"from_run": anchor.id, "task_ids": ["sum-13-29"]})
    )
    assert rerun.subset is not None and rerun.subset.id == fixed.id
    assert rerun.impl_id == impl.id
    assert await ran(bw, rerun.id) == ["sum-13-29"]
    events = await log(bw, rerun.id)
    assert phases(events) == ["attach", "materialize", "report"]
    assert "from_subset_id" not in next(e for e in events if e.type == "RunLaunched").data["replay"]
    with pytest.raises(BadRequestError) as unknown:
        await bw.runs.launch(replay={"from_run": anchor.id, "task_ids": ["sum-40-2"]})
    assert unknown.value.field == "replay.task_ids"
