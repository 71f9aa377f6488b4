"""The Run aggregate: a run's event log and the rules it obeys.

Event class names are the names the outside world sees in the log
(``RunLaunched``, ``PhaseStarted`` ...). The aggregate's version starts at 1;
the log's ``seq`` at 0, so ``seq = version - 1`` and ``RunLaunched`` is seq 0.
"""

import uuid
from collections.abc import Iterable
from typing import Any

from eventsourcing.domain import Aggregate, event

from benchwright_orchestrator.plan import (
    MAX_RESTARTS,
    SNAPSHOT_PHASES,
    is_resumable_halt,
    selected_indices,
)
from benchwright_shared.contracts import TaskOutcome
from benchwright_shared.fingerprint import load_bearing, run_fingerprint
from benchwright_shared.hashing import sha256_hex
from benchwright_shared.outcomes import is_infra_error
from benchwright_shared.scoring import DEFAULT_TRIALS, Settled, aggregate, summarize
from benchwright_shared.visibility import publish_problem

__all__ = [
    "TERMINAL_STATUSES",
    "NoSelectionError",
    "Run",
    "RunAlreadyFinishedError",
    "RunError",
    "summarize",
]

TERMINAL_STATUSES = ("ok", "error")


class RunError(Exception):
    """Base for rule violations on a run."""


class RunAlreadyFinishedError(RunError):
    """A finished run's log takes no more pipeline events."""


class NoSelectionError(RunError):
    """Materialize was reached with no tasks selected."""


class RunNotPublishableError(RunError):
    """Only a finished, successful run of a known benchmark can be public."""


