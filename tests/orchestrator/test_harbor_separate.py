"""Harbor's "separate" verifier over real sandboxes: the tests run in a fresh sandbox
holding what the agent left in its working tree and ``/logs``, and nothing else.

The task's ``solve.sh`` answers in ``/app``, leaves a note in ``/logs/agent`` and plants
a file in ``/tests``; its ``test.sh`` passes only when the answer and the note came
across and the planted file did not (``/tests`` is the verifier's, laid out afresh).
"""

import textwrap

import pytest

from tests.orchestrator.bwrap_workspace import BwrapWorkspace, bwrap_usable
from tests.orchestrator.test_harbor_phase import context, harbor_run, swept

pytestmark = pytest.mark.skipif(not bwrap_usable(), reason="bubblewrap cannot make a sandbox")

TASK = "carry-answer"
FILES = {
    f"{TASK}/task.toml": textwrap.dedent(
        """
        schema_version = "1.1"
        [verifier]
        timeout_sec = 60.0
        environment_mode = "separate"
        [agent]
        timeout_sec = 60.0
        """
    ),
    f"{TASK}/instruction.md": "Write 42 to /app/answer.txt.\n",
    f"{TASK}/environment/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\n",
    f"{TASK}/solution/solve.sh": textwrap.dedent(
        """\
        #!/bin/bash
        echo 42 > /app/answer.txt
        echo kept > /logs/agent/note.txt
        echo planted > /tests/planted.sh
        """
    ),
    f"{TASK}/tests/test.sh": textwrap.dedent(
        """\
        #!/bin/bash
        mkdir -p /logs/verifier
        if [ "$(cat /app/answer.txt)" = 42 ] && [ -f /logs/agent/note.txt ] \\
           && [ ! -e /tests/planted.sh ]; then
          echo 1 > /logs/verifier/reward.txt
        else
          echo 0 > /logs/verifier/reward.txt
        fi
        """
    ),
}


@pytest.mark.parametrize(("agent", "outcome"), [("oracle", "pass"), ("nop", "fail")])
async def test_the_separate_verifier_sees_what_the_agent_left_in_a_fresh_sandbox(
    agent: str, outcome: str
) -> None:
    run = harbor_run(agent)
    assert run.harness is not None
    run.harness = {**run.harness, "dataset": "separate", "files": FILES}
    ctx = context(run)
    rows = await swept(ctx)
    assert rows[TASK][0].outcome == outcome, (rows[TASK][0].error_type, rows[TASK][0].error)
    work = ctx.work
    assert isinstance(work, BwrapWorkspace)
    # The agent's sandbox, then the verifier's: both gone.
    assert len(work.created) == 2 and sorted(work.killed) == sorted(work.created)
    assert not work.roots
