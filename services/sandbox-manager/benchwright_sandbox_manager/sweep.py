"""RunTasks: the scorer over many tasks in one sandbox, results streamed back in batches."""

import json
import logging
import math
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from benchwright_sandbox_manager.egress import egress_env
from benchwright_sandbox_manager.ports import BackendError
from benchwright_shared.bus import publish_event
from benchwright_shared.contracts import (
    RunTasks,
    SandboxTaskResults,
    SandboxTasksFinished,
    TaskOutcome,
)

if TYPE_CHECKING:
    from benchwright_sandbox_manager.manager import SandboxManager

log = logging.getLogger(__name__)

# Results are published in batches: by count, or after a short wait.
BATCH_MAX = 200
BATCH_WAIT_S = 0.25
# NATS's default message cap is 1 MB; stay well under it whatever the outputs weigh.
BATCH_MAX_BYTES = 512 * 1024


async def sweep(manager: "SandboxManager", command: RunTasks) -> None:
    """Run ``bench_runner.py`` over the command's tasks and publish what comes out."""
    broker = manager.bus()
    sandbox = await manager.live_sandbox(command.command_id, command.run_id, command.sandbox_id)
    if sandbox is None:
        return
    backend = manager.backend(sandbox.backend)
    argv = [
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
    ]
    stdin = [json.dumps({"index": t.index, "trial": t.trial}) for t in command.tasks]
    waves = -(-len(command.tasks) // max(1, command.concurrency))
    wall = command.timeout_s * max(1, waves) + 60
    # The runner is one long process: its CPU allowance grows with its wall clock.
    limits = replace(manager.limits, cpu_seconds=max(manager.limits.cpu_seconds, math.ceil(wall)))
    batch: list[TaskOutcome] = []
    batches = completed = batch_bytes = 0
    last_flush = time.monotonic()

    async def flush() -> None:
        nonlocal batch, batches, last_flush, batch_bytes
        if not batch:
            return
        batches += 1
        event = SandboxTaskResults(
            command_id=command.command_id,
            run_id=command.run_id,
            sandbox_id=command.sandbox_id,
            batch=batches,
            results=batch,
        )
        batch = []
        batch_bytes = 0
        last_flush = time.monotonic()
        await publish_event(broker, event, msg_id=f"{command.command_id}:{batches}")

    error_type = detail = None
    try:
        egress = await egress_env(backend, command.sandbox_id, command.egress)
        lines = backend.exec_lines(
            command.sandbox_id,
            argv,
            stdin_lines=stdin,
            # A model call never outlives its task's ceiling.
            env={**egress, "BW_MODEL_TIMEOUT": str(command.timeout_s), **command.env},
            timeout_s=wall,
            limits=limits,
        )
        async for line in lines:
            if batch_bytes + len(line) > BATCH_MAX_BYTES:
                await flush()
            batch.append(TaskOutcome.model_validate_json(line))
            batch_bytes += len(line)
            completed += 1
            # The first result goes out at once: it is what a watcher waits for.
            if (
                batches == 0
                or len(batch) >= BATCH_MAX
                or time.monotonic() - last_flush > BATCH_WAIT_S
            ):
                await flush()
    except BackendError as exc:
        error_type, detail = "sandbox_exec_failed", str(exc)
    except Exception as exc:
        log.exception("sweep %s failed", command.command_id)
        error_type, detail = type(exc).__name__, str(exc)
    await flush()
    finished = SandboxTasksFinished(
        command_id=command.command_id,
        run_id=command.run_id,
        sandbox_id=command.sandbox_id,
        batches=batches,
        completed=completed,
        error_type=error_type,
        detail=detail,
    )
    await publish_event(broker, finished, msg_id=f"{command.command_id}:finished")
