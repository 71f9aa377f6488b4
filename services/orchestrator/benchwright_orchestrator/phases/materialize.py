"""Materialize: every selected task, k trials each, through the scorer in a sandbox.

Sequentially, every task runs in the shared work sandbox; in fanout, each task
runs in a task sandbox of its own (``fanout.py`` says which mode a run gets).
Results are read from the run's result feed, in the order the sandbox-manager
published them, and saved a batch at a time; the Run aggregate records each
(task, trial) once and says what is still unsent, so a resumed, recovered or
repeated sweep never sends a settled pair again.

The phase ends only when every selected pair is settled:

* a sandbox lost with its sandbox-manager copy is replaced from the latest
  snapshot, and only the unsettled pairs go to the new one (at most
  ``MAX_SANDBOX_LOSSES`` times; then they end ``infra:sandbox_lost``);
* a sweep that ends without reporting some pairs asks again for those
  (``MAX_RESENDS`` times; then ``infra:results_missing``).

A rescore (decision 0062) sends each pair with the output its parent recorded
(``TaskSpec.given_output``): the runner scores it and never calls ``solve``. A pair
the parent has no output for ends ``err`` (``rescore:no_output``) without being sent,
and the outputs go in sweeps of at most ``GIVEN_BYTES`` each, under the bus's cap.
"""

import asyncio

from benchwright_orchestrator.fanout import explain_materialize_mode
from benchwright_orchestrator.phases.context import PhaseContext
from benchwright_orchestrator.phases.harbor import harbor_materialize
from benchwright_orchestrator.phases.harness import keep_harness_logs
from benchwright_orchestrator.phases.sandbox_life import create_held, kill_held
from benchwright_orchestrator.ports import PhaseError, ResultFeed, SandboxLost, SweepEnded
from benchwright_shared.contracts import ModelAttached, SandboxFile, TaskOutcome, TaskSpec
from benchwright_shared.outcomes import RESULTS_MISSING, SANDBOX_LOST

MAX_SANDBOX_LOSSES = 3
MAX_RESENDS = 2
# A running sweep says it is alive every 5 s (even while no task finishes): this
# long without a word, its sandbox counts as gone though its holder lives.
SWEEP_SILENCE_S = 30.0

Pair = tuple[int, int]
# Given outputs one RunTasks command carries at most (the bus takes 1 MB a message).
GIVEN_BYTES = 512 * 1024
NO_OUTPUT = "rescore:no_output"


async def materialize(ctx: PhaseContext) -> None:
    run = ctx.run
    if run.harness_name == "harbor":
        await harbor_materialize(ctx)  # an agent per task, each in a sandbox of its own
        return
    mode, why = explain_materialize_mode(
        backend=run.backend,
        harness=run.harness_name,
        product_snapshot=False,  # no product-sandbox runs yet
        override=ctx.settings.materialize_mode,
    )
    run.agent_text(phase="materialize", text=f"materialize mode: {mode} ({why})")
    model = await ctx.work.attach()
    indices = run.artifacts.selected()
    invocation = run.progress.invocations["materialize"]

    async def on_results(results: list[TaskOutcome], batch_invocation: int) -> None:
        if run.record_results(results, batch_invocation):
            await ctx.save()

    given: Given | None = None
    if run.mode == "rescore":
        given = await _given_outputs(ctx, indices, invocation)
    async with ctx.work.results(invocation, on_results) as feed:
        if mode == "fanout":
            await _fanout(ctx, feed, model, indices, given)
        else:
            await _sequential(ctx, feed, model, indices, given)
    left = run.sweep.unsent(indices)
    if left:  # every path above settles what it was given; this is a broken promise
        raise PhaseError("results_missing", f"{len(left)} task trials were never settled")
    if run.harness_name == "inspect":
        await keep_harness_logs(ctx)


def _concurrency(ctx: PhaseContext, model: ModelAttached) -> int:
    # A model that serves one call at a time gets one task at a time, so
    # task durations measure the task rather than the queue before it.
    limit = ctx.settings.task_concurrency
    return min(limit, model.max_concurrency or limit)


Given = dict[Pair, str]


