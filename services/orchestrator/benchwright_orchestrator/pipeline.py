"""The pipeline that drives one run through its phases.

Pinned mode runs Fetch, Setup, Attach, Materialize and Report. Each phase is
bracketed by ``PhaseStarted`` and ``PhaseCompleted``/``PhaseFailed`` in the
run's log; work that other services own (sandboxes, the model proxy) is asked
for with a command and awaited as the reply event.
"""

import asyncio
import json
import time
import traceback
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from faststream.nats import NatsBroker

from benchwright_orchestrator.application import RunsApplication
from benchwright_orchestrator.domain import Run, summarize
from benchwright_orchestrator.replies import Replies
from benchwright_shared.bus import ask, send_command
from benchwright_shared.contracts import (
    AttachModel,
    Contract,
    CreateSandbox,
    DetachModel,
    GetImpl,
    GetSubsetRows,
    ImplCode,
    KillSandbox,
    ModelAttached,
    RunTasks,
    SandboxCommandFailed,
    SandboxCreated,
    SandboxFile,
    SandboxKilled,
    SandboxTaskResults,
    SandboxTasksFinished,
    SubsetRows,
    SutRef,
    TaskSpec,
)
from benchwright_shared.hashing import canonical_json, sha256_hex
from benchwright_shared.relay import Relay
from benchwright_shared.scoring import aggregate
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore

PINNED_PHASES = ["fetch", "setup", "attach", "materialize", "report"]
COMMAND_TIMEOUT_S = 120.0


class PhaseError(Exception):
    """A phase could not finish; ``error_type`` names why."""

    def __init__(self, error_type: str, detail: str) -> None:
        super().__init__(detail)
        self.error_type = error_type
        self.detail = detail


@dataclass
class PipelineDeps:
    app: RunsApplication
    store: BlockingStore
    relay: Relay
    broker: NatsBroker
    replies: Replies
    settings: Settings


@dataclass
class _State:
    subset_rows: SubsetRows | None = None
    selected: list[int] = field(default_factory=list)
    impl: ImplCode | None = None
    sandbox_id: str | None = None
    model: ModelAttached | None = None
    outcomes: dict[int, tuple[str, int]] = field(default_factory=dict)
    # index -> trial -> (score, score_meta, duration_ms), until all k trials are in
    trials: dict[int, dict[int, tuple[float | None, dict[str, Any], int]]] = field(
        default_factory=dict
    )


