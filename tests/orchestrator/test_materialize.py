"""Materialize over a fake workspace: each (task, trial) settled once, whatever sandboxes do."""

import asyncio
from typing import Any

import pytest

from benchwright_orchestrator.driver.base import DriverUsage
from benchwright_orchestrator.phases import PhaseContext
from benchwright_orchestrator.phases.materialize import (
    MAX_RESENDS,
    MAX_SANDBOX_LOSSES,
    TaskSandboxes,
    materialize,
)
from benchwright_orchestrator.ports import PhaseError
from benchwright_shared.contracts import TaskSpec
from benchwright_shared.settings import Settings
from tests.orchestrator.fakes import FakeStore, FakeWorkspace, Sweep, new_run, outcome


class NoDriver:
    name = "builtin"
    model = None
    note = None
    phase_models: dict[str, str] = {}

    def usage(self) -> DriverUsage:
        return DriverUsage()

    async def find(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no Driver work in Materialize")

    analyze = atomize = find


def context(work: FakeWorkspace, *, mode: str = "sequential", concurrency: int = 4) -> PhaseContext:
    return PhaseContext(
        run=work.run,
        work=work,
        driver=NoDriver(),
        settings=Settings(materialize_mode=mode, task_concurrency=concurrency),
        store=FakeStore(),
        task_timeout_s=30.0,
    )


def selected(work: FakeWorkspace, tasks: int) -> None:
    run = work.run
    run.fetch_done(
        source="registry:sub_x",
        content_sha256="c" * 64,
        total_tasks=tasks,
        bucket=None,
        object_name=None,
    )
    run.dataset_tasks(
        benchmark_id="bm_x",
        subset_id="sub_x",
        total_tasks=tasks,
        selected_tasks=tasks,
        content_sha256="c" * 64,
        selection={"kind": "all"},
    )
    run.snapshot_created(phase="setup", snapshot_id="snap_setup", sandbox_id=None, size_bytes=1)
    run.start_phase("materialize")


def logged(work: FakeWorkspace, ctx: PhaseContext) -> list[Any]:
    """Every event recorded on the run: those saved, then those not saved yet."""
    store = ctx.store
    assert isinstance(store, FakeStore)
    return [*store.saved, *work.run.collect_events()]


def names(events: list[Any]) -> list[str]:
    return [type(e).__name__ for e in events]


def recorded(work: FakeWorkspace) -> list[tuple[int, int]]:
    pairs = [(int(i), int(t)) for i, trials in work.run.sweep.trial_results.items() for t in trials]
    return sorted(pairs)


async def test_every_pair_is_recorded_once_and_aggregated_once_its_trials_are_in() -> None:
    work = FakeWorkspace(new_run(k=2))
    selected(work, 5)
    ctx = context(work)
    await materialize(ctx)
    assert recorded(work) == [(i, t) for i in range(5) for t in range(2)]
    assert work.run.summary()["passed"] == 5
    events = names(logged(work, ctx))
    assert events.count("MaterializeTaskResult") == 10
    assert events.count("MaterializeTaskAggregated") == 5


async def test_a_lost_sandbox_is_replaced_and_only_the_unsettled_pairs_go_to_the_new_one() -> None:
    def first_dies(sandbox_id: str, tasks: list[TaskSpec], before: int) -> Sweep:
        if before == 0:
            return Sweep([[outcome(t) for t in tasks[:3]]], lost=True)
        return Sweep([[outcome(t) for t in tasks]])

    work = FakeWorkspace(new_run(k=2), sweeper=first_dies)
    selected(work, 5)
    ctx = context(work)
    await materialize(ctx)
    first, second = work.dispatched
    assert len(first[1]) == 10
    # The three settled pairs are never sent again; the rest go to a new sandbox.
    assert [(t.index, t.trial) for t in second[1]] == [(t.index, t.trial) for t in first[1][3:]]
    assert first[0] != second[0] and work.lost == [first[0]]
    assert recorded(work) == [(i, t) for i in range(5) for t in range(2)]
    events = names(logged(work, ctx))
    assert events.count("SandboxLost") == 1 and events.count("MaterializeTaskResult") == 10


async def test_late_and_repeated_batches_are_applied_once() -> None:
    def repeats(sandbox_id: str, tasks: list[TaskSpec], before: int) -> Sweep:
        rows = [outcome(t) for t in tasks]
        return Sweep([rows[:4], rows[2:6], rows, rows[:1]])

    work = FakeWorkspace(new_run(k=1), sweeper=repeats)
    selected(work, 6)
    ctx = context(work)
    await materialize(ctx)
    events = names(logged(work, ctx))
    assert events.count("MaterializeTaskResult") == 6
    assert len(work.dispatched) == 1


async def test_a_sweep_that_ends_short_is_asked_again_for_the_missing_pairs() -> None:
    def drops_two(sandbox_id: str, tasks: list[TaskSpec], before: int) -> Sweep:
        keep = tasks[:-2] if before == 0 else tasks
        return Sweep([[outcome(t) for t in keep]])

    work = FakeWorkspace(new_run(), sweeper=drops_two)
    selected(work, 6)
    await materialize(context(work))
    assert [[t.index for t in tasks] for _, tasks in work.dispatched] == [list(range(6)), [4, 5]]
    assert recorded(work) == [(i, 0) for i in range(6)]


async def test_what_never_reports_ends_as_an_infra_error_and_the_phase_still_ends() -> None:
    def never(sandbox_id: str, tasks: list[TaskSpec], before: int) -> Sweep:
        return Sweep([])

    work = FakeWorkspace(new_run(), sweeper=never)
    selected(work, 2)
    ctx = context(work)
    await materialize(ctx)
    assert len(work.dispatched) == 1 + MAX_RESENDS
    summary = work.run.summary()
    assert summary["errored"] == 2 and summary["infra_errored"] == 2
    rows = [e for e in logged(work, ctx) if type(e).__name__ == "MaterializeTaskResult"]
    assert {r.error_type for r in rows} == {"infra:results_missing"}  # type: ignore[attr-defined]


async def test_a_sandbox_lost_again_and_again_gives_up_with_infra_errors() -> None:
    def always_lost(sandbox_id: str, tasks: list[TaskSpec], before: int) -> Sweep:
        return Sweep([[outcome(tasks[0])]], lost=True)

    work = FakeWorkspace(new_run(), sweeper=always_lost)
    selected(work, 10)
    await materialize(context(work))
    assert len(work.lost) == MAX_SANDBOX_LOSSES + 1
    summary = work.run.summary()
    assert summary["passed"] == MAX_SANDBOX_LOSSES + 1
    assert summary["infra_errored"] == 10 - (MAX_SANDBOX_LOSSES + 1)
    assert work.run.sweep.unsent(range(10)) == []


async def test_a_runner_that_breaks_fails_the_phase() -> None:
    def breaks(sandbox_id: str, tasks: list[TaskSpec], before: int) -> Sweep:
        return Sweep([], error_type="sandbox_exec_failed")

    work = FakeWorkspace(new_run(), sweeper=breaks)
    selected(work, 2)
    with pytest.raises(PhaseError) as failed:
        await materialize(context(work))
    assert failed.value.error_type == "sandbox_exec_failed"


# -- fanout ---------------------------------------------------------------------------------
async def test_fanout_gives_each_task_its_own_sandbox_and_reruns_one_whose_sandbox_was_lost() -> (
    None
):
    def task_two_lost_once(sandbox_id: str, tasks: list[TaskSpec], before: int) -> Sweep:
        if tasks[0].index == 2 and not lost_once:
            lost_once.append(sandbox_id)
            return Sweep([], lost=True)
        return Sweep([[outcome(t) for t in tasks]])

    lost_once: list[str] = []
    work = FakeWorkspace(new_run(k=2), sweeper=task_two_lost_once)
    selected(work, 4)
    await materialize(context(work, mode="fanout", concurrency=2))
    assert recorded(work) == [(i, t) for i in range(4) for t in range(2)]
    assert len(work.created) == 5 and len(work.lost) == 1
    # Every task sandbox that finished is killed; the lost one needs no kill.
    assert sorted(work.killed) == sorted(set(work.created) - set(work.lost))
    assert work.run.open_sandboxes == {}


@pytest.mark.parametrize("starts", [True, False])
async def test_a_failed_task_sandbox_gives_its_unreported_trials_err_rows(starts: bool) -> None:
    def reports_trial_zero_then_dies(sandbox_id: str, tasks: list[TaskSpec], before: int) -> Sweep:
        return Sweep([[outcome(tasks[0])]], error_type="sandbox_exec_failed")

    work = FakeWorkspace(new_run(k=2), sweeper=reports_trial_zero_then_dies)
    work.fail_create = not starts
    selected(work, 1)
    ctx = context(work, mode="fanout")
    await materialize(ctx)
    rows = [e for e in logged(work, ctx) if type(e).__name__ == "MaterializeTaskResult"]
    crashed = [r for r in rows if r.outcome == "err"]  # type: ignore[attr-defined]
    assert [r.trial for r in crashed] == ([1] if starts else [0, 1])  # type: ignore[attr-defined]
    assert {r.error_type for r in crashed} == {"sandbox_crash"}  # type: ignore[attr-defined]
    assert ("crashed" if starts else "did not start") in crashed[0].error  # type: ignore[attr-defined]
    # The task is settled (a pass and an err reduce to a pass under any_pass) ...
    assert work.run.sweep.aggregated["0"] == ("pass" if starts else "err")
    # ... and the sandbox that did start is killed.
    assert work.killed == (["sbx_1"] if starts else [])


async def test_a_task_sandbox_restores_the_latest_snapshot_and_is_recorded_until_killed() -> None:
    work = FakeWorkspace(new_run())
    selected(work, 1)
    sandboxes = TaskSandboxes(context(work), [])
    sandbox_id = await sandboxes.create()
    assert work.run.open_sandboxes == {sandbox_id: "local"}
    await sandboxes.kill(sandbox_id)
    assert work.run.open_sandboxes == {}


async def test_a_halt_while_a_task_sandbox_starts_kills_it_once_it_is_up() -> None:
    work = FakeWorkspace(new_run(), create_delay_s=0.2)
    selected(work, 1)
    starting = asyncio.create_task(TaskSandboxes(context(work), []).create())
    await asyncio.sleep(0.05)
    starting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starting
    assert work.created == ["sbx_1"] and work.run.open_sandboxes == {}


async def test_a_halt_while_a_task_sandbox_is_killed_still_records_the_kill() -> None:
    work = FakeWorkspace(new_run())
    selected(work, 1)
    sandboxes = TaskSandboxes(context(work), [])
    sandbox_id = await sandboxes.create()
    work.kill_delay_s = 0.2
    killing = asyncio.create_task(sandboxes.kill(sandbox_id))
    await asyncio.sleep(0.05)
    killing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await killing
    assert work.run.open_sandboxes == {}
