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


# Asks the same sum ``input.calls`` times: the task's cost grows with its calls.
REPEATING_IMPL = """\
import re

from bench_task import BenchTask


class Task(BenchTask):
    def solve(self, index, input):
        prompt = f"What is {input['a']} + {input['b']}? Reply with the number."
        answer = ""
        for _ in range(input["calls"]):
            answer = self.complete(prompt, max_tokens=16, temperature=0)
        return answer

    def score(self, index, output, expected):
        numbers = re.findall(r"-?[0-9]+", output or "")
        return 1.0 if numbers and numbers[-1] == str(expected) else 0.0
"""


async def test_a_task_cost_ceiling_fails_only_its_task(priced: Any) -> None:
    """Nine prompt words at a dollar each: $9 a call. Under a $10 task ceiling a task of
    one call passes; one of two calls crosses the ceiling on its second and ends err; one
    of three is refused its third call. The run goes on and ends ok, and every task row
    carries what its calls cost, adding up to the run's model spend."""
    platform, server = priced
    client = platform.client
    calls = [1, 2, 3, 1]
    rows = [
        # The priced model answers 1 to everything: right, here.
        {"task_id": f"t{i}", "input": {"a": i, "b": 1, "calls": n}, "expected": "1"}
        for i, n in enumerate(calls)
    ]
    bm = (await client.post("/v1/benchmarks", json={"name": "Costly Sums"})).json()
    sub = await client.post(
        f"/v1/benchmarks/{bm['id']}/subsets", json={"slug": "v1", "tasks": rows}
    )
    assert sub.status_code == 201, sub.text
    impl = await client.post(
        "/v1/impls",
        json={"subset": sub.json()["id"], "label": "repeats", "code": REPEATING_IMPL},
    )
    assert impl.status_code == 201, impl.text
    launch = {
        "benchmark": bm["id"],
        "subset": sub.json()["id"],
        "impl": impl.json()["id"],
        "sut": {"model": "pricey", "provider": "openai_compatible", "api_base": server.base_url},
        "limits": {"task": {"cost": 10.0}},
    }
    run = (await client.post("/v1/runs", json=launch)).json()
    done = await platform.wait_terminal(run["id"], timeout=120)
    assert done["status"] == "ok" and not done["halted"], done
    tasks = (await client.get(f"/v1/runs/{run['id']}/tasks")).json()["data"]
    by_id = {t["task_id"]: t for t in tasks}
    assert [by_id[f"t{i}"]["outcome"] for i in range(4)] == ["pass", "err", "err", "pass"]
    assert by_id["t1"]["error_type"] == by_id["t2"]["error_type"] == "limit_exceeded:task.cost"
    spent = {t: (by_id[t]["cost"]["amount_usd"], by_id[t]["cost"]["calls"]) for t in by_id}
    # t2's third call was refused: only two were made and billed.
    assert spent == {"t0": (9.0, 1), "t1": (18.0, 2), "t2": (18.0, 2), "t3": (9.0, 1)}
    assert all(by_id[t]["cost"]["prompt_tokens"] == 9 * spent[t][1] for t in by_id)
    settled = await platform.wait_for(
        run["id"], lambda r: (r["cost"] or {}).get("model", {}).get("calls") == 6, timeout=30
    )
    assert settled["cost"]["model"]["amount_usd"] == sum(usd for usd, _ in spent.values())
