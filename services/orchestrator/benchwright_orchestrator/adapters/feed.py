"""The run's result feed: its sweep subject read in order from the BW_EVENTS stream.

The sandbox-manager publishes a sweep's batches, then its end, on the run's own
subject (``subjects.sweep_subject``), each publish acknowledged before the next.
Reading that one subject from the stream, rather than listening live, gives
three guarantees the pipeline builds on:

* order: a sweep's end is read after every batch it reported;
* history: opening the feed first reads what was published while nobody
  listened (an orchestrator that restarted mid-sweep, say);
* no gaps: a nats-server restart or a reconnect resumes at the next sequence
  (``benchwright_shared.tail``), never at "new messages only".

Repeats (a redelivered or re-sent batch) are harmless: the Run aggregate records
each (task, trial) once.
"""

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from faststream.nats import NatsBroker

from benchwright_orchestrator.domain import Run
from benchwright_orchestrator.ports import OnResults, SandboxLost, SweepEnded
from benchwright_shared import subjects
from benchwright_shared.bus import jetstream, send_command
from benchwright_shared.contracts import (
    ModelAttached,
    RunTasks,
    SandboxSweepProgress,
    SandboxTaskResults,
    SandboxTasksFinished,
    TaskOutcome,
    TaskSpec,
)
from benchwright_shared.ids import new_command_id
from benchwright_shared.tail import StreamTail

log = logging.getLogger(__name__)

LIVENESS_CHECK_S = 1.0


def harness_fields(run: Run) -> dict[str, Any]:
    """What a sweep of a harness run tells its runner: the harness, its task, its args."""
    harness = getattr(run, "harness", None)
    if not harness:
        return {}
    return {
        "harness": harness["name"],
        "harness_task": harness["task"],
        "harness_args": harness.get("args") or {},
    }


def judge_env(model: ModelAttached) -> dict[str, str]:
    """What a scorer's ``judge`` call needs beside the model's variables: the judge key
    and the judges' model ids (the first is the default; a panel names each). Nothing
    when the run has no judge, so a scorer that asks for one fails saying so."""
    if not model.judge_key or not model.judge_models:
        return {}
    return {
        "BW_JUDGE_PROXY_KEY": model.judge_key,
        "BW_JUDGE_MODEL": model.judge_models[0],
        "BW_JUDGE_MODELS": json.dumps(model.judge_models),
    }


class NatsResultFeed:
    """One invocation's sweeps: dispatched through it, their results and ends read back.

    What it needs of the sandboxes' holders comes as callbacks from the workspace that
    opens it (it knows the owners): where a sandbox's commands go, whether its holder
    lives, and which copy that is.
    """

    def __init__(
        self,
        broker: NatsBroker,
        run: Run,
        invocation: int,
        on_results: OnResults,
        *,
        subject_for: Callable[[str, str, str], str],
        holder_alive: Callable[[str], Awaitable[bool]],
        owner: Callable[[str], str | None],
    ) -> None:
        self.broker = broker
        self.run = run
        self.invocation = invocation
        self.on_results = on_results
        self.subject_for = subject_for
        self.holder_alive = holder_alive
        self.owner = owner
        self.tail = StreamTail(
            jetstream(broker), subjects.EVENTS_STREAM, subjects.sweep_filter(run.run_id)
        )
        self._ended: dict[str, SweepEnded] = {}
        self._heard: dict[str, float] = {}  # command id -> when it last said anything
        self._news = asyncio.Condition()
        self._reader: asyncio.Task[None] | None = None

    async def open(self) -> None:
        """Catch up on everything published so far, then keep reading in the background."""
        while True:
            await self._apply(await self.tail.fetch(timeout=0.5))
            if self.tail.caught_up:
                break
        self._reader = asyncio.create_task(self._read(), name=f"results-{self.run.run_id}")

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        await self.tail.close()

    async def _read(self) -> None:
        while True:
            await self._apply(await self.tail.fetch(timeout=1.0))

    async def _apply(self, msgs: list) -> None:  # type: ignore[type-arg]
        """Hand each invocation's results over in one call per fetch, then note the ends."""
        results: dict[int, list[TaskOutcome]] = {}
        ends: list[SweepEnded] = []
        now = time.monotonic()
        for msg in msgs:
            kind = msg.subject.rsplit(".", 1)[-1]
            if kind == "task_results":
                batch = SandboxTaskResults.model_validate_json(msg.data)
                results.setdefault(batch.invocation or self.invocation, []).extend(batch.results)
                self._heard[batch.command_id] = now
            elif kind == "progress":
                self._heard[SandboxSweepProgress.model_validate_json(msg.data).command_id] = now
            elif kind == "tasks_finished":
                finished = SandboxTasksFinished.model_validate_json(msg.data)
                ends.append(
                    SweepEnded(
                        command_id=finished.command_id,
                        completed=finished.completed,
                        error_type=finished.error_type,
                        detail=finished.detail,
                    )
                )
        for invocation, outcomes in results.items():
            await self.on_results(outcomes, invocation)
        for end in ends:
            self._ended[end.command_id] = end
        if msgs:
            async with self._news:
                self._news.notify_all()

    async def dispatch(
        self,
        sandbox_id: str,
        tasks: list[TaskSpec],
        *,
        concurrency: int,
        timeout_s: float,
        model: ModelAttached,
    ) -> str:
        command = RunTasks(
            command_id=new_command_id(),
            run_id=self.run.run_id,
            sandbox_id=sandbox_id,
            tasks=tasks,
            concurrency=concurrency,
            timeout_s=timeout_s,
            env={
                "BW_MODEL_PROXY_URL": model.proxy_url,
                "BW_MODEL_MODEL": model.model_id,
                "BW_MODEL_PROXY_KEY": model.proxy_key,
                **judge_env(model),
            },
            egress=model.egress,
            invocation=self.invocation,
            **harness_fields(self.run),
        )
        self._heard[command.command_id] = time.monotonic()
        await send_command(
            self.broker,
            command,
            subject=self.subject_for(sandbox_id, "run_tasks", subjects.RUN_TASKS),
        )
        return command.command_id

    async def ended(self, command_id: str, sandbox_id: str, idle_timeout_s: float) -> SweepEnded:
        """The sweep's end; ``SandboxLost`` if its holder dies or it says nothing for too long."""
        while command_id not in self._ended:
            if self._reader is not None and self._reader.done():
                self._reader.result()  # a failed save surfaces here
                raise RuntimeError("the result feed stopped")
            async with self._news:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._news.wait(), LIVENESS_CHECK_S)
            if command_id in self._ended:
                break
            if not await self.holder_alive(sandbox_id):
                raise SandboxLost(sandbox_id, f"its sandbox-manager {self.owner(sandbox_id)} died")
            silent = time.monotonic() - self._heard.get(command_id, time.monotonic())
            if silent > idle_timeout_s:
                raise SandboxLost(sandbox_id, f"the sweep said nothing for {silent:.0f}s")
        return self._ended.pop(command_id)
