"""The response cache end to end: a run with ``cache: read_write`` keeps its model's
answers; its replay with the cache on makes no model call and scores the same; k trials
of a task stay k samples; every hit is in the replay's log."""

from typing import Any

import pytest

from benchwright import AsyncBenchwright, BadRequestError
from tests.support.fake_openai import FakeOpenAIServer
from tests.system.test_authoring import TASK_IMPL, arithmetic
from tests.system.test_leaderboards import finish

pytestmark = [pytest.mark.slow, pytest.mark.connected]

ROWS = [{"task_id": f"s{a}", "input": {"a": a, "b": 2}, "expected": str(a + 2)} for a in range(5)]


@pytest.fixture
def calculator() -> Any:
    server = FakeOpenAIServer(arithmetic).start()
    yield server
    server.stop()


async def test_a_cached_replay_asks_the_model_nothing_and_scores_the_same(
    bw: AsyncBenchwright, calculator: FakeOpenAIServer
) -> None:
    bm = await bw.benchmarks.create(name="Cached Sums", category="math")
    sub = await bw.benchmarks.subsets.create(benchmark=bm.id, slug="v1", tasks=ROWS)
    impl = await bw.impls.create(subset=sub.id, label="sums", code=TASK_IMPL)
    sut = {"model": "calc", "provider": "openai_compatible", "api_base": calculator.base_url}
    trials = {"plan": {"k": 2}, "aggregator": {"name": "mean"}}
    first = await finish(
        bw,
        (
            await bw.runs.launch(
                benchmark=bm.id, subset=sub.id, impl=impl.id, sut=sut, trials=trials,
                cache="read_write",
            )
        ).id,
    )  # fmt: skip
    # Two trials a task are two samples: the trial is part of the key.
    asked = len(calculator.state["times"])
    assert asked == 2 * len(ROWS)

    replay = await finish(
        bw,
        (await bw.runs.launch(replay={"from_run": first.id}, cache={"mode": "read_write"})).id,
    )
    assert len(calculator.state["times"]) == asked  # not one call more
    scores = [(t.task_id, t.score, t.outcome) for t in (await bw.runs.tasks(first.id)).data]
    again = [(t.task_id, t.score, t.outcome) for t in (await bw.runs.tasks(replay.id)).data]
    assert again == scores
    results = (await bw.runs.events(replay.id, types=["MaterializeTaskResult"])).data
    assert len(results) == 2 * len(ROWS)
    assert all(r.data.cached_calls == r.data.calls == 1 for r in results)
    assert all(r.data.cost_micros == 0 for r in results)

    # Without the cache the same replay asks the model again.
    plain = await finish(bw, (await bw.runs.launch(replay={"from_run": first.id})).id)
    assert plain.status == "ok"
    assert len(calculator.state["times"]) == 2 * asked

    with pytest.raises(BadRequestError) as refused:
        await bw.runs.launch(replay={"from_run": first.id}, cache="sometimes")
    assert refused.value.field == "cache"
