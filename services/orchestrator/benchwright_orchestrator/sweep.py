"""Materialize: every selected task, k trials each, through the scorer in the sandbox.

Results arrive in batches and are saved in batches (one save per batch, not
per task). A (task, trial) already on record is never sent again, which is
what makes a resumed sweep cheap and a repeated batch harmless.
"""

import asyncio
from typing import TYPE_CHECKING, Any

from benchwright_orchestrator.plan import selected_indices
from benchwright_orchestrator.workspace import PhaseError
from benchwright_shared.bus import send_command
from benchwright_shared.contracts import (
    RunTasks,
    SandboxCommandFailed,
    SandboxTaskResults,
    SandboxTasksFinished,
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
        model = await self.work.attach()
        sandbox_id = await self.work.ensure_sandbox()
        invocation = self.run.invocations["materialize"]
        command = RunTasks(
            command_id=self.work.command_id(),
            run_id=self.run.run_id,
            sandbox_id=sandbox_id,
            tasks=[
                TaskSpec(index=i, trial=t)
                for i in self.selected()
                for t in range(self.trials_k)
                if i not in self.outcomes and t not in self.trials.get(i, {})
            ],
            # A model that serves one call at a time gets one task at a time, so
            # task durations measure the task rather than the queue before it.
            concurrency=min(
                self.settings.task_concurrency,
                model.max_concurrency or self.settings.task_concurrency,
            ),
            timeout_s=self.limits.task_timeout_s(),
            env={
                "BW_MODEL_PROXY_URL": model.proxy_url,
                "BW_MODEL_MODEL": model.model_id,
                "BW_MODEL_PROXY_KEY": model.proxy_key,
            },
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
                    self._record_results(reply, invocation)
                    await self.save()
                elif isinstance(reply, SandboxTasksFinished):
                    if reply.error_type:
                        raise PhaseError(reply.error_type, reply.detail or "")
                    return
                elif isinstance(reply, SandboxCommandFailed):
                    raise PhaseError(reply.error_type, reply.detail)
        finally:
            self.work.replies.forget(command.command_id)

    def _record_results(self, batch: SandboxTaskResults, invocation: int) -> None:
        aggregator = self.run.trials["aggregator"]
        for r in batch.results:
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
