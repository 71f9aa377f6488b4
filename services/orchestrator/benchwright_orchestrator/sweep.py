"""Materialize: every selected task, k trials each, through the scorer in a sandbox.

Sequentially, every task runs in the shared work sandbox; in fanout, each task
runs in a task sandbox of its own (``fanout.py`` says which mode a run gets).
Results arrive in batches and are saved in batches (one save per batch, not
per task). A (task, trial) already on record is never sent again, which is
what makes a resumed sweep cheap and a repeated batch harmless.
"""

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from benchwright_orchestrator.fanout import TaskSandboxes, explain_materialize_mode
from benchwright_orchestrator.plan import selected_indices
from benchwright_orchestrator.workspace import PhaseError
from benchwright_shared.bus import send_command
from benchwright_shared.contracts import (
    ModelAttached,
    RunTasks,
    SandboxCommandFailed,
    SandboxFile,
    SandboxTaskResults,
    SandboxTasksFinished,
    TaskOutcome,
    TaskSpec,
)
from benchwright_shared.scoring import aggregate

if TYPE_CHECKING:
    from benchwright_orchestrator.domain import Run
    from benchwright_orchestrator.limits import LimitWatch
    from benchwright_orchestrator.workspace import Workspace
    from benchwright_shared.settings import Settings


