"""Harbor's own agents through the bridge, over real task sandboxes (bubblewrap).

Each attempt starts Harbor's agent in a child process (the ``harbor`` package); its
environment relays every exec, upload and download back to the phase, which runs it
in the attempt's sandbox. On the benchwright-starter dataset Harbor's ``oracle``
scores every task and ``nop`` none; ``terminus-2`` against a scripted model (its
JSON answer format, over the proxy's OpenAI-compatible route) solves exactly the two
tasks its script solves, each row carrying what the proxy stamped on its calls; a
child that dies is an error row, not a hang.
"""

import asyncio
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchwright_orchestrator.phases import harbor_bridge
from tests.orchestrator.bwrap_workspace import BwrapWorkspace, bwrap_usable
from tests.orchestrator.fakes import FakeStore
from tests.orchestrator.test_harbor_phase import context, harbor_run, swept
from tests.support.harbor_scripts import TASKS, TOP_REGION
from tests.support.scripted_agent_model import (
    COST_MICROS_PER_TURN,
    INPUT_TOKENS_PER_MESSAGE,
    OUTPUT_TOKENS_PER_TURN,
    ScriptBook,
    ScriptedAgentServer,
    Turn,
    final,
)

pytestmark = [
    pytest.mark.skipif(not bwrap_usable(), reason="bubblewrap cannot make a sandbox"),
    pytest.mark.slow,
]