async def _given_outputs(ctx: PhaseContext, indices: list[int], invocation: int) -> Given:
    """A rescore's parent's outputs, by pair; the pairs it has none for are settled as
    ``err`` here, naming why, and are never sent."""
    recorded = await ctx.store.recorded_outputs(ctx.run)
    given: Given = {}
    missing: list[TaskOutcome] = []
    parent = ctx.run.parent_run_id
    for pair in ctx.run.sweep.unsent(indices):
        found = recorded.get(pair)
        if found is not None and found.output is not None:
            given[pair] = found.output
            continue
        why = f" (it ended {found.error_type})" if found and found.error_type else ""
        missing.append(
            TaskOutcome(
                index=pair[0],
                trial=pair[1],
                task_id=found.task_id if found else str(pair[0]),
                outcome="err",
                error_type=NO_OUTPUT,
                error=f"run {parent} recorded no output for this task's trial {pair[1]}{why}: "
                "there is nothing to rescore",
            )
        )
    if missing and ctx.run.record_results(missing, invocation):
        await ctx.save()
    ctx.run.agent_text(
        phase="materialize",
        text=f"rescoring {len(given)} recorded outputs of run {parent} with "
        f"{ctx.run.impl_id}; the model is not called"
        + (f"; {len(missing)} task trials have no output" if missing else ""),
    )
    await ctx.save()
    return given


def _parts(pairs: list[Pair], given: Given | None) -> list[list[Pair]]:
    """``pairs`` as the sweeps that carry them: one, or a rescore's under ``GIVEN_BYTES``."""
    if given is None:
        return [pairs]
    parts: list[list[Pair]] = [[]]
    size = 0
    for pair in pairs:
        weight = len(given.get(pair, "").encode())
        if parts[-1] and size + weight > GIVEN_BYTES:
            parts.append([])
            size = 0
        parts[-1].append(pair)
        size += weight
    return parts


async def _sweep(
    ctx: PhaseContext,
    feed: ResultFeed,
    sandbox_id: str,
    pairs: list[Pair],
    model: ModelAttached,
    given: Given | None = None,
) -> SweepEnded:
    """Send ``pairs`` to the sandbox and wait for the sweep's end (results come by the feed)."""
    outputs = given or {}
    command_id = await feed.dispatch(
        sandbox_id,
        [TaskSpec(index=i, trial=t, given_output=outputs.get((i, t))) for i, t in pairs],
        concurrency=_concurrency(ctx, model),
        timeout_s=ctx.task_timeout_s,
        model=model,
    )
    return await feed.ended(command_id, sandbox_id, SWEEP_SILENCE_S)


def _unsettled(ctx: PhaseContext, pairs: list[Pair]) -> list[Pair]:
    return [p for p in pairs if not ctx.run.sweep.settled(*p)]


async def _lost(ctx: PhaseContext, lost: SandboxLost, pairs: list[Pair]) -> None:
    await ctx.work.lose_sandbox(lost.sandbox_id, lost.detail)
    ctx.run.agent_text(
        phase="materialize",
        text=(
            f"sandbox {lost.sandbox_id} lost ({lost.detail}); "
            f"{len(_unsettled(ctx, pairs))} task trials go to a new one"
        ),
    )
    await ctx.save()


async def _settle_as_errors(
    ctx: PhaseContext, pairs: list[Pair], error_type: str, detail: str
) -> None:
    """Give every still unsettled pair an ``err`` row: the phase ends with nothing open."""
    rows = [
        TaskOutcome(
            index=i, trial=t, task_id=str(i), outcome="err", error_type=error_type, error=detail
        )
        for i, t in _unsettled(ctx, pairs)
    ]
    if rows and ctx.run.record_results(rows, ctx.run.progress.invocations["materialize"]):
        await ctx.save()


