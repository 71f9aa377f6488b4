"""Harbor's installed agents through the bridge, end to end on the embedded platform:
``harbor:claude-code`` and ``harbor:codex`` launched through the API, their ``claude``
and ``codex`` CLIs (fakes, ``tests/support/fake_claude.py`` and ``fake_codex.py``) in
the operator's agent directory that the real sandbox-manager binds into each task
sandbox, their calls through the real proxy's Anthropic or Responses endpoint to a
scripted model. Each scores exactly the task the script solves; each row and the run
carry what the proxy charged. An agent the bridge cannot point at the proxy is refused
at launch."""

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Platform, platform_settings
from tests.orchestrator.test_harbor_codex import FAKE_CODEX
from tests.orchestrator.test_harbor_codex import SCRIPTS as CODEX_SCRIPTS
from tests.orchestrator.test_harbor_installed_agents import FAKE_CLAUDE, SCRIPTS, spent
from tests.support.harbor_scripts import TASKS
from tests.support.scripted_agent_model import ScriptBook, ScriptedAgentServer, final
from tests.system.test_harbor_bridge_runs import PRICES
from tests.system.test_harbor_runs import harbor, sut

pytestmark = [pytest.mark.slow, pytest.mark.connected]


@pytest.fixture
def model() -> Any:
    server = ScriptedAgentServer(ScriptBook(SCRIPTS, default=(final("nothing to do"),))).start()
    yield server
    server.stop()


@pytest.fixture
async def platform_with_claude(tmp_path: Path) -> Any:
    agents = tmp_path / "agent-bin"
    agents.mkdir()
    for fake, name in ((FAKE_CLAUDE, "claude"), (FAKE_CODEX, "codex")):
        shutil.copy(fake, agents / name)
        (agents / name).chmod(0o755)
    settings = platform_settings(tmp_path / "data", None, None).model_copy(
        update={"model_prices": PRICES, "agent_bin_dir": agents}
    )
    platform = await Platform(settings).start()
    try:
        yield platform
    finally:
        await platform.shutdown()


@pytest.fixture
def codex_model() -> Any:
    book = ScriptBook(CODEX_SCRIPTS, default=(final("nothing to do"),))
    server = ScriptedAgentServer(book).start()
    yield server
    server.stop()


async def test_claude_code_through_the_proxy_scores_what_its_model_says(
    platform_with_claude: Platform, model: ScriptedAgentServer
) -> None:
    await scores_what_its_model_says(platform_with_claude, model, "harbor:claude-code")


async def test_codex_through_the_proxy_scores_what_its_model_says(
    platform_with_claude: Platform, codex_model: ScriptedAgentServer
) -> None:
    await scores_what_its_model_says(platform_with_claude, codex_model, "harbor:codex")


async def scores_what_its_model_says(
    platform: Platform, model: ScriptedAgentServer, agent: str
) -> None:
    client = platform.client
    assert client is not None
    launch = {"harness": "harbor", "sut": sut(model), "metadata": harbor(agent)}
    made = await client.post("/v1/runs", json=launch)
    assert made.status_code in (200, 201, 202), made.text
    run = made.json()
    done = await platform.wait_terminal(run["id"], timeout=300)
    assert done["status"] == "ok", done
    rows = (await client.get(f"/v1/runs/{run['id']}/tasks")).json()["data"]
    by_task = {r["task_id"]: r for r in rows}
    assert {t: by_task[t]["outcome"] for t in TASKS} == {
        t: "pass" if t == "write-greeting" else "fail" for t in TASKS
    }
    for task, row in by_task.items():
        expected = spent(2, 2 + 4) if task == "write-greeting" else spent(1, 2)
        cost = row["cost"]
        assert (cost["calls"], cost["prompt_tokens"], cost["completion_tokens"]) == (
            expected["calls"],
            expected["prompt_tokens"],
            expected["completion_tokens"],
        ), task
        assert cost["amount_usd"] == pytest.approx(expected["cost_micros"] / 1e6, abs=1e-9)
    # The proxy metered every call the model answered, and the run adds them up.
    settled = await platform.wait_for(
        run["id"],
        lambda r: (r["cost"] or {}).get("model", {}).get("calls") == len(model.requests),
        timeout=30,
    )
    assert len(model.requests) == len(TASKS) + 1
    assert settled["cost"]["model"]["amount_usd"] == pytest.approx(
        sum(r["cost"]["amount_usd"] for r in rows), abs=1e-9
    )


async def test_an_unbridged_cli_is_refused_at_launch_naming_the_agent(
    platform_with_claude: Platform, model: ScriptedAgentServer
) -> None:
    client = platform_with_claude.client
    assert client is not None
    launch = {"harness": "harbor", "sut": sut(model), "metadata": harbor("harbor:gemini-cli")}
    refused = await client.post("/v1/runs", json=launch)
    assert refused.status_code == 400
    problem = refused.json()
    assert problem["field"] == "metadata.harbor_harness.agent"
    assert problem["code"] == "agent_unavailable"
    assert "'gemini'" in problem["detail"] and "'harbor:codex'" in problem["detail"]
