"""Harbor's Setup and Materialize over real task sandboxes (bubblewrap, no bus).

The benchwright-starter dataset: Harbor's ``oracle`` scores every task, ``nop`` none,
and the platform's own agent, driven over HTTP by a scripted tool-calling model,
exactly the three tasks its script solves. A sandbox lost mid-attempt reruns the
trial from a fresh sandbox as the next attempt; past the cap, the trial is an error.
"""

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from benchwright_orchestrator.domain import Run
from benchwright_orchestrator.domain.agents import MAX_ATTEMPTS
from benchwright_orchestrator.phases import PhaseContext
from benchwright_orchestrator.phases.harbor import harbor_materialize, harbor_setup, sandbox_dirs
from benchwright_orchestrator.ports import PhaseError
from benchwright_shared.agentic import EnvironmentPlan
from benchwright_shared.contracts import ModelAttached
from benchwright_shared.settings import Settings
from tests.orchestrator.bwrap_workspace import BwrapWorkspace, bwrap_usable
from tests.orchestrator.fakes import FakeStore
from tests.orchestrator.test_materialize import NoDriver
from tests.support.harbor_scripts import (
    DATASET_NAME,
    SOLVED,
    TASKS,
    dataset_files,
    starter_book,
)
from tests.support.scripted_agent_model import ScriptBook, ScriptedAgentServer, call, final

pytestmark = pytest.mark.skipif(not bwrap_usable(), reason="bubblewrap cannot make a sandbox")


def harbor_run(agent: str, *, k: int = 1, task: str | None = None, **args: Any) -> Run:
    harness = {
        "name": "harbor",
        "dataset": DATASET_NAME,
        "files": dataset_files(),
        "agent": agent,
        "agent_args": args,
        "task": task,
    }
    return Run(
        run_id=str(uuid.uuid4()),
        account="acct",
        mode="natural_language",
        benchmark_id=None,
        benchmark_name=f"harbor:{DATASET_NAME}",
        subset_id=None,
        subset_slug=None,
        impl_id=None,
        sut={"model": "scripted", "provider": "openai_compatible"},
        limit=None,
        metadata={},
        idempotency_key=None,
        trials={"plan": {"k": k}, "aggregator": {"name": "mean"}},
        harness=harness,
    )


@pytest.fixture
def model() -> Iterator[ScriptedAgentServer]:
    server = ScriptedAgentServer(starter_book())
    server.start()
    yield server
    server.stop()


def context(
    run: Run, model: ScriptedAgentServer | None = None, *, concurrency: int = 3, **work: Any
) -> PhaseContext:
    workspace = BwrapWorkspace(run, **work)
    if model is not None:
        workspace.model = ModelAttached(
            command_id="c",
            run_id=run.run_id,
            proxy_url=model.base_url.removesuffix("/v1"),
            proxy_key="run-key",
            model_id="scripted",
            litellm_config_yaml="model_list: []\n",
        )
    return PhaseContext(
        run=run,
        work=workspace,
        driver=NoDriver(),
        settings=Settings(task_concurrency=concurrency),
        store=FakeStore(),
        task_timeout_s=60.0,
    )


async def swept(ctx: PhaseContext) -> dict[str, dict[int, Any]]:
    """Setup and Materialize; each task's rows by trial."""
    run = ctx.run
    run.start_phase("setup")
    await harbor_setup(ctx)
    run.start_phase("materialize")
    await harbor_materialize(ctx)
    await ctx.save()
    store = ctx.store
    assert isinstance(store, FakeStore)
    rows: dict[str, dict[int, Any]] = {}
    for event in store.saved:
        if type(event).__name__ == "MaterializeTaskResult":
            rows.setdefault(event.task_id, {})[event.trial] = event
    return rows


def agent_events(ctx: PhaseContext) -> list[str]:
    store = ctx.store
    assert isinstance(store, FakeStore)
    return [type(e).__name__ for e in store.saved if type(e).__name__.startswith("Agent")]


async def test_oracle_scores_every_task_and_nop_none() -> None:
    oracle = context(harbor_run("oracle"))
    rows = await swept(oracle)
    assert sorted(rows) == sorted(TASKS)
    assert {name: r[0].outcome for name, r in rows.items()} == dict.fromkeys(TASKS, "pass")
    assert all(r[0].score == 1.0 for r in rows.values())
    work = oracle.work
    assert isinstance(work, BwrapWorkspace)
    assert len(work.created) == len(TASKS) and sorted(work.killed) == sorted(work.created)

    nop = context(harbor_run("nop"))
    rows = await swept(nop)
    assert {name: (r[0].outcome, r[0].score) for name, r in rows.items()} == dict.fromkeys(
        TASKS, ("fail", 0.0)
    )


