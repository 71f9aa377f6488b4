"""The Run aggregate: a run's event log and the rules it obeys.

Event class names are the names the outside world sees in the log
(``RunLaunched``, ``PhaseStarted`` ...). The aggregate's version starts at 1;
the log's ``seq`` at 0, so ``seq = version - 1`` and ``RunLaunched`` is seq 0.
"""

import uuid
from collections.abc import Iterable
from typing import Any

from eventsourcing.domain import Aggregate, event

from benchwright_orchestrator.domain.agents import MAX_ATTEMPTS, AgentAttemptRefusedError, Agents
from benchwright_orchestrator.domain.artifacts import Artifacts
from benchwright_orchestrator.domain.errors import (
    NoSelectionError,
    RunAlreadyFinishedError,
    RunError,
    RunNotPublishableError,
)
from benchwright_orchestrator.domain.lifecycle import TERMINAL_STATUSES, Lifecycle
from benchwright_orchestrator.domain.progress import PhaseProgress
from benchwright_orchestrator.domain.sandboxes import Sandboxes
from benchwright_orchestrator.domain.sweep import SPEND_FIELDS, TrialSweep, trial_fields
from benchwright_orchestrator.domain.versions import (
    upcast_run_v1_v2,
    upcast_run_v2_v3,
    upcast_run_v3_v4,
)
from benchwright_shared.contracts import TaskOutcome
from benchwright_shared.contracts.agent_events import (
    AgentAttemptEnded,
    AgentAttemptStarted,
    AgentModelTurn,
    AgentToolResult,
    VerifierFinished,
)
from benchwright_shared.scoring import DEFAULT_TRIALS
from benchwright_shared.visibility import publish_problem

__all__ = [
    "MAX_ATTEMPTS",
    "TERMINAL_STATUSES",
    "AgentAttemptRefusedError",
    "AgentRunEvent",
    "Agents",
    "Artifacts",
    "Lifecycle",
    "NoSelectionError",
    "PhaseProgress",
    "Run",
    "RunAlreadyFinishedError",
    "RunError",
    "RunNotPublishableError",
    "Sandboxes",
    "TrialSweep",
]

# One step of an agent's attempt at a task, as the run records it.
AgentRunEvent = (
    AgentAttemptStarted | AgentModelTurn | AgentToolResult | AgentAttemptEnded | VerifierFinished
)


