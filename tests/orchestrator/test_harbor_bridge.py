"""Harbor's own agents through the bridge, over real task sandboxes (bubblewrap).

Each attempt starts Harbor's agent in a child process (the ``harbor`` package); its
environment relays every exec, upload and download back to the phase, which runs it
in the attempt's sandbox. On the benchwright-starter dataset Harbor's ``oracle``
scores every task and ``nop`` none; ``terminus-2`` against a scripted model (its
JSON answer format, over the proxy's OpenAI-compatible route) solves exactly the two
tasks its script solves; a child that dies is an error row, not a hang.
"""

import json
from collections.abc import Iterator
from typing import Any

import pytest

from benchwright_orchestrator.phases import harbor_bridge
from tests.orchestrator.bwrap_workspace import BwrapWorkspace, bwrap_usable
from tests.orchestrator.fakes import FakeStore
from tests.orchestrator.test_harbor_phase import context, harbor_run, swept
from tests.support.harbor_scripts import TASKS, TOP_REGION
from tests.support.scripted_agent_model import ScriptBook, ScriptedAgentServer, Turn, final

pytestmark = [
    pytest.mark.skipif(not bwrap_usable(), reason="bubblewrap cannot make a sandbox"),
    pytest.mark.slow,
]


def terminus(commands: list[str], *, complete: bool = False) -> Turn:
    """One answer in terminus-2's JSON format (its ``terminus-json-plain`` template)."""
    return final(
        json.dumps(
            {
                "analysis": "scripted",
                "plan": "scripted",
                "commands": [{"keystrokes": c + "\n", "duration": 0.3} for c in commands],
                "task_complete": complete,
            }
        )
    )


# terminus-2 asks to confirm a completion: the second ``task_complete`` ends the attempt.
DONE = (terminus([], complete=True), terminus([], complete=True))
TERMINUS_SCRIPTS = {
    "greeting.txt": [
        terminus(["printf 'Hello from Benchwright!\\n' > /app/greeting.txt"]),
        *DONE,
    ],
    "highest total revenue": [terminus(["cd /app", TOP_REGION]), *DONE],
    # Wrong on purpose: nobody listed.
    "active_users.json": [terminus(["echo '[]' > /app/active_users.json"]), *DONE],
}
TERMINUS_SOLVED = {"write-greeting", "csv-top-region"}


@pytest.fixture
def terminus_model() -> Iterator[ScriptedAgentServer]:
    server = ScriptedAgentServer(ScriptBook(TERMINUS_SCRIPTS, default=DONE))
    server.start()
    yield server
    server.stop()


def tool_results(ctx: Any) -> list[Any]:
    store = ctx.store
    assert isinstance(store, FakeStore)
    return [e for e in store.saved if type(e).__name__ == "AgentToolResult"]


async def test_harbors_oracle_scores_every_task_and_its_nop_none() -> None:
    oracle = context(harbor_run("harbor:oracle"))
    rows = await swept(oracle)
    assert {name: (r[0].outcome, r[0].score) for name, r in rows.items()} == dict.fromkeys(
        TASKS, ("pass", 1.0)
    )
    ran = tool_results(oracle)
    # Harbor's oracle uploads solution/ and runs solve.sh, each relayed and recorded.
    assert {e.name for e in ran} >= {"upload", "exec"}
    assert any("solve.sh" in e.output for e in ran if e.name == "exec")
    work = oracle.work
    assert isinstance(work, BwrapWorkspace)
    assert sorted(work.killed) == sorted(work.created) and len(work.created) == len(TASKS)

    nop = context(harbor_run("harbor:nop"))
    rows = await swept(nop)
    assert {name: (r[0].outcome, r[0].score) for name, r in rows.items()} == dict.fromkeys(
        TASKS, ("fail", 0.0)
    )
    assert tool_results(nop) == []


async def test_terminus_2_solves_exactly_what_its_script_solves(
    terminus_model: ScriptedAgentServer,
) -> None:
    ctx = context(harbor_run("harbor:terminus-2"), terminus_model)
    rows = await swept(ctx)
    outcomes = {name: r[0].outcome for name, r in rows.items()}
    assert {n for n, o in outcomes.items() if o == "pass"} == TERMINUS_SOLVED
    assert {n for n, o in outcomes.items() if o == "fail"} == set(TASKS) - TERMINUS_SOLVED
    # Every call went to the proxy with the run's key and its task and trial headers.
    assert terminus_model.requests
    for request in terminus_model.requests:
        headers = request["headers"]
        assert headers["authorization"] == "Bearer run-key"
        assert headers["x-benchwright-trial"] == "0"
        assert request["body"]["model"] == "scripted"
    assert {r["headers"]["x-benchwright-task"] for r in terminus_model.requests} == {
        str(i) for i in range(len(TASKS))
    }
    assert any("tmux" in e.output for e in tool_results(ctx))


async def test_a_child_that_dies_is_an_error_row(monkeypatch: pytest.MonkeyPatch) -> None:
    # The child's module is one that exits at once: no "done", no hang.
    monkeypatch.setattr(harbor_bridge, "CHILD_MODULE", "tests.support.crashing_harbor_child")
    ctx = context(harbor_run("harbor:nop", task="write-greeting"))
    rows = await swept(ctx)
    row = rows["write-greeting"][0]
    assert row.outcome == "err" and row.error_type == "agent_crashed"
    assert "segfaulted on purpose" in row.error
