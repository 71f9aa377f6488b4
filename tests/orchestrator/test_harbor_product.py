"""A product under test as a Harbor run's agent, over real task sandboxes (bubblewrap).

The product (``tests/support/product_server.py``) is started in each task's sandbox
from its command, waited for, driven with the task's instruction, and asks the
scripted model through the run's proxy address; the verifier then checks what it
wrote. Before any task sandbox, a ``template_probe`` sandbox checks the environment
has the product's program. A product that never gets ready, or exits while booting,
gives error rows naming it; a probe that finds the program missing refuses the run.
"""

import socket
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from benchwright_orchestrator.domain import Run
from benchwright_orchestrator.phases import PhaseContext
from benchwright_orchestrator.ports import PhaseError
from tests.orchestrator.bwrap_workspace import BwrapWorkspace, bwrap_usable
from tests.orchestrator.fakes import FakeStore
from tests.orchestrator.test_harbor_phase import context as phase_context
from tests.orchestrator.test_harbor_phase import swept
from tests.support.product_tasks import (
    PRODUCT_ARGS,
    PRODUCT_DATASET,
    PRODUCT_SOLVED,
    PRODUCT_TASKS,
    product_book,
    product_files,
)
from tests.support.scripted_agent_model import COST_MICROS_PER_TURN, ScriptedAgentServer

pytestmark = pytest.mark.skipif(not bwrap_usable(), reason="bubblewrap cannot make a sandbox")
TASKS = {name for name, _, _ in PRODUCT_TASKS}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def product_args(**changes: Any) -> dict[str, Any]:
    """The product's arguments on a free port: here every sandbox shares the host's
    network (to reach the fake model), so the attempts run one at a time."""
    port = free_port()
    args = {
        **PRODUCT_ARGS,
        "command": ["python3", "/srv/product/server.py", "--port", str(port)],
        "ready_url": f"http://127.0.0.1:{port}/health",
        "drive_url": f"http://127.0.0.1:{port}/task",
    }
    return {**args, **changes}


def product_run(args: dict[str, Any]) -> Run:
    return Run(
        run_id=str(uuid.uuid4()),
        account="acct",
        mode="natural_language",
        benchmark_id=None,
        benchmark_name=f"harbor:{PRODUCT_DATASET}",
        subset_id=None,
        subset_slug=None,
        impl_id=None,
        sut={"model": "scripted", "provider": "openai_compatible"},
        limit=None,
        metadata={},
        idempotency_key=None,
        trials={"plan": {"k": 1}, "aggregator": {"name": "mean"}},
        harness={
            "name": "harbor",
            "dataset": PRODUCT_DATASET,
            "files": product_files(),
            "agent": "product",
            "agent_args": args,
            "task": None,
        },
    )


@pytest.fixture
def model() -> Iterator[ScriptedAgentServer]:
    server = ScriptedAgentServer(product_book())
    server.start()
    yield server
    server.stop()


def context(run: Run, model: ScriptedAgentServer) -> PhaseContext:
    # One attempt at a time: the products share the host's network here (a free port each).
    return phase_context(run, model, concurrency=1)


def saved(ctx: PhaseContext, kind: str) -> list[Any]:
    store = ctx.store
    assert isinstance(store, FakeStore)
    return [e for e in store.saved if type(e).__name__ == kind]


def roles(ctx: PhaseContext) -> list[str]:
    return [e.metadata["benchwright_role"] for e in saved(ctx, "SandboxCreated")]