class Run(Aggregate):
    """One execution of the pipeline.

    Where it stands, how far its phases have come, its trials, artifacts and
    sandboxes are parts (``Lifecycle``, ``PhaseProgress``, ``TrialSweep``,
    ``Artifacts``, ``Sandboxes``) that hold their own state and rules; the run
    applies every event, so the log's vocabulary is the run's alone.
    """

    # 2: the parts, and every attribute set at launch. 3: the lifecycle and the phases'
    # progress as parts too. 4: the agents' attempts (``Agents``). An older snapshot is
    # migrated by the upcasters, in turn.
    class_version = 4

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        """Turn a version 1 snapshot's state into version 2's (``versions``)."""
        upcast_run_v1_v2(state)

    @staticmethod
    def upcast_v2_v3(state: dict[str, Any]) -> None:
        """Turn a version 2 snapshot's state into version 3's (``versions``)."""
        upcast_run_v2_v3(state)

    @staticmethod
    def upcast_v3_v4(state: dict[str, Any]) -> None:
        """Turn a version 3 snapshot's state into version 4's (``versions``)."""
        upcast_run_v3_v4(state)

    @staticmethod
    def create_id(run_id: str) -> uuid.UUID:
        return uuid.UUID(run_id)

    @event("RunLaunched")
    def __init__(
        self,
        run_id: str,
        account: str,
        mode: str,
        benchmark_id: str | None,
        benchmark_name: str | None,
        subset_id: str | None,
        subset_slug: str | None,
        impl_id: str | None,
        sut: dict[str, Any] | None,
        limit: int | None,
        metadata: dict[str, Any],
        idempotency_key: str | None,
        trials: dict[str, Any] | None = None,
        request: str | None = None,
        driver: str | None = None,
        limits: dict[str, Any] | None = None,
        parent_run_id: str | None = None,
        replay: dict[str, Any] | None = None,
        fork: dict[str, Any] | None = None,
        compute: str | None = None,
        backend: str = "local",
        hints: list[str] | None = None,
        phase_models: dict[str, str] | None = None,
        cache: dict[str, Any] | None = None,
        harness: dict[str, Any] | None = None,
        telemetry: dict[str, bool] | None = None,
        judges: list[dict[str, Any]] | None = None,
    ) -> None:
        self.run_id = run_id
        # The run's judges (``LaunchRun.judges``), each ``{model, provider, api_base}``.
        self.judges = judges
        self.cache = cache
        # A third-party harness scoring the run (``LaunchRun.harness``): its task and files.
        self.harness = harness
        self.telemetry = telemetry
        self.account = account
        self.mode = mode
        self.benchmark_id = benchmark_id
        self.benchmark_name = benchmark_name
        self.subset_id = subset_id
        self.subset_slug = subset_slug
        self.impl_id = impl_id
        self.sut = sut
        self.limit = limit
        self.metadata = dict(metadata)
        self.visibility = "private"
        self.request = request
        self.driver = driver
        self.limits = limits or {}
        self.parent_run_id = parent_run_id
        self.replay = replay
        self.fork = fork
        self.compute = compute
        # Every sandbox of the run lives on this backend (resolved at launch).
        self.backend = backend
        # What the launch asked to cover; ``BenchmarkResolved`` narrows it.
        self.scope: dict[str, Any] = {"kind": "all"}
        # What the Driver is told besides the data: the launch's hints, a fork's
        # description, a reviewer's answer (``resume_review``).
        self.guidance: list[str] = [*(hints or []), *([fork["description"]] if fork else [])]
        self.phase_models = dict(phase_models or {})
        self.deleted = False
        # The parts: each holds its own state and rules; the events stay the run's.
        self.lifecycle = Lifecycle()
        self.progress = PhaseProgress()
        self.artifacts = Artifacts()
        self.sweep = TrialSweep(trials=trials or dict(DEFAULT_TRIALS))
        self.sandboxes = Sandboxes()
        self.agents = Agents()

    @property
    def on_new_snapshot(self) -> bool:
        """A replay on a newer snapshot of its parent's rolling subset: it fetches and
        sets up the current rows itself and takes only the scorer from its parent."""
        return self.mode == "replay" and bool((self.replay or {}).get("from_subset_id"))

    @property
    def harness_name(self) -> str | None:
        """The third-party harness scoring the run (``inspect``), None for our own."""
        return str(self.harness["name"]) if self.harness else None

    # -- lifecycle ----------------------------------------------------------------

    def _check_open(self) -> None:
        if self.lifecycle.finished:
            raise RunAlreadyFinishedError(self.run_id)

    def start_pipeline(self, phases: list[str]) -> None:
        self._check_open()
        self._pipeline_started(phases=phases)

    @event("PipelineStarted")
    def _pipeline_started(self, phases: list[str]) -> None:
        self.progress.plan = list(phases)

    @event("DriverSelected")
    def driver_selected(
        self,
        driver: str,
        model: str | None,
        note: str | None,
        phase_models: dict[str, str] | None = None,
    ) -> None:
        self.driver = driver

    @event("BenchmarkResolved")
    def benchmark_resolved(
        self,
        benchmark_id: str,
        benchmark_name: str,
        subset_id: str,
        subset_slug: str,
        scope: dict[str, Any],
        sut: dict[str, Any] | None,
        notes: list[str],
        substituted_for: str | None = None,
    ) -> None:
        self.benchmark_id = benchmark_id
        self.benchmark_name = benchmark_name
        self.subset_id = subset_id
        self.subset_slug = subset_slug
        self.scope = scope
        if sut is not None:
            self.sut = sut

    def start_phase(self, phase: str) -> int:
        """Start ``phase``; returns its 1-based invocation number in this run."""
        self._check_open()
        self._phase_started(phase=phase)
        return self.progress.invocations[phase]

    @event("PhaseStarted")
    def _phase_started(self, phase: str) -> None:
        invocation = self.progress.phase_started(phase)
        if phase == "materialize":
            self.sweep.begin(invocation)

    @event("PhaseCompleted")
    def complete_phase(self, phase: str, duration_ms: int) -> None:
        self.progress.phase_completed(phase)

    def resume(self, reason: str) -> None:
        """Pick up where the log ends, in the phase that was running."""
        self._check_open()
        self._resumed(phase=self.progress.current_phase or "", reason=reason)

    @event("PipelineResumed")
    def _resumed(self, phase: str, reason: str) -> None:
        pass

    @event("PhaseFailed")
    def fail_phase(self, phase: str, error_type: str, detail: str, stack_trace: str | None) -> None:
        self.progress.phase_failed()

    def restart_phase(self, phase: str, reason: str) -> bool:
        """Ask for ``phase`` to run again; False past the restart cap (the caller parks the run)."""
        self._check_open()
        if not self.progress.may_restart:
            return False
        self._phase_restarted(phase=phase, reason=reason, restarts=self.progress.restarts + 1)
        return True

    @event("PhaseRestarted")
    def _phase_restarted(self, phase: str, reason: str, restarts: int) -> None:
        self.progress.phase_restarted(phase, restarts)

    # -- the Driver's traffic ------------------------------------------------------
    @event("AgentTextEvent")
    def agent_text(self, phase: str, text: str) -> None:
        pass

    @event("TemplateProbed")
    def template_probed(
        self,
        sandbox_id: str,
        tasks: list[str],
        ok: bool,
        found: dict[str, Any],
        problems: list[str],
        duration_ms: int,
    ) -> None:
        """What a probe sandbox found of a product's needs (the log's record only)."""

    @event("ToolCallEvent")
    def tool_call(self, phase: str, call_id: str, tool: str, arguments: dict[str, Any]) -> None:
        pass

    @event("ToolResultEvent")
    def tool_result(self, phase: str, call_id: str, tool: str, result: str, is_error: bool) -> None:
        pass

    @event("PipelineFinished")
    def finish(
        self,
        status: str,
        duration_ms: int,
        summary: dict[str, Any],
        error_type: str | None = None,
        detail: str | None = None,
        fingerprint: str | None = None,
    ) -> None:
        self.lifecycle.finish(status)

    def fingerprint(self) -> str | None:
        """The run fingerprint over the artifacts recorded so far (None before any)."""
        return self.artifacts.fingerprint()

    def halt(self, halt_reason: str) -> None:
        """Flag the run halted; a flag beside the status, not a status of its own."""
        self._check_open()
        if not self.lifecycle.halted:
            self._halted(halt_reason=halt_reason)

    @event("RunHalted")
    def _halted(self, halt_reason: str) -> None:
        self.lifecycle.halt(halt_reason)

    def clear_halt(self, resolution: str | None, cleared_by: str) -> None:
        """Un-park a waiting run; ``resolution`` becomes guidance for the Driver."""
        self._check_open()
        if not self.lifecycle.waiting:
            raise RunError(f"run {self.run_id} is not waiting")
        was = self.lifecycle.halt_reason
        self._halt_cleared(resolution=resolution, cleared_by=cleared_by, was=was)

    @event("HaltCleared")
    def _halt_cleared(self, resolution: str | None, cleared_by: str, was: str | None) -> None:
        self.lifecycle.clear()
        if resolution:
            self.guidance.append(resolution)
        self.progress.renew_restarts()

    # -- agents' attempts -----------------------------------------------------------
    # The rules are ``Agents``'; the events are ``contracts.agent_events``', field for field.
    def record_agent_event(self, step: AgentRunEvent) -> bool:
        """Record one step of an agent's attempt at a task. False: an older attempt's,
        ignored; ``AgentAttemptRefusedError`` for a step the attempt does not allow."""
        self._check_open()
        agents, index, trial, attempt = self.agents, step.index, step.trial, step.attempt
        fields = step.model_dump()
        if isinstance(step, AgentAttemptStarted):
            taken = agents.check_start(index, trial, attempt)
            if taken:
                self._agent_started(**fields)
        elif isinstance(step, AgentModelTurn | AgentToolResult | AgentAttemptEnded):
            taken = agents.check_turn(index, trial, attempt)
            if taken and isinstance(step, AgentModelTurn):
                self._agent_turn(**fields)
            elif taken and isinstance(step, AgentToolResult):
                self._agent_tool_result(**fields)
            elif taken:
                self._agent_ended(**fields)
        else:
            taken = agents.check_verdict(index, trial, attempt)
            if taken:
                self._verifier_finished(**fields)
        return taken

    @event("AgentAttemptStarted")
    def _agent_started(
        self,
        task_id: str,
        index: int,
        trial: int,
        attempt: int,
        agent: str,
        model: str | None,
        instruction: str,
        instruction_truncated: bool,
        instruction_chars: int,
        system_prompt: str,
        tools: list[str],
    ) -> None:
        self.agents.started(index, trial, attempt)

    @event("AgentModelTurn")
    def _agent_turn(
        self,
        task_id: str,
        index: int,
        trial: int,
        attempt: int,
        turn: int,
        messages_in_count: int,
        text: str | None,
        text_truncated: bool,
        text_chars: int,
        tool_calls: list[dict[str, Any]],
        input_tokens: int,
        output_tokens: int,
        cost_micros: int | None,
        latency_ms: int,
        finish_reason: str | None,
    ) -> None:
        self.agents.turned(index, trial, turn, input_tokens + output_tokens)

    @event("AgentToolResult")
    def _agent_tool_result(
        self,
        task_id: str,
        index: int,
        trial: int,
        attempt: int,
        turn: int,
        call_id: str,
        name: str,
        exit_code: int | None,
        is_error: bool,
        output: str,
        truncated: bool,
        output_chars: int,
        duration_ms: int,
        # Later than the event: a stored result without it kept nothing whole.
        output_object: str | None = None,
    ) -> None:
        pass

    @event("AgentAttemptEnded")
    def _agent_ended(
        self,
        task_id: str,
        index: int,
        trial: int,
        attempt: int,
        reason: str,
        turns: int,
        tokens: int,
        input_tokens: int,
        output_tokens: int,
        cost_micros: int | None,
        duration_ms: int,
        detail: str | None,
    ) -> None:
        self.agents.ended(index, trial, reason)

    @event("VerifierFinished")
    def _verifier_finished(
        self,
        task_id: str,
        index: int,
        trial: int,
        attempt: int,
        reward: float | None,
        metadata: dict[str, Any],
        error_type: str | None,
        detail: str | None,
        duration_ms: int,
    ) -> None:
        self.agents.verified(index, trial, reward, error_type)

    # -- sandboxes ----------------------------------------------------------------
    @event("SandboxCreated")
    def sandbox_created(
        self, sandbox_id: str, backend: str, metadata: dict[str, Any], owner: str | None = None
    ) -> None:
        self.sandboxes.created(sandbox_id, backend, owner)

    @property
    def open_sandboxes(self) -> dict[str, str]:
        """sandbox id -> backend of each sandbox not yet killed or lost."""
        return self.sandboxes.open

    @property
    def sandbox_owners(self) -> dict[str, str]:
        """sandbox id -> the sandbox-manager copy that holds it (recorded since owners were)."""
        return self.sandboxes.owners

    @event("SandboxLost")
    def sandbox_lost(self, sandbox_id: str, reason: str) -> None:
        """The sandbox went with the copy that held it: nothing killed it, nothing bills it here."""
        self.sandboxes.closed(sandbox_id)

    @event("SandboxKilled")
    def sandbox_killed(
        self,
        sandbox_id: str,
        backend: str,
        reason: str,
        duration_ms: int,
        cost_micros: int,
        metadata: dict[str, Any],
    ) -> None:
        self.sandboxes.closed(sandbox_id)

    # -- artifacts ----------------------------------------------------------------
    # Each takes ``inherited_from``: a replay or fork copies its parent's artifacts
    # into its own log under the same type, so its fingerprint covers them alike.
    @property
    def dataset(self) -> dict[str, Any]:
        """The fetched dataset: source, content hash, size, where its rows are kept."""
        return self.artifacts.dataset

    @property
    def scorer(self) -> dict[str, Any] | None:
        """The scorer the run uses: impl_id, impl_sha256, code (None before Setup)."""
        return self.artifacts.scorer

    def latest_snapshot(self) -> str | None:
        """The snapshot of the furthest phase on record: what a new work sandbox restores."""
        return self.artifacts.latest_snapshot()

    @event("FetchArtifact")
    def fetch_done(
        self,
        source: str,
        content_sha256: str,
        total_tasks: int,
        bucket: str | None,
        object_name: str | None,
        inherited_from: str | None = None,
    ) -> None:
        self.artifacts.fetched(source, content_sha256, total_tasks, bucket, object_name)

    @event("AnalyzeArtifact")
    def analyze_done(
        self,
        kind: str,
        schema: dict[str, Any],
        schema_sha256: str,
        subsets: list[str],
        fields: dict[str, Any],
        candidates: list[str],
        evidence: list[str],
        inherited_from: str | None = None,
    ) -> None:
        self.artifacts.analyzed(kind, schema, schema_sha256, subsets, fields, candidates, evidence)

    @event("SyntheticSubsetCreated")
    def synthetic_subset(
        self,
        subset_id: str,
        parent_subset_id: str,
        selection: dict[str, Any],
        task_count: int,
        inherited_from: str | None = None,
    ) -> None:
        pass

    @event("DatasetTasksArtifact")
    def dataset_tasks(
        self,
        benchmark_id: str,
        subset_id: str,
        total_tasks: int,
        selected_tasks: int,
        content_sha256: str,
        selection: dict[str, Any],
        inherited_from: str | None = None,
    ) -> None:
        self.benchmark_id, self.subset_id = benchmark_id, subset_id
        self.artifacts.tasks_selected(
            benchmark_id, subset_id, total_tasks, selected_tasks, content_sha256, selection
        )

    @event("SetupArtifact")
    def setup_done(
        self,
        impl_id: str | None,
        impl_sha256: str | None,
        code: str | None = None,
        inherited_from: str | None = None,
    ) -> None:
        if impl_id is not None:
            self.impl_id = impl_id
            self.artifacts.scorer_chosen(impl_id, impl_sha256, code)
        self.artifacts.add("SetupArtifact", {"impl_id": impl_id, "impl_sha256": impl_sha256})

    @event("AtomizeArtifact")
    def atomize_done(
        self,
        impl_id: str,
        impl_sha256: str,
        invocation: int,
        kind: str,
        code: str,
        check: dict[str, Any],
        guidance: list[str],
        inherited_from: str | None = None,
    ) -> None:
        self.impl_id = impl_id
        self.artifacts.scorer_chosen(impl_id, impl_sha256, code)
        self.artifacts.add("AtomizeArtifact", {"impl_id": impl_id})

    @event("ModelProxyArtifact")
    def model_proxy(
        self,
        model_id: str,
        litellm_config_yaml: str,
        proxy_url: str | None,
        inherited_from: str | None = None,
    ) -> None:
        self.artifacts.model_configured(model_id, litellm_config_yaml)

    @event("PhaseFingerprint")
    def phase_fingerprint(
        self, phase: str, fingerprint: str, cache_hit: bool, source_run_id: str | None
    ) -> None:
        """The hash of a phase's inputs; with ``cache_hit`` its work was copied, not done."""
        self.artifacts.phase_fingerprints[phase] = fingerprint

    @event("HarnessLogArtifact")
    def harness_log(
        self,
        name: str,
        media_type: str,
        bucket: str,
        object_name: str,
        sha256: str,
        size_bytes: int,
    ) -> None:
        """A log the harness wrote: kept, downloadable, outside the fingerprint (it
        holds timestamps; the task results it reports are what the run is)."""
        self.artifacts.harness_logs.append([name, sha256])

    @event("SnapshotCreated")
    def snapshot_created(
        self,
        phase: str,
        snapshot_id: str,
        sandbox_id: str | None,
        size_bytes: int,
        inherited_from: str | None = None,
    ) -> None:
        self.artifacts.snapshots[phase] = snapshot_id

    # -- results ------------------------------------------------------------------
    # The sweep's rules are ``TrialSweep``'s; the run records what it decides.
    @property
    def trials_k(self) -> int:
        """Trials per task."""
        return self.sweep.k

    def record_results(self, results: Iterable[TaskOutcome], invocation: int) -> int:
        """Record each (task, trial) once; aggregate a task once its k trials are in.

        A result of another sweep (an earlier Materialize) or one already on record
        (a redelivered or late batch) is dropped. Returns how many were new.
        """
        recorded = 0
        for r in results:
            if not self.sweep.takes(r.index, r.trial, invocation):
                continue
            self.task_result(invocation=invocation, **trial_fields(r))
            recorded += 1
            verdict = self.sweep.verdict(r.index)
            if verdict is not None:
                self.task_aggregated(
                    task_id=r.task_id,
                    index=r.index,
                    invocation=invocation,
                    group=r.group,
                    **verdict,
                )
        return recorded

    def summary(self) -> dict[str, Any]:
        """The current sweep's summary."""
        return self.sweep.summary()

    @event("MaterializeTaskResult")
    def task_result(
        self,
        task_id: str,
        index: int,
        invocation: int,
        trial: int,
        score: float | None,
        score_meta: dict[str, Any],
        outcome: str,
        output: str | None,
        error_type: str | None,
        error: str | None,
        duration_ms: int,
        cost_micros: int | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        calls: int | None = None,
        cached_calls: int | None = None,
    ) -> None:
        metered = (cost_micros, prompt_tokens, completion_tokens, calls)
        spend = dict(zip(SPEND_FIELDS, metered, strict=True))
        self.sweep.record_trial(
            index, invocation, trial, score, score_meta, duration_ms, error_type, spend
        )

    @event("MaterializeTaskAggregated")
    def task_aggregated(
        self,
        task_id: str,
        index: int,
        invocation: int,
        score: float | None,
        outcome: str,
        trial_scores: list[float | None],
        aggregator: str,
        infra: bool = False,
        group: str | None = None,
        cost_micros: int | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        calls: int | None = None,
    ) -> None:
        self.sweep.record_aggregate(
            index, invocation, score, outcome, list(trial_scores), group, infra
        )

    def update(self, visibility: str | None, metadata: dict[str, Any] | None, by: str) -> None:
        """Change who sees the run and/or merge ``metadata`` (a None value removes a key)."""
        if visibility == "public":
            problem = publish_problem(self.lifecycle.status, self.benchmark_id)
            if problem:
                raise RunNotPublishableError(problem)
        if visibility == self.visibility:
            visibility = None
        if visibility is None and not metadata:
            return
        self._updated(visibility=visibility, metadata=metadata, updated_by=by)

    @event("RunUpdated")
    def _updated(
        self, visibility: str | None, metadata: dict[str, Any] | None, updated_by: str
    ) -> None:
        if visibility is not None:
            self.visibility = visibility
        merged = dict(self.metadata)
        for key, value in (metadata or {}).items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        self.metadata = merged

    def delete(self, deleted_by: str) -> None:
        if not self.deleted:
            self._deleted(deleted_by=deleted_by)

    @event("RunDeleted")
    def _deleted(self, deleted_by: str) -> None:
        self.deleted = True

    def label(
        self,
        *,
        label_id: str,
        task_id: str,
        index: int,
        invocation: int,
        trial: int,
        scale: str,
        grade: str,
        note: str | None,
        by: str,
    ) -> None:
        """Record a person's grade of one task. The log keeps every label; readers take
        each person's latest for a task (the gateway's ``labels`` view), so a command
        redelivered after it was saved records the same label again, harmlessly, and
        the run keeps no state for them. Refused on a deleted run or for a trial the
        run does not have."""
        if self.deleted:
            raise RunError(f"run {self.run_id} was deleted")
        if not 0 <= trial < self.sweep.k:
            raise RunError(f"run {self.run_id} has no trial {trial}")
        self._labelled(
            label_id=label_id,
            task_id=task_id,
            index=index,
            invocation=invocation,
            trial=trial,
            scale=scale,
            grade=grade,
            note=note,
            labelled_by=by,
        )

    @event("TaskLabelled")
    def _labelled(
        self,
        label_id: str,
        task_id: str,
        index: int,
        invocation: int,
        trial: int,
        scale: str,
        grade: str,
        note: str | None,
        labelled_by: str,
    ) -> None:
        pass

    @event("ReportFile")
    def report_file(self, name: str, media_type: str, content: str, sha256: str) -> None:
        pass
