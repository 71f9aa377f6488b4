"""RunTasks: the scorer over many tasks in one sandbox, results yielded in batches."""

import asyncio
import contextlib
import json
import math
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace

from benchwright_sandbox_manager.egress import egress_env
from benchwright_sandbox_manager.ports import SandboxBackend, SandboxLimits
from benchwright_shared.contracts import RunTasks, TaskOutcome, TaskSpec

# Results are handed on in batches: by count, or after a short wait.
BATCH_MAX = 200
BATCH_WAIT_S = 0.25
# NATS's default message cap is 1 MB; stay well under it whatever the outputs weigh.
BATCH_MAX_BYTES = 512 * 1024


def runner_argv(command: RunTasks) -> list[str]:
    """The runner of the sweep: our scorer's, or a harness's (``bench_inspect``)."""
    if command.harness == "inspect":
        return [
            "python",
            "-E",
            "-s",
            "bench_inspect.py",
            "run",
            "--task",
            command.harness_task or "",
            "--args",
            json.dumps(command.harness_args),
            "--concurrency",
            str(command.concurrency),
            "--task-timeout",
            str(command.timeout_s),
            "--announce",
        ]
    return [
        "python",
        "-E",
        "-s",
        "bench_runner.py",
        "--impl",
        command.impl_path,
        "--data",
        command.data_path,
        "--concurrency",
        str(command.concurrency),
        "--task-timeout",
        str(command.timeout_s),
        "--announce",
    ]


def _line(task: TaskSpec) -> dict[str, object]:
    """The runner's input line for a task: a rescore's carries the output to score."""
    line: dict[str, object] = {"index": task.index, "trial": task.trial}
    if task.given_output is not None:
        line["given_output"] = task.given_output
    return line


Started = Callable[[int, int], None]
STARTED_PREFIX = '{"started"'


async def sweep(
    backend: SandboxBackend,
    command: RunTasks,
    limits: SandboxLimits,
    on_started: Started | None = None,
) -> AsyncIterator[list[TaskOutcome]]:
    """Run ``bench_runner.py`` over the command's tasks, yielding results in batches.

    The first result comes alone, at once (it is what a watcher waits for); then
    a batch closes at ``BATCH_MAX`` results, ``BATCH_MAX_BYTES``, or
    ``BATCH_WAIT_S`` after its first result. A backend failure propagates after
    the results before it were yielded. The runner also says when each task
    begins; ``on_started(index, trial)`` hears it (nothing is kept of it).
    """
    stdin = [json.dumps(_line(t)) for t in command.tasks]
    waves = -(-len(command.tasks) // max(1, command.concurrency))
    wall = command.timeout_s * max(1, waves) + 60
    # The runner is one long process: its CPU allowance grows with its wall clock.
    limits = replace(limits, cpu_seconds=max(limits.cpu_seconds, math.ceil(wall)))
    egress = await egress_env(backend, command.sandbox_id, command.egress)
    lines = backend.exec_lines(
        command.sandbox_id,
        runner_argv(command),
        stdin_lines=stdin,
        # A model call never outlives its task's ceiling.
        env={**egress, "BW_MODEL_TIMEOUT": str(command.timeout_s), **command.env},
        timeout_s=wall,
        limits=limits,
    )
    # A pump reads the runner's lines so that a batch can close on time, not only
    # when the next line happens to come.
    queue: asyncio.Queue[str | BaseException | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for line in lines:
                queue.put_nowait(line)
            queue.put_nowait(None)
        except BaseException as exc:  # handed to the reader, which re-raises it
            queue.put_nowait(exc)

    pumping = asyncio.create_task(pump())
    batch: list[TaskOutcome] = []
    batch_bytes = 0
    batch_started = 0.0
    first = True
    try:
        while True:
            try:
                if batch:
                    left = max(0.0, batch_started + BATCH_WAIT_S - time.monotonic())
                    item = await asyncio.wait_for(queue.get(), left)
                else:
                    item = await queue.get()
            except TimeoutError:
                yield batch
                batch, batch_bytes = [], 0
                continue
            if item is None:
                break
            if isinstance(item, BaseException):
                if batch:
                    yield batch
                    batch = []
                raise item
            if item.startswith(STARTED_PREFIX):  # a task begins: for live views only
                if on_started is not None:
                    index, trial = json.loads(item)["started"]
                    on_started(int(index), int(trial))
                continue
            if batch and batch_bytes + len(item) > BATCH_MAX_BYTES:
                yield batch
                batch, batch_bytes = [], 0
            if not batch:
                batch_started = time.monotonic()
            batch.append(TaskOutcome.model_validate_json(item))
            batch_bytes += len(item)
            if first or len(batch) >= BATCH_MAX:
                first = False
                yield batch
                batch, batch_bytes = [], 0
        if batch:
            yield batch
    finally:
        pumping.cancel()
        with contextlib.suppress(BaseException):
            await pumping
