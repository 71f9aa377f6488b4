"""A product-sandbox run on the embedded platform, through the API (issue 22): a small
HTTP product is started from a command in each task's bubblewrap sandbox, waited for,
driven with the task's instruction, and asks the scripted model through the run's
proxy (the only address the sandbox can reach); the tasks' verifiers score what it
wrote. A probe sandbox checks the environment first; a product it cannot find there
refuses the run before any task sandbox starts.
"""

from typing import Any

import pytest

from benchwright import AsyncBenchwright
from tests.conftest import Platform
from tests.support.product_tasks import (
    PRODUCT_ARGS,
    PRODUCT_DATASET,
    PRODUCT_SOLVED,
    PRODUCT_TASKS,
    product_book,
    product_files,
)
from tests.support.scripted_agent_model import ScriptedAgentServer
from tests.system.test_leaderboards import RUN_TIMEOUT, finish

pytestmark = [pytest.mark.slow, pytest.mark.connected, pytest.mark.embedded_only]


@pytest.fixture
def model() -> Any:
    server = ScriptedAgentServer(product_book()).start()
    yield server
    server.stop()


def launch_args(model: ScriptedAgentServer, agent_args: dict[str, Any]) -> dict[str, Any]:
    return {
        "harness": "harbor",
        "sut": {"model": "scripted", "provider": "openai_compatible", "api_base": model.base_url},
        "metadata": {
            "harbor_harness": {
                "dataset": PRODUCT_DATASET,
                "files": product_files(),
                "agent": "product",
                "agent_args": agent_args,
            }
        },
    }


async def roles(bw: AsyncBenchwright, run_id: str) -> list[str]:
    created = (await bw.runs.events(run_id, types=("SandboxCreated",), limit=100)).data
    return [e.data["metadata"]["benchwright_role"] for e in created]


async def test_a_product_run_scores_exactly_the_tasks_its_product_solves(
    platform: Platform, bw: AsyncBenchwright, model: ScriptedAgentServer
) -> None:
    launched = await bw.runs.launch(**launch_args(model, PRODUCT_ARGS))
    run = await finish(bw, launched.id)
    assert run.status == "ok"
    assert run.summary.total == len(PRODUCT_TASKS)
    assert run.summary.passed == len(PRODUCT_SOLVED)
    page = await bw.runs.tasks(run.id, limit=100)
    passed = {t.task_id for t in page.data if t.outcome == "pass"}
    assert passed == PRODUCT_SOLVED
    # The product's calls reached the model through the proxy (one per task).
    assert len(model.requests) == len(PRODUCT_TASKS)
    assert sorted(await roles(bw, run.id)) == sorted(
        ["template_probe"] + ["harbor_task_env"] * len(PRODUCT_TASKS)
    )
    probed = (await bw.runs.events(run.id, types=("TemplateProbed",), limit=10)).data
    assert len(probed) == 1 and probed[0].data["ok"] is True
    steps = (await bw.runs.events(run.id, types=("AgentToolResult",), limit=100)).data
    assert sorted({e.data["name"] for e in steps}) == ["product_boot", "product_request"]
    assert all(not e.data["is_error"] for e in steps)


async def test_a_product_the_probe_cannot_find_refuses_the_run(
    platform: Platform, bw: AsyncBenchwright, model: ScriptedAgentServer
) -> None:
    args = {**PRODUCT_ARGS, "command": ["/srv/product/missing-binary"]}
    launched = await bw.runs.launch(**launch_args(model, args))
    run = await bw.runs.wait(launched.id, timeout=RUN_TIMEOUT, poll_interval=0.2)
    assert run.status == "error"
    assert run.error is not None and run.error["type"] == "product_probe_failed"
    assert "'/srv/product/missing-binary' is not there" in run.error["detail"]
    assert await roles(bw, run.id) == ["template_probe"]
    assert model.requests == []
