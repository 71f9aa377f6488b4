"""Harbor runs end to end (issue 22) on the embedded platform, offline: the
benchwright-starter dataset travels with the launch, each task runs in a bubblewrap
sandbox of its own laid out from its Dockerfile's plan, its tests score it.

``oracle`` scores every task, ``nop`` none, and the platform's own agent, its model a
scripted tool-calling server behind the run's proxy, exactly the tasks its script
solves: a pass count that is exact on every machine.
"""

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from harbor.models.trajectories import Observation, Trajectory
from typer.testing import CliRunner

from benchwright import AsyncBenchwright
from benchwright.cli import app
from tests.conftest import Platform
from tests.support.harbor_scripts import (
    DATASET,
    DATASET_NAME,
    SOLVED,
    STARTER_SCRIPTS,
    TASKS,
    dataset_files,
    starter_book,
)
from tests.support.scripted_agent_model import ScriptedAgentServer
from tests.system.test_export import read_inspect_log
from tests.system.test_leaderboards import finish

pytestmark = [pytest.mark.slow, pytest.mark.connected, pytest.mark.embedded_only]


@pytest.fixture
def model() -> Any:
    server = ScriptedAgentServer(starter_book()).start()
    yield server
    server.stop()


def sut(model: ScriptedAgentServer) -> dict[str, Any]:
    return {"model": "scripted", "provider": "openai_compatible", "api_base": model.base_url}


def harbor(agent: str, **extra: Any) -> dict[str, Any]:
    return {
        "harbor_harness": {"dataset": DATASET_NAME, "files": dataset_files(), "agent": agent},
        **extra,
    }


async def outcomes(bw: AsyncBenchwright, run_id: str) -> dict[str, list[str]]:
    page = await bw.runs.tasks(run_id, limit=100)
    # A task of one trial lists none: its own outcome is the trial's.
    return {t.task_id: [x.outcome for x in t.trials] or [t.outcome] for t in page.data}


async def trajectories(bw: AsyncBenchwright, run_id: str) -> list[Trajectory]:
    """The run's ``format=atif`` export, each line read by Harbor's own model."""
    lines = (await bw.runs.export(run_id, "atif")).decode().splitlines()
    return [Trajectory.model_validate_json(line) for line in lines]


def about(trajectory: Trajectory) -> dict[str, Any]:
    return dict((trajectory.extra or {})["benchwright"])


async def test_oracle_scores_every_task_and_nop_none(
    platform: Platform, bw: AsyncBenchwright, model: ScriptedAgentServer
) -> None:
    oracle = await bw.runs.launch(harness="harbor", sut=sut(model), metadata=harbor("oracle"))
    nop = await bw.runs.launch(harness="harbor", sut=sut(model), metadata=harbor("nop"))
    oracle_run, nop_run = await finish(bw, oracle.id), await finish(bw, nop.id)
    assert oracle_run.summary.total == nop_run.summary.total == len(TASKS)
    assert oracle_run.summary.passed == len(TASKS)
    assert nop_run.summary.passed == 0
    assert await outcomes(bw, nop.id) == {key: ["fail"] for key in TASKS}
    assert oracle_run.benchmark.name == f"harbor:{DATASET_NAME}"
    # The run keeps the files' names and digest, not their contents.
    kept = oracle_run.metadata["harbor_harness"]
    assert kept["files"] == sorted(dataset_files()) and len(kept["files_sha256"]) == 64
    assert model.requests == []  # neither agent asks a model anything

    # One trajectory a task: the oracle's one scripted call (solve.sh), nop's none.
    solved = await trajectories(bw, oracle.id)
    assert sorted(about(t)["task_id"] for t in solved) == sorted(TASKS)
    for t in solved:
        assert t.agent.name == "oracle" and [s.source for s in t.steps] == ["user", "agent"]
        assert t.steps[1].llm_call_count == 0 and t.steps[1].observation is not None
        assert [c.tool_call_id for c in t.steps[1].tool_calls or []] == ["solve"]
        assert about(t)["verifier"]["reward"] == 1.0 and about(t)["result"]["outcome"] == "pass"
    idle = await trajectories(bw, nop.id)
    assert sorted(about(t)["task_id"] for t in idle) == sorted(TASKS)
    assert all([s.source for s in t.steps] == ["user"] for t in idle)