async def test_the_platforms_agent_scores_exactly_what_its_script_solves(
    model: ScriptedAgentServer,
) -> None:
    ctx = context(harbor_run("benchwright", k=2), model)
    rows = await swept(ctx)
    passed = {name for name, r in rows.items() if all(t.outcome == "pass" for t in r.values())}
    failed = {name for name, r in rows.items() if all(t.outcome == "fail" for t in r.values())}
    assert passed == SOLVED and failed == set(TASKS) - SOLVED
    assert all(len(r) == 2 for r in rows.values())
    # Every model call went through the run's proxy key, naming its task and trial.
    assert {r["headers"]["authorization"] for r in model.requests} == {"Bearer run-key"}
    assert {r["headers"]["x-benchwright-trial"] for r in model.requests} == {"0", "1"}
    assert all(r["body"]["tools"] for r in model.requests)
    names = agent_events(ctx)
    assert names.count("AgentAttemptStarted") == names.count("AgentAttemptEnded") == 10
    # write-greeting: one turn calling write_file, then the final answer.
    store = ctx.store
    assert isinstance(store, FakeStore)
    greeting = [
        e
        for e in store.saved
        if getattr(e, "task_id", None) == "write-greeting" and getattr(e, "trial", None) == 0
    ]
    kinds = [type(e).__name__ for e in greeting]
    assert kinds == [
        "AgentAttemptStarted",
        "AgentModelTurn",
        "AgentToolResult",
        "AgentModelTurn",
        "AgentAttemptEnded",
        "VerifierFinished",
        "MaterializeTaskResult",
    ]
    assert greeting[2].output.startswith("wrote 24 bytes to /app/greeting.txt")
    assert greeting[5].reward == 1.0


async def test_the_tests_are_not_in_the_sandbox_while_the_agent_works() -> None:
    peek = ScriptBook(
        {"greeting.txt": [call("shell", command="ls -a /tests /solution; ls /logs"), final("x")]}
    )
    server = ScriptedAgentServer(peek)
    server.start()
    try:
        ctx = context(harbor_run("benchwright", task="write-greeting"), server)
        await swept(ctx)
    finally:
        server.stop()
    store = ctx.store
    assert isinstance(store, FakeStore)
    (listing,) = [e.output for e in store.saved if type(e).__name__ == "AgentToolResult"]
    assert "test.sh" not in listing and "solve.sh" not in listing and "agent" in listing


async def test_a_sandbox_lost_mid_attempt_reruns_the_trial_from_a_fresh_sandbox(
    model: ScriptedAgentServer,
) -> None:
    # The 3rd command of the only task (fix-median's edit) meets a dead sandbox-manager.
    ctx = context(harbor_run("benchwright", task="fix-median"), model, lose_at={3})
    rows = await swept(ctx)
    assert rows["fix-median"][0].outcome == "pass"
    work = ctx.work
    assert isinstance(work, BwrapWorkspace)
    assert len(work.created) == 2  # the second attempt began again from the task's files
    store = ctx.store
    assert isinstance(store, FakeStore)
    ends = [(e.attempt, e.reason) for e in store.saved if type(e).__name__ == "AgentAttemptEnded"]
    assert ends == [(1, "crashed"), (2, "done")]
    (verdict,) = [e for e in store.saved if type(e).__name__ == "VerifierFinished"]
    assert verdict.attempt == 2 and verdict.reward == 1.0


async def test_past_the_attempt_cap_the_trial_is_an_error() -> None:
    # nop runs one command (mkdir) before the verifier: lose every attempt's first.
    ctx = context(harbor_run("nop", task="write-greeting"), lose_at={1, 2, 3})
    rows = await swept(ctx)
    row = rows["write-greeting"][0]
    assert row.outcome == "err" and row.error_type == "crashed"
    assert MAX_ATTEMPTS == 3


async def test_a_verifier_that_writes_no_reward_is_an_error_not_a_zero() -> None:
    files = dataset_files()
    files["write-greeting/tests/test.sh"] = "#!/bin/bash\nexit 3\n"
    run = harbor_run("oracle", task="write-greeting")
    assert run.harness is not None
    run.harness["files"] = files
    ctx = context(run)
    rows = await swept(ctx)
    row = rows["write-greeting"][0]
    assert row.outcome == "err" and row.error_type == "verifier:reward_missing"
    assert "exited 3" in row.error


async def test_a_dataset_the_gateway_would_refuse_fails_setup_by_name() -> None:
    run = harbor_run("oracle")
    assert run.harness is not None
    run.harness["files"] = {"broken/task.toml": "not = [toml"}
    with pytest.raises(PhaseError) as failed:
        await swept(context(run))
    assert failed.value.error_type == "harness_task_broken"


def test_a_task_sandbox_presents_harbors_places_and_the_plans() -> None:
    plan = EnvironmentPlan(
        base="python:3.12-slim",
        workdir="/app",
        files={"/app/a.txt": b"", "/data/b.csv": b""},
        directories=("/srv/cache",),
    )
    assert sandbox_dirs(plan) == ["/app", "/data", "/logs", "/solution", "/srv", "/tests"]
