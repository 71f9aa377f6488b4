"""Halting a Harbor run mid-agent: a kill stops every agent at once, a pause parks
the run and a resume reruns the cut attempts, each trial scored once.

The platform's agent runs the starter dataset against a scripted model that takes
``DELAY_S`` per answer, so the halt lands while agents wait on the model. The bound
stated (decision 0049): a halt cancels an attempt at its next await, so no model
call is sent after the run has stopped, and the run stops within one answer's wait.
"""

import asyncio
from typing import Any

import pytest

from benchwright import AsyncBenchwright
from tests.conftest import Platform
from tests.support.harbor_scripts import SOLVED, TASKS, starter_book
from tests.support.scripted_agent_model import ScriptedAgentServer
from tests.system.test_harbor_runs import harbor, outcomes, sut

pytestmark = [pytest.mark.slow, pytest.mark.connected, pytest.mark.embedded_only]

DELAY_S = 1.0
# A halt's whole path (API, bus, cancel, teardown) on a loaded 2-core machine.
STOP_BOUND_S = 20.0


@pytest.fixture
def model() -> Any:
    server = ScriptedAgentServer(starter_book(), delay_s=DELAY_S).start()
    yield server
    server.stop()


async def first_turn(bw: AsyncBenchwright, run_id: str) -> None:
    for _ in range(600):
        if (await bw.runs.events(run_id, types=["AgentModelTurn"], limit=1)).data:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("no agent ever took a turn")


async def sandboxes(bw: AsyncBenchwright, run_id: str) -> tuple[set[str], set[str]]:
    kinds = ["SandboxCreated", "SandboxKilled"]
    events = (await bw.runs.events(run_id, types=kinds, limit=1000)).data
    made = {e.data["sandbox_id"] for e in events if e.type == "SandboxCreated"}
    gone = {e.data["sandbox_id"] for e in events if e.type == "SandboxKilled"}
    return made, gone


async def test_a_kill_stops_every_agent_and_their_sandboxes(
    platform: Platform, bw: AsyncBenchwright, model: ScriptedAgentServer
) -> None:
    launched = await bw.runs.launch(
        harness="harbor", sut=sut(model), metadata=harbor("benchwright")
    )
    await first_turn(bw, launched.id)
    await bw.runs.halt(launched.id)
    halted_at = asyncio.get_running_loop().time()
    done = await platform.wait_terminal(launched.id, timeout=STOP_BOUND_S)
    assert done["status"] == "error" and done["error"]["type"] == "halted", done["error"]
    assert asyncio.get_running_loop().time() - halted_at < STOP_BOUND_S
    asked = len(model.requests)
    await asyncio.sleep(DELAY_S * 3)
    assert len(model.requests) == asked  # no agent asks anything after the run stopped
    made, gone = await sandboxes(bw, launched.id)
    assert made and made == gone  # every attempt's sandbox was torn down


async def test_a_paused_run_resumes_and_scores_each_trial_once(
    platform: Platform, bw: AsyncBenchwright, model: ScriptedAgentServer
) -> None:
    launched = await bw.runs.launch(
        harness="harbor", sut=sut(model), metadata=harbor("benchwright")
    )
    await first_turn(bw, launched.id)
    await bw.runs.halt(launched.id, pause=True)
    await platform.wait_for(launched.id, lambda r: r["display_status"] == "paused", timeout=60)
    await bw.runs.resume(launched.id)
    run = await bw.runs.wait(launched.id, timeout=300, poll_interval=0.2)
    assert run.status == "ok", run.error
    found = await outcomes(bw, run.id)
    assert {name for name, trials in found.items() if trials == ["pass"]} == SOLVED
    assert set(found) == set(TASKS)
    results = (await bw.runs.events(run.id, types=["MaterializeTaskResult"], limit=100)).data
    assert sorted(e.data["index"] for e in results) == list(range(len(TASKS)))
    made, gone = await sandboxes(bw, run.id)
    assert made == gone
