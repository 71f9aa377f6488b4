"""Harbor's "separate" verifier on the embedded platform: the agent's working tree and
``/logs`` travel through the artifacts bucket to a fresh sandbox, where the tests run
(the task: ``tests/orchestrator/test_harbor_separate.py``)."""

import pytest

from benchwright import AsyncBenchwright
from tests.conftest import Platform
from tests.orchestrator.test_harbor_separate import FILES, TASK
from tests.system.test_harbor_halt import sandboxes
from tests.system.test_leaderboards import finish

pytestmark = [pytest.mark.slow, pytest.mark.connected, pytest.mark.embedded_only]
SUT = {"model": "none", "provider": "openai_compatible", "api_base": "http://127.0.0.1:9/v1"}


@pytest.mark.parametrize(("agent", "passed"), [("oracle", 1), ("nop", 0)])
async def test_the_verifier_runs_apart_on_what_the_agent_left(
    platform: Platform, bw: AsyncBenchwright, agent: str, passed: int
) -> None:
    metadata = {"harbor_harness": {"dataset": "separate", "files": FILES, "agent": agent}}
    launched = await bw.runs.launch(harness="harbor", sut=SUT, metadata=metadata)
    run = await finish(bw, launched.id)
    tasks = (await bw.runs.tasks(run.id, limit=10)).data
    assert (run.summary.total, run.summary.passed) == (1, passed), tasks
    made, gone = await sandboxes(bw, run.id)
    assert len(made) == 2 and made == gone, TASK
