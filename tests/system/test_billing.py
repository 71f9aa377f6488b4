"""Billing through the API and the SDK: runs debit the balance, top-ups credit it.

The local backend is given a rate so a run's sandboxes cost something; the
Driver (builtin) costs nothing and the model's spend is the user's own key.
"""

import asyncio
import csv
import io
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from benchwright import AsyncBenchwright
from tests.conftest import Platform, platform_settings
from tests.support.fake_openai import FakeOpenAIServer, gsm8k_oracle
from tests.system.test_pinned_run import gsm8k_rows, launch_body

pytestmark = [pytest.mark.slow, pytest.mark.connected]

# A dollar per sandbox-second: a short run costs a visible amount.
RATE_MICROS = 1_000_000


@pytest.fixture
async def enforcing(tmp_path: Path) -> AsyncIterator[tuple[Platform, FakeOpenAIServer]]:
    model = FakeOpenAIServer(gsm8k_oracle(gsm8k_rows()[:20], correct_every=1)).start()
    settings = platform_settings(tmp_path, None, None).model_copy(
        update={"billing_enforce": True, "sandbox_rate_local_micros": RATE_MICROS}
    )
    platform = await Platform(settings).start()
    try:
        yield platform, model
    finally:
        await platform.shutdown()
        model.stop()


async def eventually(check: Any, timeout: float = 15) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        found = await check()
        if found:
            return found
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("never happened")
        await asyncio.sleep(0.2)


async def test_balance_topups_debits_controls_and_the_launch_floor(
    enforcing: tuple[Platform, FakeOpenAIServer],
) -> None:
    platform, model = enforcing
    client = platform.client
    assert client
    async with AsyncBenchwright(api_key=platform.token, base_url=str(client.base_url)) as bw:
        fresh = await bw.billing.balance.get()
        assert fresh.balance.amount_cents == 0 and fresh.enforced is True

        # Below the $1 floor nothing launches, and the refusal says how to fix it.
        refused = await client.post("/v1/runs", json=launch_body(model, limit=2))
        assert refused.status_code == 402, refused.text
        assert refused.json()["code"] == "insufficient_balance"
        assert "/v1/billing/topups" in refused.json()["detail"]

        topup = await bw.billing.topups.create(5_000, idempotency_key="first-topup")
        again = await bw.billing.topups.create(5_000, idempotency_key="first-topup")
        assert topup.id == again.id and topup.status == "succeeded"
        assert (await bw.billing.topups.get(topup.id)).amount.amount_cents == 5_000
        assert (await bw.billing.balance.get()).balance.amount_cents == 5_000

        launched = await client.post("/v1/runs", json=launch_body(model, limit=2))
        assert launched.status_code == 201, launched.text
        run = await platform.wait_terminal(launched.json()["id"])
        assert run["status"] == "ok", run["error"]

        async def debited() -> Any:
            page = await bw.billing.transactions.list(filters={"kind": "trace_debit"})
            return page.data

        (debit,) = await eventually(debited)
        assert debit.reference_id == run["id"] and debit.amount.amount_cents < 0
        balance = await bw.billing.balance.get()
        assert balance.balance.amount_cents == 5_000 + debit.amount.amount_cents
        assert balance.month_spent.amount_cents == -debit.amount.amount_cents

        everything = await bw.billing.transactions.list(limit=1)
        assert len(everything.data) == 1 and everything.next_page_token
        rest = await bw.billing.transactions.list(limit=10, page_token=everything.next_page_token)
        assert {t.kind for t in [*everything.data, *rest.data]} == {"topup", "trace_debit"}

        rows = list(csv.DictReader(io.StringIO((await bw.billing.export()).decode())))
        assert {r["kind"] for r in rows} == {"topup", "trace_debit"}
        per_run = list(csv.DictReader(io.StringIO((await bw.billing.export("runs")).decode())))
        assert [r["run_id"] for r in per_run] == [run["id"]]

        today = (await bw.billing.usage_trend(days=7))[-1]
        assert today.date == datetime.now(UTC).date().isoformat()
        assert today.runs == 1 and today.billed.amount_cents == -debit.amount.amount_cents

        # A cap this month's spend already reached stops the next launch.
        capped = await bw.billing.controls.update(monthly_cap_cents=1)
        assert capped.monthly_cap.amount_cents == 1 and capped.stop_reason == "monthly_cap_reached"
        stopped = await client.post("/v1/runs", json=launch_body(model, limit=2))
        assert stopped.status_code == 402 and "monthly_cap_reached" in stopped.json()["detail"]

    # Bad input: a clear problem naming the field.
    no_card = await client.patch("/v1/billing/controls", json={"auto_refill_enabled": True})
    assert no_card.status_code == 400 and no_card.json()["field"] == "auto_refill_enabled"
    tiny = await client.post("/v1/billing/topups", json={"amount_cents": 5})
    assert tiny.status_code == 400 and tiny.json()["field"].endswith("amount_cents")
    missing = await client.get("/v1/billing/topups/top_nope")
    assert missing.status_code == 404