def terminus(commands: list[str], *, complete: bool = False, wait_s: float = 0.3) -> Turn:
    """One answer in terminus-2's JSON format (its ``terminus-json-plain`` template)."""
    return final(
        json.dumps(
            {
                "analysis": "scripted",
                "plan": "scripted",
                "commands": [{"keystrokes": c + "\n", "duration": wait_s} for c in commands],
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
    # Each row carries what the proxy stamped on its task's calls, as our own agent's do.
    for name, by_trial in rows.items():
        row = by_trial[0]
        answered = [
            r["body"]
            for r in terminus_model.requests
            if r["headers"]["x-benchwright-task"] == str(row.index)
        ]
        assert answered, name
        expected = {
            "calls": len(answered),
            "cost_micros": COST_MICROS_PER_TURN * len(answered),
            "prompt_tokens": sum(INPUT_TOKENS_PER_MESSAGE * len(b["messages"]) for b in answered),
            "completion_tokens": OUTPUT_TOKENS_PER_TURN * len(answered),
        }
        assert {k: getattr(row, k) for k in expected} == expected, name
    ended = {e.task_id: e for e in ctx.store.saved if type(e).__name__ == "AgentAttemptEnded"}
    assert {n: (e.cost_micros, e.turns) for n, e in ended.items()} == {
        n: (r[0].cost_micros, r[0].calls) for n, r in rows.items()
    }
    # The greeting's script: its command, then terminus-2's completion and its confirmation.
    greeting = rows["write-greeting"][0]
    assert (greeting.calls, greeting.cost_micros) == (3, 3 * COST_MICROS_PER_TURN)


def with_agent_timeout(run: Any, task: str, seconds: float) -> Any:
    toml = f"{task}/task.toml"
    files = run.harness["files"]
    assert "[agent]\ntimeout_sec = 300.0" in files[toml]
    files[toml] = files[toml].replace(
        "[agent]\ntimeout_sec = 300.0", f"[agent]\ntimeout_sec = {seconds}"
    )
    return run


async def test_a_terminus_2_cut_short_by_its_timeout_still_carries_its_calls_cost() -> None:
    # One call, whose command terminus-2 then waits on for longer than the attempt has.
    # The timeout covers the child's start (Harbor's and LiteLLM's imports): 40 s, as a
    # CI machine under the whole suite took more than 20 to make the one call.
    script = {"greeting.txt": [terminus(["sleep 120"], wait_s=120.0)]}
    server = ScriptedAgentServer(ScriptBook(script, default=DONE))
    server.start()
    try:
        run = with_agent_timeout(
            harbor_run("harbor:terminus-2", task="write-greeting"), "write-greeting", 40.0
        )
        ctx = context(run, server)
        row = (await swept(ctx))["write-greeting"][0]
    finally:
        server.stop()
    assert len(server.requests) == 1, (row.outcome, row.error_type, row.error)
    assert (row.outcome, row.calls, row.cost_micros) == ("fail", 1, COST_MICROS_PER_TURN)
    prompt = INPUT_TOKENS_PER_MESSAGE * len(server.requests[0]["body"]["messages"])
    assert (row.prompt_tokens, row.completion_tokens) == (prompt, OUTPUT_TOKENS_PER_TURN)
    ended = [e for e in ctx.store.saved if type(e).__name__ == "AgentAttemptEnded"]
    assert [(e.reason, e.cost_micros, e.turns) for e in ended] == [
        ("wall_time", COST_MICROS_PER_TURN, 1)
    ]


async def test_a_child_that_dies_is_an_error_row(monkeypatch: pytest.MonkeyPatch) -> None:
    # The child's module is one that exits at once: no "done", no hang.
    monkeypatch.setattr(harbor_bridge, "CHILD_MODULE", "tests.support.crashing_harbor_child")
    ctx = context(harbor_run("harbor:nop", task="write-greeting"))
    rows = await swept(ctx)
    row = rows["write-greeting"][0]
    assert row.outcome == "err" and row.error_type == "agent_crashed"
    assert "segfaulted on purpose" in row.error


def hanging_child(monkeypatch: pytest.MonkeyPatch, pidfile: Path) -> None:
    monkeypatch.setattr(harbor_bridge, "CHILD_MODULE", "tests.support.hanging_harbor_child")
    env = harbor_bridge._child_env
    monkeypatch.setattr(
        harbor_bridge, "_child_env", lambda: {**env(), "BW_HANG_PIDFILE": str(pidfile)}
    )


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # Killed and reaped, or a zombie about to be: either way it runs no more.
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


async def test_an_agent_past_its_timeout_is_killed_and_the_verifier_still_scores(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"
    hanging_child(monkeypatch, pidfile)
    run = with_agent_timeout(harbor_run("harbor:nop", task="write-greeting"), "write-greeting", 2.0)
    ctx = context(run)
    began = time.monotonic()
    rows = await swept(ctx)
    assert time.monotonic() - began < 30
    # The agent ran out of time: the verifier scored what it left (nothing), not an error.
    row = rows["write-greeting"][0]
    assert (row.outcome, row.score) == ("fail", 0.0)
    ended = [e for e in ctx.store.saved if type(e).__name__ == "AgentAttemptEnded"]
    assert [e.reason for e in ended] == ["wall_time"]
    assert gone(int(pidfile.read_text()))


async def test_a_halt_mid_agent_kills_the_child(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"
    hanging_child(monkeypatch, pidfile)
    ctx = context(harbor_run("harbor:nop", task="write-greeting"))
    sweeping = asyncio.ensure_future(swept(ctx))
    for _ in range(200):
        if pidfile.exists() and pidfile.read_text():
            break
        await asyncio.sleep(0.05)
    pid = int(pidfile.read_text())
    sweeping.cancel()
    with pytest.raises(asyncio.CancelledError):
        await sweeping
    assert gone(pid)
    work = ctx.work
    assert isinstance(work, BwrapWorkspace) and work.killed == work.created


async def test_a_child_that_garbles_the_protocol_is_an_error_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(harbor_bridge, "CHILD_MODULE", "tests.support.garbling_harbor_child")
    ctx = context(harbor_run("harbor:nop", task="write-greeting"))
    row = (await swept(ctx))["write-greeting"][0]
    assert row.outcome == "err" and row.error_type == "agent_crashed"
    assert "ValidationError" in row.error
