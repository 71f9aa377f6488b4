"""Billing enforcement halts a run mid-flight, through the whole platform.

Task sandboxes are priced at a dollar a second, so a fanout Materialize spends
visibly as each task's sandbox is killed. A run that spends the balance halts
with ``balance_exhausted``; one that spends past the monthly cap halts with
``monthly_cap_reached``. Either way no task runs after the halt, the run keeps
its partial results, and the ledger debits exactly what the run shows it billed.
"""

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwright import AsyncBenchwright
from tests.conftest import Platform, platform_settings
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = [pytest.mark.slow, pytest.mark.connected]

RATE_MICROS = 1_000_000  # a dollar per sandbox-second
TASKS = 40


@pytest.fixture
async def enforcing(tmp_path: Path) -> AsyncIterator[tuple[Platform, FakeOpenAIServer]]:
    def slow(prompt: str) -> str:
        time.sleep(0.3)
        return "The answer is 1."

    model = FakeOpenAIServer(slow, threaded=True).start()
    settings = platform_settings(tmp_path, None, None).model_copy(
        update={
            "billing_enforce": True,
            "sandbox_rate_local_micros": RATE_MICROS,
            "materialize_mode": "fanout",
            "task_concurrency": 2,
            "limit_check_interval_s": 0.5,
        }
    )
    platform = await Platform(settings).start()
    try:
        yield platform, model
    finally:
        await platform.shutdown()
        model.stop()


def body(model: FakeOpenAIServer) -> dict[str, Any]:
    return {
        "request": f"Run GSM8K, first {TASKS} tasks",
        "driver": "builtin",
        "sut": {"model": "fake", "provider": "openai_compatible", "api_base": model.base_url},
    }


async def events_of(client: httpx.AsyncClient, run_id: str) -> list[dict[str, Any]]:
    page = await client.get(f"/v1/runs/{run_id}/events", params={"limit": 5000})
    data: list[dict[str, Any]] = page.json()["data"]
    return data


async def settled_debit(bw: AsyncBenchwright, client: httpx.AsyncClient, run_id: str) -> Any:
    """The run's debit once the ledger has every cost line the run shows."""
    deadline = asyncio.get_running_loop().time() + 30
    while True:
        run = (await client.get(f"/v1/runs/{run_id}")).json()
        page = await bw.billing.transactions.list(filters={"kind": "trace_debit"})
        debit = next((t for t in page.data if t.reference_id == run_id), None)
        billed = run["cost"]["billed"]["amount_cents"]
        if debit is not None and billed > 0 and -debit.amount.amount_cents == billed:
            await asyncio.sleep(1.0)  # the teardown's last kills: the figure holds still
            again = (await client.get(f"/v1/runs/{run_id}")).json()
            if again["cost"]["billed"]["amount_cents"] == billed:
                return debit
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"the ledger never settled for {run_id}: {run['cost']}, {debit}")
        await asyncio.sleep(0.3)


async def halted_run(
    platform: Platform, model: FakeOpenAIServer, reason: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Launch, wait for the halt; check that nothing ran after it. The run and its log."""
    client = platform.client
    assert client
    calls_before = model.state["calls"]
    launched = await client.post("/v1/runs", json=body(model))
    assert launched.status_code == 201, launched.text
    done = await platform.wait_terminal(launched.json()["id"], timeout=180)
    assert done["status"] == "error", done
    assert done["halted"] is True and done["halt_reason"] == reason, done
    assert done["display_status"] == "halted" and done["error"]["type"] == "halted"
    # The run stopped well short of its tasks and kept what it had.
    assert 0 < done["summary"]["total"] < TASKS, done["summary"]

    calls_when_done = model.state["calls"]
    events = await events_of(client, done["id"])
    [halt] = [e for e in events if e["type"] == "RunHalted"]
    assert halt["data"]["halt_reason"] == reason
    failed = [e["data"] for e in events if e["type"] == "PhaseFailed"]
    assert [(f["phase"], f["error_type"]) for f in failed] == [("materialize", "halted")]
    # No task result is recorded after the halt ...
    after = [
        e["type"]
        for e in events
        if e["seq"] > halt["seq"] and e["type"].startswith("MaterializeTask")
    ]
    assert after == []
    # ... every task sandbox was killed ...
    created = {
        e["data"]["sandbox_id"]
        for e in events
        if e["type"] == "SandboxCreated" and e["data"]["metadata"]["benchwright_role"] == "task"
    }
    killed = {e["data"]["sandbox_id"] for e in events if e["type"] == "SandboxKilled"}
    assert created and created <= killed
    # ... and the model hears from no task any more: at most the calls in flight at the
    # halt went out beyond the results recorded.
    await asyncio.sleep(2.0)
    assert model.state["calls"] == calls_when_done
    results = sum(1 for e in events if e["type"] == "MaterializeTaskResult")
    assert calls_when_done - calls_before <= results + platform.settings.task_concurrency
    return done, events


async def test_spending_the_balance_and_passing_the_monthly_cap_halt_the_run(
    enforcing: tuple[Platform, FakeOpenAIServer],
) -> None:
    platform, model = enforcing
    client = platform.client
    assert client
    async with AsyncBenchwright(api_key=platform.token, base_url=str(client.base_url)) as bw:
        # --- the balance runs out mid-run ------------------------------------------
        await bw.billing.topups.create(500)  # $5: a few task sandboxes' worth
        done, _ = await halted_run(platform, model, "balance_exhausted")
        debit = await settled_debit(bw, client, done["id"])
        final = (await client.get(f"/v1/runs/{done['id']}")).json()
        assert debit.amount.amount_cents == -final["cost"]["billed"]["amount_cents"]
        balance = await bw.billing.balance.get()
        # (Each figure is rounded to cents on its own: they may differ by one.)
        assert abs(balance.balance.amount_cents - (500 + debit.amount.amount_cents)) <= 1
        assert balance.balance.amount_cents <= 0
        assert balance.stop_reason == "balance_exhausted"
        refused = await client.post("/v1/runs", json=body(model))
        assert refused.status_code == 402 and refused.json()["code"] == "insufficient_balance"

        # --- the monthly cap is passed mid-run, with money left ----------------------
        await bw.billing.topups.create(50_000)
        spent = (await bw.billing.balance.get()).month_spent.amount_cents
        capped = await bw.billing.controls.update(monthly_cap_cents=spent + 500)
        assert capped.stop_reason is None and capped.balance.amount_cents > 0
        second, _ = await halted_run(platform, model, "monthly_cap_reached")
        second_debit = await settled_debit(bw, client, second["id"])
        after = await bw.billing.balance.get()
        assert after.month_spent.amount_cents >= spent + 500
        assert abs(after.month_spent.amount_cents - (spent - second_debit.amount.amount_cents)) <= 1
        assert after.balance.amount_cents > 0  # the cap stopped it, not the money
        assert after.stop_reason == "monthly_cap_reached"
        debits = (await bw.billing.transactions.list(filters={"kind": "trace_debit"})).data
        assert {t.reference_id for t in debits} == {done["id"], second["id"]}
