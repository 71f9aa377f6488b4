"""An agent's tool output too long for its event is kept whole and served by the API.

The event (``AgentToolResult``) holds the first 8 KiB and says it was cut; the whole
output (each stream up to the sandbox's 64 KiB exec cap) sits in the artifacts
bucket under its digest, and ``GET /v1/runs/{id}/tool-outputs/{seq}`` returns it.
"""

import textwrap
from typing import Any

import pytest

from benchwright import AsyncBenchwright, NotFoundError
from tests.conftest import Platform
from tests.support.scripted_agent_model import ScriptBook, ScriptedAgentServer, call, final
from tests.system.test_leaderboards import finish

pytestmark = [pytest.mark.slow, pytest.mark.connected, pytest.mark.embedded_only]

INSTRUCTION = "Count to ten thousand."
COUNT = "".join(f"{n}\n" for n in range(1, 10001))  # 48,894 characters


def dataset() -> dict[str, str]:
    return {
        "count/task.toml": textwrap.dedent(
            """
            schema_version = "1.1"
            [verifier]
            timeout_sec = 60.0
            [agent]
            timeout_sec = 120.0
            """
        ),
        "count/instruction.md": INSTRUCTION + "\n",
        "count/environment/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\n",
        "count/tests/test.sh": (
            "#!/bin/bash\nmkdir -p /logs/verifier\necho 1 > /logs/verifier/reward.txt\n"
        ),
    }


@pytest.fixture
def model() -> Any:
    book = ScriptBook(
        {
            INSTRUCTION: [
                call("shell", command="seq 1 10000"),
                call("shell", command="echo short"),
                final("counted"),
            ]
        }
    )
    server = ScriptedAgentServer(book).start()
    yield server
    server.stop()


async def test_a_cut_tool_output_is_kept_whole(
    platform: Platform, bw: AsyncBenchwright, model: ScriptedAgentServer
) -> None:
    launched = await bw.runs.launch(
        harness="harbor",
        sut={"model": "scripted", "provider": "openai_compatible", "api_base": model.base_url},
        metadata={
            "harbor_harness": {"dataset": "count", "files": dataset(), "agent": "benchwright"}
        },
    )
    run = await finish(bw, launched.id)
    long, short = (await bw.runs.events(run.id, types=["AgentToolResult"], limit=10)).data
    whole = COUNT + "[exit code: 0]"
    assert long.data["truncated"] and long.data["output_chars"] == len(whole)
    assert whole.startswith(long.data["output"])
    assert await bw.runs.tool_output(run.id, long.seq) == whole
    # Nothing was kept of an output that fit in its event, nor of what is no tool result.
    assert not short.data["truncated"] and short.data["output_object"] is None
    for seq in (short.seq, long.seq - 1, 10**9):
        with pytest.raises(NotFoundError) as refused:
            await bw.runs.tool_output(run.id, seq)
        assert refused.value.field == "seq"
