"""Which Materialize mode a run gets (concepts §4's order, and the operator's
override), and task sandboxes that a halt never leaves behind."""

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from benchwright_orchestrator.domain import Run
from benchwright_orchestrator.fanout import (
    TaskSandboxes,
    explain_materialize_mode,
    materialize_mode,
)
from benchwright_orchestrator.sweep import Sweep
from benchwright_orchestrator.workspace import PhaseError, Workspace
from benchwright_shared.contracts import (
    Contract,
    CreateSandbox,
    ModelAttached,
    SandboxCreated,
    TaskOutcome,
    TaskSpec,
)
from benchwright_shared.settings import Settings


@pytest.mark.parametrize(
    ("backend", "harness", "product_snapshot", "expected"),
    [
        # A product-sandbox run with a snapshot to restore: fanout, whatever else holds.
        ("local", None, True, "fanout"),
        ("sandbox0", "inspect", True, "fanout"),
        ("e2b", "harbor", True, "fanout"),
        # A harness bridge: sequential, even on e2b.
        ("e2b", "inspect", False, "sequential"),
        ("e2b", "lmeval", False, "sequential"),
        ("local", "harbor", False, "sequential"),
        # Our own harness is no bridge: the backend decides.
        ("e2b", "benchwright", False, "fanout"),
        ("e2b", None, False, "fanout"),
        # Everything else: sequential.
        ("local", None, False, "sequential"),
        ("sandbox0", None, False, "sequential"),
        ("sandbox0", "benchwright", False, "sequential"),
    ],
)
def test_the_mode_follows_the_runs_infrastructure_in_order(
    backend: str, harness: str | None, product_snapshot: bool, expected: str
) -> None:
    assert (
        materialize_mode(
            backend=backend, harness=harness, product_snapshot=product_snapshot, override="auto"
        )
        == expected
    )


@pytest.mark.parametrize("override", ["sequential", "fanout"])
@pytest.mark.parametrize(
    ("backend", "harness", "product_snapshot"),
    [
        ("local", None, False),
        ("e2b", None, False),
        ("local", None, True),
        ("e2b", "inspect", False),
    ],
)
def test_an_override_other_than_auto_wins(
    override: str, backend: str, harness: str | None, product_snapshot: bool
) -> None:
    mode, why = explain_materialize_mode(
        backend=backend, harness=harness, product_snapshot=product_snapshot, override=override
    )
    assert mode == override
    assert "BW_MATERIALIZE_MODE" in why


def test_every_choice_says_why_and_a_bad_override_is_refused() -> None:
    _, why = explain_materialize_mode(
        backend="local", harness=None, product_snapshot=False, override="auto"
    )
    assert "local" in why
    _, why = explain_materialize_mode(
        backend="e2b", harness="inspect", product_snapshot=False, override="auto"
    )
    assert "inspect" in why
    with pytest.raises(ValueError, match="override"):
        materialize_mode(backend="local", harness=None, product_snapshot=False, override="fan-out")


def test_the_setting_defaults_to_auto_and_reads_its_environment_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings().materialize_mode == "auto"
    monkeypatch.setenv("BW_MATERIALIZE_MODE", "fanout")
    assert Settings().materialize_mode == "fanout"
    monkeypatch.setenv("BW_MATERIALIZE_MODE", "fan-out")
    with pytest.raises(ValueError):
        Settings()


# -- task sandboxes under a halt ----------------------------------------------------
class FakeRun:
    run_id = "run_1"
    account = "acct_local"

    def __init__(self) -> None:
        self.open: dict[str, dict[str, Any]] = {}

    def sandbox_created(self, sandbox_id: str, backend: str, metadata: dict[str, Any]) -> None:
        self.open[sandbox_id] = metadata


class FakeWorkspace:
    """Answers CreateSandbox and kills after ``delay_s``, the way the bus would."""

    def __init__(self, delay_s: float) -> None:
        self.run = FakeRun()
        self.delay_s = delay_s
        self.created = 0

    @staticmethod
    def command_id() -> str:
        return "cmd"

    async def request(self, command: Contract, timeout: float = 120.0) -> Contract:
        assert isinstance(command, CreateSandbox)
        await asyncio.sleep(self.delay_s)
        self.created += 1
        return SandboxCreated(
            command_id=command.command_id,
            run_id=command.run_id,
            sandbox_id=f"sbx_{self.created}",
            role=command.role,
            backend=command.backend,
            created_at=datetime.now(UTC),
            metadata={"benchwright_role": command.role, "from_snapshot": command.from_snapshot},
        )

    async def kill_sandbox(self, sandbox_id: str, *, reason: str) -> None:
        await asyncio.sleep(self.delay_s)
        self.run.open.pop(sandbox_id)


