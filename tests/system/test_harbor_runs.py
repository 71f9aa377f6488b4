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
from typer.testing import CliRunner

from benchwright import AsyncBenchwright
from benchwright.cli import app
from tests.conftest import Platform
from tests.support.harbor_scripts import (
    DATASET,
    DATASET_NAME,
    SOLVED,
    TASKS,
    dataset_files,
    starter_book,
)
from tests.support.scripted_agent_model import ScriptedAgentServer
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


async def test_the_platforms_agent_scores_exactly_what_its_script_solves(
    platform: Platform, bw: AsyncBenchwright, model: ScriptedAgentServer
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

    # A folder that is not there is a one-line usage error, before any request.
    missing = await asyncio.to_thread(
        CliRunner().invoke,
        app,
        ["run", "--harness", "harbor", "--harness-task", str(tmp_path / "nope"), "--agent", "nop"],
    )
    assert missing.exit_code != 0 and "nope" in missing.stderr