class Sweep:
    run: "Run"
    work: "Workspace"
    settings: "Settings"
    limits: "LimitWatch"
    outcomes: dict[int, tuple[str, int]]
    # index -> trial -> (score, score_meta, duration_ms), until all k trials are in
    trials: dict[int, dict[int, tuple[float | None, dict[str, Any], int]]]

    async def save(self) -> None: ...

    @property
    def trials_k(self) -> int:
        return int(self.run.trials["plan"]["k"])

    def selected(self) -> list[int]:
        if self.run.selection is None:
            raise PhaseError("no_selection", "no tasks were selected for this run")
        total = int(self.run.dataset.get("total_tasks") or self.run.selected_tasks or 0)
        return selected_indices(self.run.selection, total)

    async def _materialize(self) -> None:
        mode, why = explain_materialize_mode(
            backend=self._sandbox_backend(),
            harness=None,  # no harness bridges yet: every run uses our own
            product_snapshot=False,  # no product-sandbox runs yet
            override=self.settings.materialize_mode,
        )
        self.run.agent_text(phase="materialize", text=f"materialize mode: {mode} ({why})")
        model = await self.work.attach()
        if mode == "fanout":
            await self._fanout(model)
        else:
            sandbox_id = await self.work.ensure_sandbox()
            await self._sweep(sandbox_id, self._unsent(self.selected()), model)

    def _sandbox_backend(self) -> str:
        """The backend the run's sandboxes live on (resolved from ``compute`` at launch)."""
        return self.run.backend

    def _unsent(self, indices: list[int]) -> list[TaskSpec]:
        """The (task, trial) pairs without a result: nothing on record is sent again."""
        return [
            TaskSpec(index=i, trial=t)
            for i in indices
            for t in range(self.trials_k)
            if i not in self.outcomes and t not in self.trials.get(i, {})
        ]

    def _concurrency(self, model: ModelAttached) -> int:
        # A model that serves one call at a time gets one task at a time, so
        # task durations measure the task rather than the queue before it.
        return min(
            self.settings.task_concurrency,
            model.max_concurrency or self.settings.task_concurrency,
        )

    async def _sweep(self, sandbox_id: str, tasks: list[TaskSpec], model: ModelAttached) -> None:
        """Run ``tasks`` in a sandbox, saving each batch of results as it arrives.

        Raises ``PhaseError`` when the sandbox fails or goes silent.
        """
        invocation = self.run.invocations["materialize"]
        command = RunTasks(
            command_id=self.work.command_id(),
            run_id=self.run.run_id,
            sandbox_id=sandbox_id,
            tasks=tasks,
            concurrency=self._concurrency(model),
            timeout_s=self.limits.task_timeout_s(),
            env={
                "BW_MODEL_PROXY_URL": model.proxy_url,
                "BW_MODEL_MODEL": model.model_id,
                "BW_MODEL_PROXY_KEY": model.proxy_key,
            },
            egress=model.egress,
        )
        queue = self.work.replies.expect(command.command_id)
        # Silence longer than one task's ceiling means the sandbox is gone.
        idle_timeout = command.timeout_s + 60
        try:
            await send_command(self.work.broker, command)
            while True:
                try:
                    reply = await asyncio.wait_for(queue.get(), idle_timeout)
                except TimeoutError:
                    raise PhaseError("timeout", "the sandbox stopped reporting results") from None
                if isinstance(reply, SandboxTaskResults):
                    self._record_results(reply.results, invocation)
                    await self.save()
                elif isinstance(reply, SandboxTasksFinished):
                    if reply.error_type:
                        raise PhaseError(reply.error_type, reply.detail or "")
                    return
                elif isinstance(reply, SandboxCommandFailed):
                    raise PhaseError(reply.error_type, reply.detail)
        finally:
            self.work.replies.forget(command.command_id)

    # -- fanout ---------------------------------------------------------------------
    async def _fanout(self, model: ModelAttached) -> None:
        """Each unfinished task in its own task sandbox, a bounded number at a time.

        A task whose sandbox fails gets ``err`` rows; a halt cancels the workers,
        whose ``finally`` kills the sandboxes they hold.
        """
        code = await self.work.scorer_code()
        sandboxes = TaskSandboxes(
            work=self.work,
            backend=self._sandbox_backend(),
            snapshot=self.run.latest_snapshot(),
            files=[SandboxFile(path="task_impl.py", content=code)] if code else [],
        )
        todo = [(i, unsent) for i in self.selected() if (unsent := self._unsent([i]))]
        queue = iter(todo)  # shared by the workers: each task is taken once

        async def worker() -> None:
            for index, unsent in queue:
                await self._fanout_task(sandboxes, index, unsent, model)

        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(min(self._concurrency(model), len(todo))):
                    group.create_task(worker())
        except BaseExceptionGroup as failed:
            raise failed.exceptions[0] from None  # not a sandbox's failure: the phase fails

    async def _fanout_task(
        self, sandboxes: TaskSandboxes, index: int, unsent: list[TaskSpec], model: ModelAttached
    ) -> None:
        sandbox_id: str | None = None
        detail = "the task sandbox finished without reporting this trial"
        try:
            sandbox_id = await sandboxes.create()
            await self._sweep(sandbox_id, unsent, model)
        except PhaseError as exc:
            started = "crashed" if sandbox_id else "did not start"
            detail = f"the task sandbox {started}: {exc.error_type}: {exc.detail}"[:2000]
        finally:
            if sandbox_id is not None:
                await sandboxes.kill(sandbox_id)
        missing = [s for s in self._unsent([index]) if s in unsent]
        if missing:
            crashed = [
                TaskOutcome(
                    index=s.index,
                    trial=s.trial,
                    task_id=str(s.index),
                    outcome="err",
                    error_type="sandbox_crash",
                    error=detail,
                )
                for s in missing
            ]
            self._record_results(crashed, self.run.invocations["materialize"])
            await self.save()

    def _record_results(self, results: Iterable[TaskOutcome], invocation: int) -> None:
        aggregator = self.run.trials["aggregator"]
        for r in results:
            seen = self.trials.setdefault(r.index, {})
            if r.index in self.outcomes or r.trial in seen:
                continue  # a repeated batch: each trial is recorded once
            error_type = r.error_type
            if error_type == "timeout":
                error_type = "limit_exceeded:task.duration"
            self.run.task_result(
                task_id=r.task_id,
                index=r.index,
                invocation=invocation,
                trial=r.trial,
                score=r.score,
                score_meta=r.score_meta,
                outcome=r.outcome,
                output=r.output,
                error_type=error_type,
                error=r.error,
                duration_ms=r.duration_ms,
            )
            seen[r.trial] = (r.score, r.score_meta, r.duration_ms)
            if len(seen) < self.trials_k:
                continue
            ordered = [seen[t] for t in sorted(seen)]
            score, outcome = aggregate(aggregator, [(s, m) for s, m, _ in ordered])
            self.run.task_aggregated(
                task_id=r.task_id,
                index=r.index,
                invocation=invocation,
                score=score,
                outcome=outcome,
                trial_scores=[s for s, _, _ in ordered],
                aggregator=aggregator["name"],
            )
            # A task's duration is its slowest trial: the trials ran side by side.
            self.outcomes[r.index] = (outcome, max(d for _, _, d in ordered))