# -- sequential ---------------------------------------------------------------------------
async def _sequential(
    ctx: PhaseContext,
    feed: ResultFeed,
    model: ModelAttached,
    indices: list[int],
    given: Given | None = None,
) -> None:
    losses = resends = 0
    while pairs := ctx.run.sweep.unsent(indices):
        sandbox_id = await ctx.work.ensure_sandbox()
        try:
            for part in _parts(pairs, given):
                end = await _sweep(ctx, feed, sandbox_id, part, model, given)
                if end.error_type:
                    break
        except SandboxLost as lost:
            await _lost(ctx, lost, pairs)
            losses += 1
            if losses > MAX_SANDBOX_LOSSES:
                detail = f"the work sandbox was lost {losses} times: {lost.detail}"
                await _settle_as_errors(ctx, pairs, SANDBOX_LOST, detail)
            continue
        if end.error_type:
            raise PhaseError(end.error_type, end.detail or "")
        missing = _unsettled(ctx, pairs)
        if missing:
            resends += 1
            ctx.run.agent_text(
                phase="materialize",
                text=f"the sandbox reported {len(pairs) - len(missing)} of {len(pairs)} "
                "task trials; "
                f"asking again for {len(missing)}",
            )
            if resends > MAX_RESENDS:
                detail = f"no result for this trial after {resends} sweeps"
                await _settle_as_errors(ctx, missing, RESULTS_MISSING, detail)


# -- fanout -------------------------------------------------------------------------------
async def _fanout(
    ctx: PhaseContext,
    feed: ResultFeed,
    model: ModelAttached,
    indices: list[int],
    given: Given | None = None,
) -> None:
    """Each unfinished task in its own task sandbox, a bounded number at a time.

    A task whose sandbox fails gets ``err`` rows; one whose sandbox is lost runs
    again in a new one; a halt cancels the workers, whose ``finally`` kills the
    sandboxes they hold.
    """
    code = await ctx.work.scorer_code()
    sandboxes = TaskSandboxes(ctx, [SandboxFile(path="task_impl.py", content=code)] if code else [])
    todo = [i for i in indices if ctx.run.sweep.unsent([i])]
    queue = iter(todo)  # shared by the workers: each task is taken once

    async def worker() -> None:
        for index in queue:
            await _fanout_task(ctx, feed, sandboxes, index, model, given)

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(_concurrency(ctx, model), len(todo))):
                group.create_task(worker())
    except BaseExceptionGroup as failed:
        raise failed.exceptions[0] from None  # not a sandbox's failure: the phase fails


async def _fanout_task(
    ctx: PhaseContext,
    feed: ResultFeed,
    sandboxes: "TaskSandboxes",
    index: int,
    model: ModelAttached,
    given: Given | None = None,
) -> None:
    error_type, detail = "sandbox_crash", "the task sandbox finished without reporting this trial"
    losses = 0
    while pairs := ctx.run.sweep.unsent([index]):
        sandbox_id: str | None = None
        try:
            sandbox_id = await sandboxes.create()
            end = await _sweep(ctx, feed, sandbox_id, pairs, model, given)
            if end.error_type:
                detail = f"the task sandbox crashed: {end.error_type}: {end.detail}"[:2000]
            break
        except SandboxLost as lost:
            sandbox_id = None  # nothing left to kill
            await _lost(ctx, lost, pairs)
            losses += 1
            if losses > MAX_SANDBOX_LOSSES:
                error_type = SANDBOX_LOST
                detail = f"the task sandbox was lost {losses} times: {lost.detail}"
                break
        except PhaseError as exc:
            started = "crashed" if sandbox_id else "did not start"
            detail = f"the task sandbox {started}: {exc.error_type}: {exc.detail}"[:2000]
            break
        finally:
            if sandbox_id is not None:
                await sandboxes.kill(sandbox_id)
    await _settle_as_errors(ctx, ctx.run.sweep.unsent([index]), error_type, detail)


class TaskSandboxes:
    """Creates and kills one run's task sandboxes so that a halt leaves none behind.

    A sandbox starts from the run's latest snapshot with ``files`` laid on top;
    when the snapshot is gone, from the dataset and ``files`` (the workspace knows).
    """

    def __init__(self, ctx: PhaseContext, files: list[SandboxFile]) -> None:
        self.ctx = ctx
        self.files = files

    async def create(self) -> str:
        """A new task sandbox's id; a halt while it starts still kills it once it is up."""
        work = self.ctx.work
        return await create_held(
            work, work.create_task_sandbox(self.files, self.ctx.run.latest_snapshot())
        )

    async def kill(self, sandbox_id: str) -> None:
        """Kill a task sandbox and record it; a halt arriving meanwhile waits for the record."""
        await kill_held(self.ctx.work, sandbox_id)
