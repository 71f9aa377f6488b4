"""The pipeline over fake ports: phases in order, bracketed, halted, retried when the
platform failed them."""

import asyncio

from benchwright_orchestrator.driver.base import DriverUsage
from benchwright_orchestrator.limits import LimitWatch, task_timeout_s
from benchwright_orchestrator.phases import PHASES
from benchwright_orchestrator.pipeline import PipelineDeps, RunPipeline
from benchwright_orchestrator.ports import SandboxLost
from benchwright_shared.contracts import TaskSpec
from benchwright_shared.settings import Settings
from tests.orchestrator.fakes import (
    FakePlatform,
    FakeStore,
    FakeWorkspace,
    Sweep,
    new_run,
    outcome,
)


class NoDriver:
    name = "builtin"
    model = None
    note = None
    phase_models: dict[str, str] = {}

    def usage(self) -> DriverUsage:
        return DriverUsage()


def pipeline(work: FakeWorkspace, **settings: object) -> tuple[RunPipeline, FakeStore]:
    store = FakeStore()
    deps = PipelineDeps(
        store=store,
        platform=FakePlatform(),
        settings=Settings(limit_check_interval_s=0.05, **settings),  # type: ignore[arg-type]
    )
    return RunPipeline(deps, work.run, NoDriver(), work), store  # type: ignore[arg-type]


async def test_a_pinned_run_goes_through_its_phases_and_finishes_ok() -> None:
    work = FakeWorkspace(new_run(limit=3), total_tasks=5)
    run_pipeline, store = pipeline(work)
    await run_pipeline.execute()
    run = work.run
    assert run.lifecycle.status == "ok"
    assert run.progress.completed_phases == ["fetch", "setup", "attach", "materialize", "report"]
    assert run.summary()["passed"] == 3
    # Bracketed and saved as it went; every sandbox released at the end.
    assert store.events[:3] == ["RunLaunched", "PipelineStarted", "DriverSelected"]
    assert store.events.count("PhaseStarted") == store.events.count("PhaseCompleted") == 5
    assert store.events[-1] == "PipelineFinished"
    assert run.open_sandboxes == {} and work.model is None


async def test_a_phase_the_platform_failed_runs_again() -> None:
    work = FakeWorkspace(new_run(limit=2))
    real_setup = PHASES["setup"]
    failures = []

    async def setup_once_lost(ctx):  # type: ignore[no-untyped-def]
        if not failures:
            sandbox_id = await ctx.work.ensure_sandbox()
            failures.append(sandbox_id)
            raise SandboxLost(sandbox_id, "its sandbox-manager sm-1 died")
        await real_setup(ctx)

    PHASES["setup"] = setup_once_lost
    try:
        run_pipeline, store = pipeline(work)
        await run_pipeline.execute()
    finally:
        PHASES["setup"] = real_setup
    assert work.run.lifecycle.status == "ok"
    assert work.lost == failures and store.events.count("SandboxLost") == 1
    assert store.events.count("PhaseFailed") == 0


async def test_a_halt_interrupts_the_running_phase_and_finishes_with_partial_results() -> None:
    def slow(sandbox_id: str, tasks: list[TaskSpec], before: int) -> Sweep:
        return Sweep([[outcome(t)] for t in tasks])

    work = FakeWorkspace(new_run(), sweeper=slow, total_tasks=50, delay_s=0.02)
    run_pipeline, store = pipeline(work)
    running = asyncio.create_task(run_pipeline.execute())
    for _ in range(500):
        if work.run.summary()["total"] >= 3:
            break
        await asyncio.sleep(0.01)
    run_pipeline.request_halt("operator_kill: enough")
    await running
    run = work.run
    assert run.lifecycle.status == "error" and run.lifecycle.halted
    assert 3 <= run.summary()["total"] < 50
    assert "RunHalted" in store.events and run.open_sandboxes == {}


async def test_a_run_ceiling_halts_the_run_through_the_watchs_callback() -> None:
    def slow(sandbox_id: str, tasks: list[TaskSpec], before: int) -> Sweep:
        return Sweep([[outcome(t)] for t in tasks])

    run = new_run()
    run.limits = {"run": {"duration": 0.2}}
    work = FakeWorkspace(run, sweeper=slow, total_tasks=200, delay_s=0.02)
    run_pipeline, _ = pipeline(work)
    await run_pipeline.execute()
    assert run.lifecycle.halt_reason == "limit_exceeded:run.duration"


async def test_the_limit_watch_calls_back_once_and_never_holds_the_pipeline() -> None:
    breaches: list[str] = []

    async def spent() -> float:
        return 2.5

    watch = LimitWatch(
        {"run": {"cost": 2.0}}, interval_s=0.01, spent=spent, on_breach=breaches.append
    )
    watch.start()
    await asyncio.sleep(0.1)
    watch.stop()
    assert breaches == ["limit_exceeded:run.cost"]
    assert task_timeout_s({"task": {"duration": 5}, "attempt": {"duration": 9}}, 300) == 5
    assert task_timeout_s({}, 300) == 300
