"""Per-task cost: the proxy stamps each answer with what it cost and what the task has
spent, and refuses a task's calls once it reached ``limits.task.cost`` or its trial
``limits.attempt.cost``; other tasks go on."""

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from benchwright_proxy.app import build
from benchwright_proxy.ceilings import Attribution, Spent, TaskSpend, attribution, reached
from benchwright_shared.contracts import SutRef
from benchwright_shared.settings import Settings
from tests.support.fake_openai import FakeOpenAIServer

# $10 per million tokens either way: 10 micro-dollars a token.
PRICES = {"openai_compatible/fake": {"prompt_per_mtok": 10.0, "completion_per_mtok": 10.0}}
BODY = {"model": "fake", "messages": [{"role": "user", "content": "what is two and two"}]}


@pytest.fixture
def model() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer(lambda prompt: "four").start()
    yield server
    server.stop()


@pytest.fixture
async def bound(
    tmp_path: Path, model: FakeOpenAIServer
) -> AsyncIterator[tuple[httpx.AsyncClient, int]]:
    """A proxy endpoint with a run whose task ceiling allows two calls, not three."""
    settings = Settings(
        data_dir=tmp_path, proxy_port=0, nats_url=None, database_url=None, model_prices=PRICES
    )
    service = build(settings)
    url = await service.runtime.serve_http()
    sut = SutRef(model="fake", provider="openai_compatible", api_base=model.base_url)
    one_call = (5 + 1) * 10  # five prompt words and one completion word, priced
    _, key = await service.runtime.bind(
        str(uuid.uuid4()), "acct_test", sut, None, (one_call + 1, None)
    )
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as client:
        yield client, one_call
    await service.stop()


async def call(client: httpx.AsyncClient, task: int, trial: int, n: int) -> httpx.Response:
    headers = {
        "X-Benchwright-Task": str(task),
        "X-Benchwright-Trial": str(trial),
        "X-Benchwright-Call-Id": f"{task}.{trial}.{n}",
    }
    return await client.post("/v1/chat/completions", json=BODY, headers=headers)


async def test_each_answer_carries_its_cost_and_the_tasks_spend(
    bound: tuple[httpx.AsyncClient, int],
) -> None:
    client, one_call = bound
    first = await call(client, 7, 0, 1)
    assert first.status_code == 200, first.text
    assert first.headers["x-benchwright-call-cost-micros"] == str(one_call)
    assert first.headers["x-benchwright-call-prompt-tokens"] == "5"
    assert first.headers["x-benchwright-call-completion-tokens"] == "1"
    assert first.headers["x-benchwright-task-cost-micros"] == str(one_call)
    assert "x-benchwright-limit-exceeded" not in first.headers

    # A repeat of the same call is served from the record with the same stamp,
    # and not counted again.
    again = await call(client, 7, 0, 1)
    assert again.headers["x-benchwright-task-cost-micros"] == str(one_call)
    second = await call(client, 7, 0, 2)
    assert second.headers["x-benchwright-task-cost-micros"] == str(2 * one_call)


async def test_a_task_past_its_ceiling_gets_no_more_calls_and_others_go_on(
    bound: tuple[httpx.AsyncClient, int],
) -> None:
    client, one_call = bound
    assert (await call(client, 3, 0, 1)).status_code == 200
    crossing = await call(client, 3, 1, 1)  # another trial: the task's ceiling covers both
    assert crossing.status_code == 200
    # Its cost was known only once it had run: it finishes, and says the task went over.
    assert crossing.headers["x-benchwright-limit-exceeded"] == "task.cost"
    refused = await call(client, 3, 2, 1)
    assert refused.status_code == 402
    assert refused.json()["error"]["type"] == "limit_exceeded"
    assert refused.json()["error"]["code"] == "task.cost"
    assert "x-benchwright-call-cost-micros" not in refused.headers
    other = await call(client, 4, 0, 1)
    assert other.status_code == 200
    assert other.headers["x-benchwright-task-cost-micros"] == str(one_call)


def test_attempt_ceilings_count_one_trial_and_task_ceilings_all() -> None:
    spend = TaskSpend()
    spend.add("run", Attribution(1, 0), 60)
    after = spend.add("run", Attribution(1, 1), 50)
    assert after == Spent(task_micros=110, attempt_micros=50)
    assert reached(after, (None, 60)) is None
    assert reached(spend.spent("run", Attribution(1, 0)), (None, 60)) == "attempt.cost"
    assert reached(spend.spent("run", Attribution(1, 0)), (None, 60), passed=True) is None
    assert reached(after, (110, None)) == "task.cost"
    assert reached(after, (110, None), passed=True) is None
    spend.forget("run")
    assert spend.spent("run", Attribution(1, 0)) == Spent(0, 0)


@pytest.mark.parametrize(
    ("task", "trial", "found"),
    [
        ("3", "0", Attribution(3, 0)),
        (None, "0", None),
        ("x", "0", None),
        ("-1", "0", None),
        ("3", "100000", None),
        ("99999999999", "0", None),
    ],
)
def test_only_a_plausible_task_and_trial_attribute_a_call(
    task: str | None, trial: str | None, found: Attribution | None
) -> None:
    assert attribution(task, trial) == found


async def test_a_call_naming_a_task_the_run_does_not_have_is_refused(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    settings = Settings(data_dir=tmp_path, proxy_port=0, nats_url=None, database_url=None)
    service = build(settings)
    url = await service.runtime.serve_http()
    sut = SutRef(model="fake", provider="openai_compatible", api_base=model.base_url)
    # Ten rows, two trials a task.
    _, key = await service.runtime.bind(
        str(uuid.uuid4()), "acct_test", sut, None, (None, None), None, (10, 2)
    )
    try:
        async with httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30
        ) as client:
            assert (await call(client, 9, 1, 1)).status_code == 200
            for task, trial in ((10, 0), (3, 2)):
                refused = await call(client, task, trial, 1)
                assert refused.status_code == 400
                assert "is not one of this run's" in refused.json()["error"]["message"]
        assert len(model.state["times"]) == 1
    finally:
        await service.stop()