class RunPipeline:
    """Drives one run; the only writer of its aggregate while it runs."""

    def __init__(self, deps: PipelineDeps, run: Run) -> None:
        self.deps = deps
        self.run = run
        self.state = _State()
        self.halt_reason: str | None = None
        self._phases: asyncio.Task[None] | None = None

    def request_halt(self, halt_reason: str) -> None:
        """Stop at once: the running phase is interrupted, then the run is torn down."""
        self.halt_reason = halt_reason
        if self._phases is not None:
            self._phases.cancel()

    # -- plumbing -------------------------------------------------------------------
    async def save(self) -> None:
        await self.deps.store.run(self.deps.app.save, self.run)
        self.deps.relay.wake()

    def _command_id(self) -> str:
        return str(uuid.uuid4())

    async def _request(self, command: Contract, timeout: float = COMMAND_TIMEOUT_S) -> Contract:
        command_id: str = command.command_id  # type: ignore[attr-defined]
        queue = self.deps.replies.expect(command_id)
        try:
            await send_command(self.deps.broker, command)
            reply = await asyncio.wait_for(queue.get(), timeout)
        except TimeoutError:
            raise PhaseError("timeout", f"no reply to {type(command).__name__}") from None
        finally:
            self.deps.replies.forget(command_id)
        if isinstance(reply, SandboxCommandFailed):
            raise PhaseError(reply.error_type, reply.detail)
        return reply

    # -- the run --------------------------------------------------------------------
    async def execute(self, *, resume: bool = False) -> None:
        """Drive the run to its end; with ``resume``, carry on where its log stops."""
        started = time.monotonic()
        if resume:
            resumed_phase = self.run.current_phase
            self._restore_results()
            self.run.resume(reason="the orchestrator restarted")
        else:
            resumed_phase = None
            self.run.start_pipeline(PINNED_PHASES)
        await self.save()
        error: PhaseError | None = None
        self._phases = asyncio.create_task(self._run_phases(resumed_phase))
        try:
            await self._phases
        except PhaseError as exc:
            error = exc
        except asyncio.CancelledError:
            if self.halt_reason is None:
                raise  # the process is stopping: the run is closed on restart
            error = PhaseError("halted", self.halt_reason)
            await self._record_halt(self.halt_reason)
        finally:
            await self._teardown()
        summary = summarize(list(self.state.outcomes.values()))
        self.run.finish(
            status="error" if error else "ok",
            duration_ms=int((time.monotonic() - started) * 1000),
            summary=summary,
            error_type=error.error_type if error else None,
            detail=error.detail if error else None,
            fingerprint=self.run.fingerprint(),
        )
        await self.save()

    async def _run_phases(self, resumed_phase: str | None = None) -> None:
        phases = PINNED_PHASES
        if resumed_phase is not None:
            phases = PINNED_PHASES[PINNED_PHASES.index(resumed_phase) :]
            await self._reacquire()
        for phase in phases:
            if self.halt_reason is not None:
                raise asyncio.CancelledError
            await self._phase(
                phase, getattr(self, f"_{phase}"), already_started=phase == resumed_phase
            )

    # -- resuming -------------------------------------------------------------------
    def _restore_results(self) -> None:
        """The sweep's results so far, from the log: they are never asked for again."""
        for index, trials in self.run.trial_results.items():
            self.state.trials[int(index)] = {
                int(t): (v[0], v[1], int(v[2])) for t, v in trials.items()
            }
        for index, outcome in self.run.aggregated.items():
            durations = [int(v[2]) for v in self.run.trial_results.get(index, {}).values()]
            self.state.outcomes[int(index)] = (outcome, max(durations, default=0))

    async def _reacquire(self) -> None:
        """Replace what died with the last process: sandbox and model binding.

        The dataset, scorer and model are the ones already recorded, so no
        artifact is recorded twice and the fingerprint stays what it would have been.
        """
        for sandbox_id in list(self.run.open_sandboxes):
            await self._kill_sandbox(sandbox_id, reason="stale_after_restart")
        await self._fetch(record=False)
        await self._setup(record=False)
        await self._attach(record=False)

    async def _record_halt(self, halt_reason: str) -> None:
        if self.run.current_phase:
            self.run.fail_phase(
                phase=self.run.current_phase,
                error_type="halted",
                detail=halt_reason,
                stack_trace=None,
            )
        self.run.halt(halt_reason)
        await self.save()

    async def _phase(
        self, phase: str, work: Callable[[], Awaitable[None]], *, already_started: bool = False
    ) -> None:
        if not already_started:
            self.run.start_phase(phase)
            await self.save()
        started = time.monotonic()
        try:
            await work()
        except Exception as exc:
            error = exc if isinstance(exc, PhaseError) else PhaseError(type(exc).__name__, str(exc))
            self.run.fail_phase(
                phase=phase,
                error_type=error.error_type,
                detail=error.detail,
                stack_trace="".join(traceback.format_exception(exc))[-8000:],
            )
            await self.save()
            raise error from exc
        self.run.complete_phase(phase=phase, duration_ms=int((time.monotonic() - started) * 1000))
        await self.save()

    # -- phases ---------------------------------------------------------------------
    async def _fetch(self, record: bool = True) -> None:
        rows = await ask(
            self.deps.broker, GetSubsetRows(subset_id=self.run.subset_id, limit=0), SubsetRows
        )
        if rows.problem:
            raise PhaseError("dataset_unavailable", rows.problem.detail or rows.problem.title)
        total = rows.total
        selected = total if self.run.limit is None else min(total, self.run.limit)
        self.state.subset_rows = rows
        self.state.selected = list(range(selected))
        if not record:
            return
        self.run.dataset_tasks(
            benchmark_id=self.run.benchmark_id,
            subset_id=self.run.subset_id,
            total_tasks=total,
            selected_tasks=selected,
            content_sha256=rows.content_sha256 or "",
            selection={"kind": "first_n", "limit": self.run.limit},
        )

    async def _setup(self, record: bool = True) -> None:
        if not self.run.impl_id:
            raise PhaseError("no_impl", "this benchmark has no scorer to run in pinned mode")
        impl = await ask(self.deps.broker, GetImpl(impl_id=self.run.impl_id), ImplCode)
        if impl.problem:
            raise PhaseError("impl_unavailable", impl.problem.detail or impl.problem.title)
        self.state.impl = impl
        rows = self.state.subset_rows
        assert rows is not None
        reply = await self._request(
            CreateSandbox(
                command_id=self._command_id(),
                run_id=self.run.run_id,
                account=self.run.account,
                role="work",
                backend="local",
                files=[
                    SandboxFile(path="task_impl.py", content=impl.code),
                    SandboxFile(
                        path="tasks.jsonl", bucket=rows.bucket, object_name=rows.object_name
                    ),
                ],
            )
        )
        assert isinstance(reply, SandboxCreated)
        self.state.sandbox_id = reply.sandbox_id
        self.run.sandbox_created(
            sandbox_id=reply.sandbox_id, backend=reply.backend, metadata=reply.metadata
        )
        if record:
            self.run.setup_done(impl_id=impl.impl_id, impl_sha256=impl.sha256)

    async def _attach(self, record: bool = True) -> None:
        reply = await self._request(
            AttachModel(
                command_id=self._command_id(),
                run_id=self.run.run_id,
                account=self.run.account,
                sut=SutRef.model_validate(self.run.sut),
            )
        )
        assert isinstance(reply, ModelAttached)
        self.state.model = reply
        if not record:
            return
        self.run.model_proxy(
            model_id=reply.model_id,
            litellm_config_yaml=reply.litellm_config_yaml,
            proxy_url=reply.proxy_url,
        )

    async def _materialize(self) -> None:
        model, sandbox_id = self.state.model, self.state.sandbox_id
        assert model is not None and sandbox_id is not None
        invocation = self.run.invocations["materialize"]
        command = RunTasks(
            command_id=self._command_id(),
            run_id=self.run.run_id,
            sandbox_id=sandbox_id,
            tasks=[
                TaskSpec(index=i, trial=t)
                for i in self.state.selected
                for t in range(self.trials_k)
                if i not in self.state.outcomes and t not in self.state.trials.get(i, {})
            ],
            # A model that serves one call at a time gets one task at a time, so
            # task durations measure the task rather than the queue before it.
            concurrency=min(
                self.deps.settings.task_concurrency,
                model.max_concurrency or self.deps.settings.task_concurrency,
            ),
            timeout_s=self.deps.settings.task_timeout_s,
            env={
                "BW_MODEL_PROXY_URL": model.proxy_url,
                "BW_MODEL_MODEL": model.model_id,
                "BW_MODEL_PROXY_KEY": model.proxy_key,
            },
        )
        queue = self.deps.replies.expect(command.command_id)
        # Silence longer than one task's ceiling means the sandbox is gone.
        idle_timeout = self.deps.settings.task_timeout_s + 60
        try:
            await send_command(self.deps.broker, command)
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
            self.deps.replies.forget(command.command_id)

    @property
    def trials_k(self) -> int:
        return int(self.run.trials["plan"]["k"])

    def _record_results(self, batch: SandboxTaskResults, invocation: int) -> None:
        aggregator = self.run.trials["aggregator"]
        for r in batch.results:
            seen = self.state.trials.setdefault(r.index, {})
            if r.index in self.state.outcomes or r.trial in seen:
                continue  # a repeated batch: each trial is recorded once
            self.run.task_result(
                task_id=r.task_id,
                index=r.index,
                invocation=invocation,
                trial=r.trial,
                score=r.score,
                score_meta=r.score_meta,
                outcome=r.outcome,
                output=r.output,
                error_type=r.error_type,
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
            self.state.outcomes[r.index] = (outcome, max(d for _, _, d in ordered))

    async def _report(self) -> None:
        summary = summarize(list(self.state.outcomes.values()))
        report: dict[str, Any] = {
            "run_id": self.run.run_id,
            "benchmark_id": self.run.benchmark_id,
            "subset_id": self.run.subset_id,
            "impl_id": self.run.impl_id,
            "model": self.run.sut,
            "summary": summary,
        }
        content = json.dumps(report, indent=2, sort_keys=True)
        self.run.report_file(
            name="report.json",
            media_type="application/json",
            content=content,
            sha256=sha256_hex(canonical_json(report)),
        )

    async def _kill_sandbox(self, sandbox_id: str, *, reason: str) -> None:
        try:
            reply = await self._request(
                KillSandbox(
                    command_id=self._command_id(),
                    run_id=self.run.run_id,
                    sandbox_id=sandbox_id,
                    reason=reason,
                ),
                timeout=30,
            )
        except PhaseError:
            return  # the sandbox-manager reaps orphans; the run still finishes
        if isinstance(reply, SandboxKilled):
            self.run.sandbox_killed(
                sandbox_id=reply.sandbox_id,
                backend=reply.backend,
                reason=reply.reason,
                duration_ms=reply.duration_ms,
                cost_micros=reply.cost_micros,
                metadata=reply.metadata,
            )

    async def _teardown(self) -> None:
        """Kill the work sandbox and revoke the run's model key, whatever happened."""
        if self.state.sandbox_id:
            await self._kill_sandbox(self.state.sandbox_id, reason="run_finished")
        if self.state.model:
            await send_command(
                self.deps.broker, DetachModel(command_id=self._command_id(), run_id=self.run.run_id)
            )