async def test_a_product_is_started_waited_for_and_driven_and_scores_what_it_solves(
    model: ScriptedAgentServer,
) -> None:
    ctx = context(product_run(product_args()), model)
    rows = await swept(ctx)
    outcomes = {name: r[0].outcome for name, r in rows.items()}
    assert outcomes == {name: "pass" if name in PRODUCT_SOLVED else "fail" for name in TASKS}
    # Each row carries what its one model call cost, as the proxy stamped it.
    assert {(r[0].calls, r[0].cost_micros) for r in rows.values()} == {(1, COST_MICROS_PER_TURN)}
    # One probe first, then one sandbox per task; every one of them killed.
    assert roles(ctx) == ["template_probe"] + ["harbor_task_env"] * len(TASKS)
    work = ctx.work
    assert isinstance(work, BwrapWorkspace)
    assert sorted(work.killed) == sorted(work.created)
    (probe,) = saved(ctx, "TemplateProbed")
    assert probe.ok and probe.problems == [] and sorted(probe.tasks) == sorted(TASKS)
    assert probe.found["executables"]["python3"] and probe.found["cwd_exists"]
    assert probe.found["base"] == "python:3.12-slim"
    # Every model call used the run's proxy key: the product never saw another.
    assert len(model.requests) == len(TASKS)
    assert {r["headers"]["authorization"] for r in model.requests} == {"Bearer run-key"}
    # ... each naming its task and trial (the driver's relay adds them), so the proxy
    # meters and caps the product's calls per task.
    assert sorted(r["headers"]["x-benchwright-task"] for r in model.requests) == ["0", "1", "2"]
    assert {r["headers"]["x-benchwright-trial"] for r in model.requests} == {"0"}
    # Each attempt's steps, in order: boot, request, end, verdict.
    store = ctx.store
    assert isinstance(store, FakeStore)
    capital = [e for e in store.saved if getattr(e, "task_id", None) == "capital-city"]
    assert [type(e).__name__ for e in capital] == [
        "AgentAttemptStarted",
        "AgentToolResult",
        "AgentToolResult",
        "AgentAttemptEnded",
        "VerifierFinished",
        "MaterializeTaskResult",
        "MaterializeTaskAggregated",
    ]
    started, boot, request, ended, verdict, *_ = capital
    assert started.agent == "product"
    assert boot.name == "product_boot" and not boot.is_error
    # The product holds the run's key under the usual names, and nothing else of ours.
    assert "keys: ANTHROPIC_API_KEY OPENAI_API_KEY\n" in boot.output
    assert request.name == "product_request" and '"answer": "Paris"' in request.output
    assert "HTTP 200" in request.output
    assert ended.reason == "done" and verdict.reward == 1.0


@pytest.mark.parametrize(
    ("changes", "error_type", "said"),
    [
        pytest.param(
            {"ready_timeout_s": 1.5, "never_ready": True},
            "product:not_ready",
            "did not answer",
            id="never-ready",
        ),
        pytest.param(
            {"command": ["python3", "-c", "print('no config'); raise SystemExit(3)"]},
            "product:exited",
            "exited with code 3 during its boot",
            id="exits-during-boot",
        ),
    ],
)
async def test_a_product_that_never_gets_ready_gives_error_rows_naming_it(
    model: ScriptedAgentServer, changes: dict[str, Any], error_type: str, said: str
) -> None:
    args = product_args()
    if changes.pop("never_ready", False):
        args["command"] = [*args["command"], "--never-ready"]
    args |= changes
    ctx = context(product_run(args), model)
    rows = await swept(ctx)
    assert {name: r[0].outcome for name, r in rows.items()} == dict.fromkeys(TASKS, "err")
    assert {r[0].error_type for r in rows.values()} == {error_type}
    detail = rows["capital-city"][0].error
    assert said in detail and "the product python3" in detail
    # No verifier ran: an error, not a failed task; the model was never asked.
    assert saved(ctx, "VerifierFinished") == [] and model.requests == []
    ends = {e.reason for e in saved(ctx, "AgentAttemptEnded")}
    assert ends == {"boot_failed"}
    if error_type == "product:exited":
        assert "no config" in detail  # the product's own output is in the row


async def test_a_probe_that_misses_the_product_refuses_the_run_before_any_task(
    model: ScriptedAgentServer,
) -> None:
    args = product_args(command=["no-such-product", "--serve"], requires=["python3", "node"])
    ctx = context(product_run(args), model)
    with pytest.raises(PhaseError) as refused:
        await swept(ctx)
    assert refused.value.error_type == "product_probe_failed"
    assert "'no-such-product' is not there" in refused.value.detail
    assert roles(ctx) == ["template_probe"]  # no task sandbox started
    work = ctx.work
    assert isinstance(work, BwrapWorkspace)
    assert work.killed == work.created
    (probe,) = saved(ctx, "TemplateProbed")
    assert not probe.ok and probe.found["executables"]["no-such-product"] is None
    assert probe.found["executables"]["python3"]
    assert saved(ctx, "MaterializeTaskResult") == []
