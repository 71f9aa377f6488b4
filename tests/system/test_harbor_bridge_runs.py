"""Harbor's own agents through the bridge, end to end on the embedded platform: the
launch through the API, the run's real sandbox-manager and proxy, the verifier.

``harbor:oracle`` (Harbor's own ``OracleAgent``, in a child process, its commands
relayed into each task's sandbox) scores every task; ``harbor:terminus-2``, its model
a scripted server behind the run's proxy, solves exactly the tasks its script solves,
every call carrying the run's key, never the provider's, and each task's row what
the proxy charged for its calls.
"""

from pathlib import Path
from typing import Any

import pytest

from benchwright import AsyncBenchwright
from tests.conftest import Platform, platform_settings
from tests.orchestrator.test_harbor_bridge import DONE, TERMINUS_SCRIPTS, TERMINUS_SOLVED
from tests.support.harbor_scripts import DATASET, TASKS
from tests.support.scripted_agent_model import (
    INPUT_TOKENS_PER_MESSAGE,
    OUTPUT_TOKENS_PER_TURN,
    ScriptBook,
    ScriptedAgentServer,
)
from tests.system.test_harbor_runs import about, harbor, outcomes, sut, trajectories
from tests.system.test_leaderboards import finish

pytestmark = [pytest.mark.slow, pytest.mark.connected, pytest.mark.embedded_only]


@pytest.fixture
def terminus_model() -> Any:
    server = ScriptedAgentServer(ScriptBook(TERMINUS_SCRIPTS, default=DONE)).start()
    yield server
    server.stop()


async def test_harbors_oracle_scores_every_task_through_the_bridge(
    platform: Platform, bw: AsyncBenchwright, terminus_model: ScriptedAgentServer
) -> None:
    launched = await bw.runs.launch(
        harness="harbor", sut=sut(terminus_model), metadata=harbor("harbor:oracle")
    )
    run = await finish(bw, launched.id)
    assert run.summary.total == len(TASKS) and run.summary.passed == len(TASKS)
    assert await outcomes(bw, run.id) == {key: ["pass"] for key in TASKS}
    # Harbor's oracle uploaded each task's solution and ran it: relayed, recorded.
    events = (await bw.runs.events(run.id, types=("AgentToolResult",), limit=500)).data
    names = [e.data["name"] for e in events]
    assert names.count("exec") >= len(TASKS) and "upload" in names
    assert terminus_model.requests == []
    # The ATIF export reads them, valid against Harbor's own model: one trajectory a
    # task, the relayed commands an agent step of no model call.
    exported = await trajectories(bw, run.id)
    assert sorted(about(t)["task_id"] for t in exported) == sorted(TASKS)
    for t in exported:
        assert t.agent.name == "harbor:oracle"
        assert [s.source for s in t.steps] == ["user", "agent"]
        assert t.steps[1].llm_call_count == 0 and t.steps[1].observation is not None


async def test_terminus_2_through_the_proxy_scores_exactly_what_its_script_solves(
    platform: Platform, bw: AsyncBenchwright, terminus_model: ScriptedAgentServer
) -> None:
    launched = await bw.runs.launch(
        harness="harbor", sut=sut(terminus_model), metadata=harbor("harbor:terminus-2")
    )
    run = await finish(bw, launched.id)
    found = await outcomes(bw, run.id)
    assert {name for name, o in found.items() if o == ["pass"]} == TERMINUS_SOLVED
    assert {name for name, o in found.items() if o == ["fail"]} == set(TASKS) - TERMINUS_SOLVED
    # Every call reached the model through the run's proxy.
    assert terminus_model.requests
    assert all(r["body"]["messages"] for r in terminus_model.requests)


# A micro-dollar per prompt token and two per completion token: a call's cost is exact.
PRICES = {"openai_compatible/scripted": {"prompt_per_mtok": 1.0, "completion_per_mtok": 2.0}}


@pytest.fixture
async def priced(tmp_path: Path) -> Any:
    settings = platform_settings(tmp_path, None, None).model_copy(update={"model_prices": PRICES})
    platform = await Platform(settings).start()
    try:
        yield platform
    finally:
        await platform.shutdown()


def instruction(task: str) -> str:
    return (DATASET / task / "instruction.md").read_text().strip()


def first_user_message(messages: list[dict[str, Any]]) -> str:
    return next((str(m.get("content")) for m in messages if m["role"] == "user"), "")


async def test_terminus_2_rows_carry_what_the_proxy_charged_for_their_calls(
    priced: Platform, terminus_model: ScriptedAgentServer
) -> None:
    client = priced.client
    assert client is not None
    launch = {
        "harness": "harbor",
        "sut": sut(terminus_model),
        "metadata": harbor("harbor:terminus-2"),
    }
    run = (await client.post("/v1/runs", json=launch)).json()
    done = await priced.wait_terminal(run["id"], timeout=300)
    assert done["status"] == "ok", done
    rows = (await client.get(f"/v1/runs/{run['id']}/tasks")).json()["data"]
    assert sorted(r["task_id"] for r in rows) == sorted(TASKS)
    for row in rows:
        # The calls the scripted model answered for this task (its instruction opens them).
        asked = [
            r["body"]["messages"]
            for r in terminus_model.requests
            if instruction(row["task_id"]) in first_user_message(r["body"]["messages"])
        ]
        prompt = sum(INPUT_TOKENS_PER_MESSAGE * len(m) for m in asked)
        completion = OUTPUT_TOKENS_PER_TURN * len(asked)
        cost = row["cost"]
        assert asked and cost["calls"] == len(asked), row
        assert (cost["prompt_tokens"], cost["completion_tokens"]) == (prompt, completion)
        assert cost["amount_usd"] == pytest.approx((prompt + 2 * completion) / 1e6, abs=1e-9)
    settled = await priced.wait_for(
        run["id"],
        lambda r: (r["cost"] or {}).get("model", {}).get("calls") == len(terminus_model.requests),
        timeout=30,
    )
    assert settled["cost"]["model"]["amount_usd"] == pytest.approx(
        sum(r["cost"]["amount_usd"] for r in rows), abs=1e-9
    )