class Run(Aggregate):
    """One execution of the pipeline."""

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
    ) -> None:
        self.run_id = run_id
        self.cache = cache
        # A third-party harness scoring the run (``LaunchRun.harness``): its task and files.
        self.harness = harness
        # (name, sha256) of each log the harness wrote that the run keeps.
        self.harness_logs: list[tuple[str, str]] = []
        self.telemetry = telemetry
        self.trials = trials or dict(DEFAULT_TRIALS)
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
        self.request = request
        self.driver = driver
        self.limits = limits or {}
        self.parent_run_id = parent_run_id
        self.replay = replay
        self.fork = fork
        self.compute = compute
        # Every sandbox of the run lives on this backend (resolved at launch).
        self.backend = backend
        self.plan: list[str] = []
        # Everything later phases (and resumes, replays, forks) rebuild their state from.
        self.scope: dict[str, Any] = {"kind": "all"}
        self.dataset: dict[str, Any] = {}
        self.selection: dict[str, Any] | None = None
        self.analysis: dict[str, Any] | None = None
        self.scorer: dict[str, Any] | None = None  # impl_id, impl_sha256, code
        self.snapshots: dict[str, str] = {}  # phase -> snapshot id
        # What the Driver is told besides the data: the launch's hints, a fork's
        # description, a reviewer's answer (``resume_review``).
        self.guidance: list[str] = [*(hints or []), *([fork["description"]] if fork else [])]
        self.phase_models = dict(phase_models or {})
        self.restarts = 0
        self.started_phases: list[str] = []
        self.deleted = False
        self.model_config_sha256: str | None = None
        self.phase_fingerprints: dict[str, str] = {}
        self.status = "running"
        self.halted = False
        self.halt_reason: str | None = None
        self.current_phase: str | None = None
        self.invocations: dict[str, int] = {}
        self.results_recorded = 0
        # (type, data) of every artifact, in log order: what the fingerprint covers.
        self.artifacts: list[list[Any]] = []
        # What a resumed pipeline needs to know about the work already done.
        self.completed_phases: list[str] = []
        self.selected_tasks: int | None = None
        self.open_sandboxes: dict[str, str] = {}  # sandbox id -> backend
        # index -> trial -> [score, score_meta, duration_ms], for the current sweep
        self.trial_results: dict[str, dict[str, list[Any]]] = {}
        self.aggregated: dict[str, str] = {}  # index -> outcome

    @property
    def on_new_snapshot(self) -> bool:
        """A replay on a newer snapshot of its parent's rolling subset: it fetches and
        sets up the current rows itself and takes only the scorer from its parent."""
        return self.mode == "replay" and bool((self.replay or {}).get("from_subset_id"))

    @property
    def harness_name(self) -> str | None:
        """The third-party harness scoring the run (``inspect``), None for our own."""
        harness: dict[str, Any] | None = getattr(self, "harness", None)
        return str(harness["name"]) if harness else None

        # -- lifecycle ------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.status in TERMINAL_STATUSES:
            raise RunAlreadyFinishedError(self.run_id)

    def start_pipeline(self, phases: list[str]) -> None:
        self._check_open()
        self._pipeline_started(phases=phases)

    @event("PipelineStarted")
    def _pipeline_started(self, phases: list[str]) -> None:
        self.plan = list(phases)

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
        return self.invocations[phase]

    @event("PhaseStarted")
    def _phase_started(self, phase: str) -> None:
        self.current_phase = phase
        self.started_phases.append(phase)
        self.invocations[phase] = self.invocations.get(phase, 0) + 1
        if phase == "materialize":
            self.trial_results = {}
            self.aggregated = {}
            # index -> True: a dict, because snapshots are stored as JSON.
            self._infra_errored: dict[str, bool] = {}
            # index -> [score, group, trial scores] (see ``task_aggregated``).
            self._aggregated_detail: dict[str, list[Any]] = {}

    @event("PhaseCompleted")
    def complete_phase(self, phase: str, duration_ms: int) -> None:
        self.current_phase = None
        self.completed_phases.append(phase)

    def resume(self, reason: str) -> None:
        """Pick up where the log ends, in the phase that was running."""
        self._check_open()
        self._resumed(phase=self.current_phase or "", reason=reason)

    @event("PipelineResumed")
    def _resumed(self, phase: str, reason: str) -> None:
        pass

    @event("PhaseFailed")
    def fail_phase(self, phase: str, error_type: str, detail: str, stack_trace: str | None) -> None:
        self.current_phase = None

    def restart_phase(self, phase: str, reason: str) -> bool:
        """Ask for ``phase`` to run again; False past the restart cap (the caller parks the run)."""
        self._check_open()
        if self.restarts >= MAX_RESTARTS:
            return False
        self._phase_restarted(phase=phase, reason=reason, restarts=self.restarts + 1)
        return True

    @event("PhaseRestarted")
    def _phase_restarted(self, phase: str, reason: str, restarts: int) -> None:
        self.restarts = restarts
        if self.current_phase == phase:
            self.current_phase = None

    # -- the Driver's traffic ------------------------------------------------------
    @event("AgentTextEvent")
    def agent_text(self, phase: str, text: str) -> None:
        pass

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
        self.status = status

    def fingerprint(self) -> str | None:
        """The run fingerprint over the artifacts recorded so far (None before any)."""
        if not self.artifacts:
            return None
        return run_fingerprint((t, d) for t, d in self.artifacts)[0]

    def artifact_events(self) -> list[tuple[str, dict[str, Any]]]:
        """Load-bearing parts of the artifacts on record, in order."""
        return [(str(t), {k: v for k, v in d.items() if k != "type"}) for t, d in self.artifacts]

    def halt(self, halt_reason: str) -> None:
        """Flag the run halted; a flag beside the status, not a status of its own."""
        self._check_open()
        if not self.halted:
            self._halted(halt_reason=halt_reason)

    @event("RunHalted")
    def _halted(self, halt_reason: str) -> None:
        self.halted = True
        self.halt_reason = halt_reason

    @property
    def waiting(self) -> bool:
        """Parked for a person (review, pause, restart cap), not finished."""
        return self.halted and is_resumable_halt(self.halt_reason) and self.status == "running"

    def clear_halt(self, resolution: str | None, cleared_by: str) -> None:
        """Un-park a waiting run; ``resolution`` becomes guidance for the Driver."""
        self._check_open()
        if not self.waiting:
            raise RunError(f"run {self.run_id} is not waiting")
        self._halt_cleared(resolution=resolution, cleared_by=cleared_by, was=self.halt_reason)

    @event("HaltCleared")
    def _halt_cleared(self, resolution: str | None, cleared_by: str, was: str | None) -> None:
        self.halted = False
        self.halt_reason = None
        if resolution:
            self.guidance.append(resolution)
        # A person looked at it: the Driver gets a fresh restart budget.
        self.restarts = 0

    # -- sandboxes ----------------------------------------------------------------
    @event("SandboxCreated")
    def sandbox_created(
        self, sandbox_id: str, backend: str, metadata: dict[str, Any], owner: str | None = None
    ) -> None:
        self.open_sandboxes[sandbox_id] = backend
        if owner:
            self._sandbox_owners = {**self.sandbox_owners, sandbox_id: owner}

    @property
    def sandbox_owners(self) -> dict[str, str]:
        """sandbox id -> the sandbox-manager copy that holds it (recorded since owners were)."""
        found: dict[str, str] = getattr(self, "_sandbox_owners", {})
        return found

    @event("SandboxLost")
    def sandbox_lost(self, sandbox_id: str, reason: str) -> None:
        """The sandbox went with the copy that held it: nothing killed it, nothing bills it here."""
        self.open_sandboxes.pop(sandbox_id, None)

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
        self.open_sandboxes.pop(sandbox_id, None)

    # -- artifacts ----------------------------------------------------------------
    # Each takes ``inherited_from``: a replay or fork copies its parent's artifacts
    # into its own log under the same type, so its fingerprint covers them alike.
    def _artifact(self, event_type: str, data: dict[str, Any]) -> None:
        self.artifacts.append([event_type, load_bearing(event_type, data)])

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
        self.dataset = {
            "source": source,
            "content_sha256": content_sha256,
            "total_tasks": total_tasks,
            "bucket": bucket,
            "object_name": object_name,
        }
        self._artifact("FetchArtifact", {"source": source, "content_sha256": content_sha256})

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
        self.analysis = {
            "kind": kind,
            "schema": schema,
            "fields": fields,
            "candidates": candidates,
            "evidence": evidence,
        }
        self._artifact("AnalyzeArtifact", {"schema_sha256": schema_sha256, "subsets": subsets})

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
        self.selected_tasks = selected_tasks
        self.selection = selection
        self.dataset.setdefault("total_tasks", total_tasks)
        self.dataset.setdefault("content_sha256", content_sha256)
        self.benchmark_id, self.subset_id = benchmark_id, subset_id
        self._artifact(
            "DatasetTasksArtifact",
            {
                "benchmark_id": benchmark_id,
                "subset_id": subset_id,
                "content_sha256": content_sha256,
                "selection": selection,
            },
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
            self.scorer = {"impl_id": impl_id, "impl_sha256": impl_sha256, "code": code}
        self._artifact("SetupArtifact", {"impl_id": impl_id, "impl_sha256": impl_sha256})

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
        self.scorer = {"impl_id": impl_id, "impl_sha256": impl_sha256, "code": code}
        self._artifact("AtomizeArtifact", {"impl_id": impl_id})

    @event("ModelProxyArtifact")
    def model_proxy(
        self,
        model_id: str,
        litellm_config_yaml: str,
        proxy_url: str | None,
        inherited_from: str | None = None,
    ) -> None:
        self._artifact(
            "ModelProxyArtifact", {"model_id": model_id, "litellm_config_yaml": litellm_config_yaml}
        )
        self.model_config_sha256 = sha256_hex(f"{model_id}\x1e{litellm_config_yaml}")

    @event("PhaseFingerprint")
    def phase_fingerprint(
        self, phase: str, fingerprint: str, cache_hit: bool, source_run_id: str | None
    ) -> None:
        """The hash of a phase's inputs; with ``cache_hit`` its work was copied, not done."""
        self.phase_fingerprints[phase] = fingerprint

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
        self.harness_logs.append((name, sha256))

    @event("SnapshotCreated")
    def snapshot_created(
        self,
        phase: str,
        snapshot_id: str,
        sandbox_id: str | None,
        size_bytes: int,
        inherited_from: str | None = None,
    ) -> None:
        self.snapshots[phase] = snapshot_id

    def latest_snapshot(self) -> str | None:
        """The snapshot of the furthest phase on record: what a new work sandbox restores."""
        for phase in reversed(SNAPSHOT_PHASES):
            if phase in self.snapshots:
                return self.snapshots[phase]
        return None

    # -- results ------------------------------------------------------------------
    # The sweep's rules live here, not in the pipeline: which (task, trial) pairs are
    # settled, which are still to send, and when a task's trials add up. A resumed or
    # recovered sweep asks the aggregate, so nothing is held twice.
    @property
    def trials_k(self) -> int:
        return int(self.trials["plan"]["k"])

    def selected(self) -> list[int]:
        """The task indices the run sweeps, in order."""
        if self.selection is None:
            raise NoSelectionError("no tasks were selected for this run")
        total = int(self.dataset.get("total_tasks") or self.selected_tasks or 0)
        return selected_indices(self.selection, total)

    def settled(self, index: int, trial: int) -> bool:
        """Whether this sweep has a result for ``(index, trial)`` (scored, or err)."""
        return str(index) in self.aggregated or str(trial) in self.trial_results.get(str(index), {})

    def unsent(self, indices: Iterable[int]) -> list[tuple[int, int]]:
        """The (index, trial) pairs of ``indices`` without a result in this sweep."""
        return [(i, t) for i in indices for t in range(self.trials_k) if not self.settled(i, t)]

    def record_results(self, results: Iterable[TaskOutcome], invocation: int) -> int:
        """Record each (task, trial) once; aggregate a task once its k trials are in.

        A result of another sweep (an earlier Materialize) or one already on record
        (a redelivered or late batch) is dropped. Returns how many were new.
        """
        if invocation != self.invocations.get("materialize"):
            return 0
        recorded = 0
        for r in results:
            if self.settled(r.index, r.trial) or not 0 <= r.trial < self.trials_k:
                continue
            error_type = r.error_type
            if error_type == "timeout":
                error_type = "limit_exceeded:task.duration"
            self.task_result(
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
                cost_micros=r.cost_micros,
                prompt_tokens=r.prompt_tokens,
                completion_tokens=r.completion_tokens,
                calls=r.calls,
                cached_calls=r.cached_calls,
            )
            recorded += 1
            trials = self.trial_results[str(r.index)]
            if len(trials) < self.trials_k:
                continue
            ordered = [trials[t] for t in sorted(trials, key=int)]
            score, outcome = aggregate(self.trials["aggregator"], [(v[0], v[1]) for v in ordered])
            self.task_aggregated(
                task_id=r.task_id,
                index=r.index,
                invocation=invocation,
                score=score,
                outcome=outcome,
                trial_scores=[v[0] for v in ordered],
                aggregator=self.trials["aggregator"]["name"],
                infra=outcome == "err" and any(is_infra_error(_error_type(v)) for v in ordered),
                group=r.group,
                **_spend(ordered),
            )
        return recorded

    def outcomes(self) -> list[Settled]:
        """Every aggregated task of this sweep, as its summary needs it.

        A task's duration is its slowest trial: the trials ran side by side.
        """
        infra = self.infra_errored
        detail: dict[str, list[Any]] = getattr(self, "_aggregated_detail", {})  # older: none
        settled = []
        for index, outcome in self.aggregated.items():
            score, group, trial_scores = detail.get(index, (None, None, []))
            trials = self.trial_results.get(index, {}).values()
            settled.append(
                Settled(
                    outcome=outcome,
                    duration_ms=max((int(v[2]) for v in trials), default=0),
                    infra=index in infra,
                    score=score,
                    group=group,
                    trial_scores=tuple(trial_scores),
                    task_index=int(index),
                )
            )
        return settled

    def summary(self) -> dict[str, Any]:
        return summarize(self.outcomes())

    @property
    def infra_errored(self) -> set[str]:
        """Indices whose task ended ``err`` because of the platform, not the model or scorer."""
        found: dict[str, bool] = getattr(self, "_infra_errored", {})  # older snapshots: none
        return set(found)

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
        self.results_recorded += 1
        if invocation != self.invocations.get("materialize"):
            return
        trials = self.trial_results.setdefault(str(index), {})
        # The spend only when the proxy metered the trial: most logs have none to keep.
        spend = (
            [] if cost_micros is None else [cost_micros, prompt_tokens, completion_tokens, calls]
        )
        trials[str(trial)] = [score, score_meta, duration_ms, error_type, *spend]

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
        if invocation == self.invocations.get("materialize"):
            self.aggregated[str(index)] = outcome
            # Kept beside ``aggregated`` (whose shape older snapshots fix) for the
            # summary's intervals.
            detail = self.__dict__.setdefault("_aggregated_detail", {})
            detail[str(index)] = [score, group, list(trial_scores)]
            if infra:
                self._infra_errored = {**getattr(self, "_infra_errored", {}), str(index): True}

    @property
    def visibility(self) -> str:
        found: str = getattr(self, "_visibility", "private")  # older runs: private
        return found

    def update(self, visibility: str | None, metadata: dict[str, Any] | None, by: str) -> None:
        """Change who sees the run and/or merge ``metadata`` (a None value removes a key)."""
        if visibility == "public":
            problem = publish_problem(self.status, self.benchmark_id)
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
            self._visibility = visibility
        merged = dict(getattr(self, "metadata", {}))
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

    @event("ReportFile")
    def report_file(self, name: str, media_type: str, content: str, sha256: str) -> None:
        pass


def _error_type(trial: list[Any]) -> str | None:
    """A stored trial's error type (logs written before it was kept have none)."""
    return trial[3] if len(trial) > 3 else None


SPEND_FIELDS = ("cost_micros", "prompt_tokens", "completion_tokens", "calls")


def _spend(trials: list[list[Any]]) -> dict[str, int | None]:
    """A task's model spend: the sum over its trials of what each recorded (a trial
    list holds it from its fifth item on; older ones do not). None when no trial was
    metered."""
    metered = [t[4:8] for t in trials if len(t) >= 8 and t[4] is not None]
    if not metered:
        return dict.fromkeys(SPEND_FIELDS)
    return {name: sum(int(m[i] or 0) for m in metered) for i, name in enumerate(SPEND_FIELDS)}