async def test_the_platforms_agent_scores_exactly_what_its_script_solves(
    platform: Platform, bw: AsyncBenchwright, model: ScriptedAgentServer, tmp_path: Path
) -> None:
    launched = await bw.runs.launch(
        harness="harbor",
        sut=sut(model),
        metadata=harbor("benchwright"),
        trials={"plan": {"k": 2}, "aggregator": {"name": "mean"}},
    )
    run = await finish(bw, launched.id)
    found = await outcomes(bw, run.id)
    assert {name for name, trials in found.items() if trials == ["pass", "pass"]} == SOLVED
    assert {name for name, trials in found.items() if trials == ["fail", "fail"]} == (
        set(TASKS) - SOLVED
    )
    # Every call went through the proxy to the model, with the tools; no provider key
    # or run key reached a sandbox (the loop runs in the orchestrator).
    assert model.requests and all(r["body"].get("tools") for r in model.requests)
    agentic = ("AgentAttemptStarted", "AgentModelTurn", "VerifierFinished")
    events = (await bw.runs.events(run.id, types=agentic, limit=500)).data
    kinds = [e.type for e in events]
    assert kinds.count("AgentAttemptStarted") == kinds.count("VerifierFinished") == 10
    turns = [e for e in events if e.type == "AgentModelTurn"]
    assert turns and all(e.data["input_tokens"] > 0 for e in turns)

    # The ATIF export: one trajectory per task and trial, valid for Harbor's model, the
    # tool calls and final answers those of the model's script.
    exported = await trajectories(bw, run.id)
    assert sorted((about(t)["task_id"], about(t)["trial"]) for t in exported) == sorted(
        (name, trial) for name in TASKS for trial in (0, 1)
    )
    for t in exported:
        assert t.agent.name == "benchwright" and t.agent.model_name == "scripted@openai_compatible"
        assert [s.source for s in t.steps[:2]] == ["system", "user"]
        script = next(s for key, s in STARTER_SCRIPTS.items() if key in str(t.steps[1].message))
        agent_steps = t.steps[2:]
        assert len(agent_steps) == len(script)
        asked = [(c.function_name, c.arguments) for s in agent_steps for c in s.tool_calls or []]
        assert asked == [call for turn in script for call in turn.tool_calls]
        for step in agent_steps:
            answered = [
                r.source_call_id for r in (step.observation or Observation(results=[])).results
            ]
            assert answered == [c.tool_call_id for c in step.tool_calls or []]
            assert step.metrics is not None and (step.metrics.prompt_tokens or 0) > 0
        assert agent_steps[-1].message == script[-1].text
        reward = about(t)["verifier"]["reward"]
        assert reward == (1.0 if about(t)["task_id"] in SOLVED else 0.0)
        assert t.final_metrics is not None
        assert t.final_metrics.total_prompt_tokens == sum(
            s.metrics.prompt_tokens or 0 for s in agent_steps if s.metrics
        )

    # Inspect's own reader opens the .eval export: each sample the agent's conversation.
    log = await asyncio.to_thread(
        read_inspect_log, await bw.runs.export(run.id, "inspect"), tmp_path
    )
    assert log.samples is not None and len(log.samples) == len(TASKS) * 2
    by_trial = {(about(t)["task_id"], about(t)["trial"] + 1): t for t in exported}
    for sample in log.samples:
        twin = by_trial[(str(sample.id), sample.epoch)]
        assert [m.role for m in sample.messages[:2]] == ["system", "user"]
        calls = [
            (c.function, c.arguments)
            for m in sample.messages
            if m.role == "assistant"
            for c in m.tool_calls or []
        ]
        assert calls == [
            (c.function_name, c.arguments) for s in twin.steps for c in s.tool_calls or []
        ]
        tools = sum(1 for m in sample.messages if m.role == "tool")
        assert [e.event for e in sample.events].count("model") == len(twin.steps) - 2
        assert [e.event for e in sample.events].count("tool") == tools == len(calls)


async def test_the_cli_sends_a_task_folder_and_narrows_to_one_task(
    platform: Platform,
    model: ScriptedAgentServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert platform.client is not None
    monkeypatch.setenv("BW_PAT", platform.token)
    monkeypatch.setenv("BW_BASE_URL", str(platform.client.base_url).rstrip("/"))
    monkeypatch.setenv("BW_CONFIG", str(tmp_path / "config.toml"))
    launch = [
        "run",
        "--harness",
        "harbor",
        "--harness-task",
        str(DATASET),
        "--harbor-task",
        "write-greeting",
        "--agent",
        "benchwright",
        "--model",
        "scripted@openai_compatible",
        "--api-base",
        model.base_url,
        "-o",
        "json",
    ]
    done = await asyncio.to_thread(CliRunner().invoke, app, launch)
    assert done.exit_code == 0, done.output
    document = json.loads(done.stdout)
    assert document["run"]["status"] == "ok"
    assert document["summary"]["total"] == 1 and document["summary"]["passed"] == 1
    assert document["run"]["metadata"]["harbor_task"] == "write-greeting"

    # The CLI writes the run's trajectory: one task, one trial, one line.
    target = tmp_path / "run.atif.jsonl"
    exported = await asyncio.to_thread(
        CliRunner().invoke,
        app,
        ["run", "export", document["run"]["id"], "--format", "atif", "--to", str(target)],
    )
    assert exported.exit_code == 0, exported.output
    (line,) = target.read_text().splitlines()
    written = Trajectory.model_validate_json(line)
    assert about(written)["task_id"] == "write-greeting"
    assert [c.function_name for s in written.steps for c in s.tool_calls or []] == ["write_file"]

    # A folder that is not there is a one-line usage error, before any request.
    missing = await asyncio.to_thread(
        CliRunner().invoke,
        app,
        ["run", "--harness", "harbor", "--harness-task", str(tmp_path / "nope"), "--agent", "nop"],
    )
    assert missing.exit_code != 0 and "nope" in missing.stderr
