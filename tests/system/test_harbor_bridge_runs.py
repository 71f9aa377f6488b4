"""Harbor's own agents through the bridge, end to end on the embedded platform: the
launch through the API, the run's real sandbox-manager and proxy, the verifier.

``harbor:oracle`` (Harbor's own ``OracleAgent``, in a child process, its commands
relayed into each task's sandbox) scores every task; ``harbor:terminus-2``, its model
a scripted server behind the run's proxy, solves exactly the tasks its script solves,
every call carrying the run's key, never the provider's.
"""

from typing import Any

import pytest

from benchwright import AsyncBenchwright
from tests.conftest import Platform
from tests.orchestrator.test_harbor_bridge import DONE, TERMINUS_SCRIPTS, TERMINUS_SOLVED
from tests.support.harbor_scripts import TASKS
from tests.support.scripted_agent_model import ScriptBook, ScriptedAgentServer
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
