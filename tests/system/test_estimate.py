"""An estimate before launch, against what the run then cost (issue 15).

The fixed workload: 40 sums asked by the authoring guide's scorer (one call a task,
``max_tokens=16``) of a model that counts tokens in word pieces, as GPT-style
tokenizers roughly do, priced at $1 a prompt token and $2 a completion token. The
stated tolerance: the real cost lies within the estimate's low..high range, and the
expected figure is within 35% of it.
"""

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from benchwright import AsyncBenchwright, BadRequestError
from tests.conftest import Platform, platform_settings
from tests.support.fake_openai import FakeOpenAIServer
from tests.system.test_authoring import TASK_IMPL, arithmetic
from tests.system.test_leaderboards import finish

pytestmark = [pytest.mark.slow, pytest.mark.connected]

PRICES = {"openai_compatible/metered": {"prompt_per_mtok": 1e6, "completion_per_mtok": 2e6}}
ROWS = [
    {"task_id": f"sum-{a}", "input": {"a": a * 37, "b": a + 5}, "expected": str(a * 38 + 5)}
    for a in range(40)
]
TOLERANCE = 0.35


@pytest.fixture
def model() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer(arithmetic, wordpiece_tokens=True).start()
    yield server
    server.stop()


@pytest.fixture
async def bw(tmp_path: Path) -> AsyncIterator[AsyncBenchwright]:
    settings = platform_settings(tmp_path, None, None).model_copy(update={"model_prices": PRICES})
    platform = await Platform(settings).start()
    assert platform.client is not None
    base_url = str(platform.client.base_url).rstrip("/")
    try:
        async with AsyncBenchwright(api_key=platform.token, base_url=base_url) as client:
            yield client
    finally:
        await platform.shutdown()


async def test_the_estimate_brackets_what_the_run_then_costs(
    bw: AsyncBenchwright, model: FakeOpenAIServer
) -> None:
    bm = await bw.benchmarks.create(name="Priced Sums", category="math")
    sub = await bw.benchmarks.subsets.create(benchmark=bm.id, slug="v1", tasks=ROWS)
    impl = await bw.impls.create(subset=sub.id, label="sums", code=TASK_IMPL)
    sut = {"model": "metered", "provider": "openai_compatible", "api_base": model.base_url}
    launch: dict[str, Any] = {"benchmark": bm.id, "subset": sub.id, "impl": impl.id, "sut": sut}

    found = await bw.runs.estimate(**launch)
    assert (found.tasks, found.trials, found.priced_by) == (40, 1, "operator")
    assert found.calls == {"low": 40, "expected": 40, "high": 40}
    assert found.completion_tokens.high == 40 * 16  # the scorer's max_tokens bounds it
    assert any("max_tokens" in line for line in found.derivation)
    assert len(model.state["times"]) == 0  # nothing ran

    run = await finish(bw, (await bw.runs.launch(**launch)).id)
    settled = await bw.runs.wait(run.id, timeout=30)
    for _ in range(100):
        if (settled.cost.model.calls or 0) >= 40:
            break
        settled = await bw.runs.get(run.id)
    actual = settled.cost.model.amount_usd
    cost = found.cost
    assert cost.low.amount_usd <= actual <= cost.high.amount_usd, (cost, actual)
    assert abs(cost.expected.amount_usd - actual) <= TOLERANCE * actual, (cost, actual)

    # A limit narrows it; trials multiply it; a replay is estimated from its parent.
    capped = await bw.runs.estimate(**launch, metadata={"limit": 10})
    assert capped.tasks == 10
    tried = await bw.runs.estimate(
        **launch, trials={"plan": {"k": 3}, "aggregator": {"name": "mean"}}
    )
    assert tried.calls.expected == 120
    replay = await bw.runs.estimate(replay={"from_run": run.id})
    assert (replay.tasks, replay.cost.expected) == (40, found.cost.expected)

    with pytest.raises(BadRequestError) as refused:
        await bw.runs.estimate(request="Run GSM8K", sut=sut)
    assert refused.value.field == "request"