def task_sandboxes(work: FakeWorkspace) -> TaskSandboxes:
    return TaskSandboxes(
        work=cast(Workspace, work), backend="local", snapshot="snap_atomize", files=[]
    )


async def test_a_task_sandbox_restores_the_snapshot_and_is_recorded_until_killed() -> None:
    work = FakeWorkspace(delay_s=0)
    sandboxes = task_sandboxes(work)
    sandbox_id = await sandboxes.create()
    assert work.run.open[sandbox_id] == {
        "benchwright_role": "task",
        "from_snapshot": "snap_atomize",
    }
    await sandboxes.kill(sandbox_id)
    assert work.run.open == {}


async def test_a_halt_while_a_task_sandbox_starts_kills_it_once_it_is_up() -> None:
    work = FakeWorkspace(delay_s=0.2)
    starting = asyncio.create_task(task_sandboxes(work).create())
    await asyncio.sleep(0.05)
    starting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starting
    assert work.created == 1 and work.run.open == {}


async def test_a_halt_while_a_task_sandbox_is_killed_still_records_the_kill() -> None:
    work = FakeWorkspace(delay_s=0)
    sandboxes = task_sandboxes(work)
    sandbox_id = await sandboxes.create()
    work.delay_s = 0.2
    killing = asyncio.create_task(sandboxes.kill(sandbox_id))
    await asyncio.sleep(0.05)
    killing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await killing
    assert work.run.open == {}


# -- a task whose sandbox fails ------------------------------------------------------
class FailingSandboxes:
    def __init__(self, *, starts: bool) -> None:
        self.starts = starts
        self.killed: list[str] = []

    async def create(self) -> str:
        if not self.starts:
            raise PhaseError("sandbox_setup_failed", "no room")
        return "sbx_task"

    async def kill(self, sandbox_id: str) -> None:
        self.killed.append(sandbox_id)


class OneTaskSweep(Sweep):
    """Just enough pipeline for one fanout task; the sandbox sweep reports trial 0, then dies."""

    def __init__(self) -> None:
        self.run = Run(
            run_id=str(uuid.uuid4()),
            account="acct",
            mode="pinned",
            benchmark_id="bm_x",
            benchmark_name="X",
            subset_id="sub_x",
            subset_slug="test",
            impl_id=None,
            sut={"model": "m", "provider": "p"},
            limit=5,
            metadata={},
            idempotency_key=None,
            trials={"plan": {"k": 2}, "aggregator": {"name": "any_pass"}},
        )
        self.run.start_phase("materialize")
        self.outcomes = {}
        self.trials = {}
        self.saves = 0

    async def save(self) -> None:
        self.saves += 1

    async def _sweep(self, sandbox_id: str, tasks: list[TaskSpec], model: ModelAttached) -> None:
        done = TaskOutcome(index=3, trial=0, task_id="t3", score=1.0, outcome="pass")
        self._record_results([done], self.run.invocations["materialize"])
        raise PhaseError("sandbox_exec_failed", "the sandbox died")


MODEL = ModelAttached(
    command_id="c", run_id="r", proxy_url="u", proxy_key="k", model_id="m", litellm_config_yaml=""
)


@pytest.mark.parametrize("starts", [True, False])
async def test_a_failed_task_sandbox_gives_its_unreported_trials_err_rows(starts: bool) -> None:
    sweep = OneTaskSweep()
    sandboxes = FailingSandboxes(starts=starts)
    unsent = [TaskSpec(index=3, trial=0), TaskSpec(index=3, trial=1)]
    await sweep._fanout_task(cast(TaskSandboxes, sandboxes), 3, unsent, MODEL)

    rows = [e for e in sweep.run.collect_events() if type(e).__name__ == "MaterializeTaskResult"]
    crashed = [r for r in rows if r.outcome == "err"]  # type: ignore[attr-defined]
    assert [r.trial for r in crashed] == ([1] if starts else [0, 1])  # type: ignore[attr-defined]
    assert {r.error_type for r in crashed} == {"sandbox_crash"}  # type: ignore[attr-defined]
    detail = crashed[0].error  # type: ignore[attr-defined]
    assert ("crashed" if starts else "did not start") in detail
    # The task is settled (a pass and an err reduce to a pass under any_pass) ...
    assert sweep.outcomes[3][0] == ("pass" if starts else "err")
    # ... and the sandbox that did start is killed.
    assert sandboxes.killed == (["sbx_task"] if starts else [])
