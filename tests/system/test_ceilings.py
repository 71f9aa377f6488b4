"""Cost and phase ceilings, checked live: the run halts with the ceiling's name, keeps
its partial results, and shows what it has cost so far while it runs."""

import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Platform, platform_settings
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = [pytest.mark.slow, pytest.mark.connected]

# A dollar per prompt token: a GSM8K prompt costs a few hundred dollars.
PRICES = {"openai_compatible/pricey": {"prompt_per_mtok": 1_000_000, "completion_per_mtok": 0}}


def slow(prompt: str) -> str:
    time.sleep(0.2)
    return "The answer is 1."


@pytest.fixture
async def priced(tmp_path: Path) -> Any:
    server = FakeOpenAIServer(slow, threaded=True).start()
    settings = platform_settings(tmp_path, None, None).model_copy(
        update={"model_prices": PRICES, "limit_check_interval_s": 0.5}
    )
    platform = await Platform(settings).start()
    try:
        yield platform, server
    finally:
        await platform.shutdown()
        server.stop()


def body(server: FakeOpenAIServer, limits: dict[str, Any]) -> dict[str, Any]:
    return {
        "benchmark": "GSM8K",
        "sut": {"model": "pricey", "provider": "openai_compatible", "api_base": server.base_url},
        "metadata": {"limit": 300},
        "limits": limits,
    }


async def test_a_cost_ceiling_halts_the_run_and_cost_shows_while_it_runs(priced: Any) -> None:
    platform, server = priced
    client = platform.client
    run = (await client.post("/v1/runs", json=body(server, {"run": {"cost": 2000.0}}))).json()
    live = await platform.wait_for(
        run["id"],
        lambda r: (
            r["status"] == "running" and (r["cost"] or {}).get("model", {}).get("calls", 0) > 0
        ),
        timeout=60,
    )
    assert live["cost"]["model"]["amount_usd"] > 0
    assert live["cost"]["incurred"]["amount_usd"] >= live["cost"]["model"]["amount_usd"]
    done = await platform.wait_terminal(run["id"], timeout=120)
    assert done["halted"] is True
    assert done["halt_reason"] == "limit_exceeded:run.cost"
    assert done["display_status"] == "halted"
    assert 0 < done["summary"]["total"] < 300
    # A ceiling is where teardown starts: the run stops soon after crossing it.
    assert done["cost"]["incurred"]["amount_usd"] >= 2000.0


async def test_a_phase_ceiling_names_its_phase(priced: Any) -> None:
    platform, server = priced
    client = platform.client
    limits = {"phase:materialize": {"duration": 2}}
    run = (await client.post("/v1/runs", json=body(server, limits))).json()
    done = await platform.wait_terminal(run["id"], timeout=120)
    assert done["halt_reason"] == "limit_exceeded:phase:materialize.duration"
    events = (await client.get(f"/v1/runs/{run['id']}/events", params={"limit": 5000})).json()
    failed = [e["data"] for e in events["data"] if e["type"] == "PhaseFailed"]
    assert failed[-1]["phase"] == "materialize" and failed[-1]["error_type"] == "halted"
