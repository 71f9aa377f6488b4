"""The Run aggregate: a run's event log and the rules it obeys.

Event class names are the names the outside world sees in the log
(``RunLaunched``, ``PhaseStarted`` ...). The aggregate's version starts at 1;
the log's ``seq`` at 0, so ``seq = version - 1`` and ``RunLaunched`` is seq 0.
"""

import uuid
from typing import Any

from eventsourcing.domain import Aggregate, event

from benchwright_shared.fingerprint import run_fingerprint
from benchwright_shared.scoring import DEFAULT_TRIALS, summarize

__all__ = [
    "TERMINAL_STATUSES",
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
        benchmark_id: str,
        benchmark_name: str,
        subset_id: str,
        subset_slug: str,
        impl_id: str | None,
        sut: dict[str, Any],
        limit: int | None,
        metadata: dict[str, Any],
        idempotency_key: str | None,
        trials: dict[str, Any] | None = None,
    ) -> None:
        self.run_id = run_id
        self.trials = trials or dict(DEFAULT_TRIALS)
        self.account = account
        self.mode = mode
        self.benchmark_id = benchmark_id
        self.subset_id = subset_id
        self.impl_id = impl_id
        self.sut = sut
        self.limit = limit
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

    # -- lifecycle ------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.status in TERMINAL_STATUSES:
            raise RunAlreadyFinishedError(self.run_id)

    def start_pipeline(self, phases: list[str]) -> None:
        self._check_open()
        self._pipeline_started(phases=phases)

    @event("PipelineStarted")
    def _pipeline_started(self, phases: list[str]) -> None:
        pass

    def start_phase(self, phase: str) -> int:
        """Start ``phase``; returns its 1-based invocation number in this run."""
        self._check_open()
        self._phase_started(phase=phase)
        return self.invocations[phase]

    @event("PhaseStarted")
    def _phase_started(self, phase: str) -> None:
        self.current_phase = phase
        self.invocations[phase] = self.invocations.get(phase, 0) + 1
        if phase == "materialize":
            self.trial_results = {}
            self.aggregated = {}

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

    def halt(self, halt_reason: str) -> None:
        """Flag the run halted; a flag beside the status, not a status of its own."""
        self._check_open()
        if not self.halted:
            self._halted(halt_reason=halt_reason)

    @event("RunHalted")
    def _halted(self, halt_reason: str) -> None:
        self.halted = True
        self.halt_reason = halt_reason

    # -- sandboxes ----------------------------------------------------------------
    @event("SandboxCreated")
    def sandbox_created(self, sandbox_id: str, backend: str, metadata: dict[str, Any]) -> None:
        self.open_sandboxes[sandbox_id] = backend

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
    @event("DatasetTasksArtifact")
    def dataset_tasks(
        self,
        benchmark_id: str,
        subset_id: str,
        total_tasks: int,
        selected_tasks: int,
        content_sha256: str,
        selection: dict[str, Any],
    ) -> None:
        self.selected_tasks = selected_tasks
        self.artifacts.append(
            [
                "DatasetTasksArtifact",
                {
                    "benchmark_id": benchmark_id,
                    "subset_id": subset_id,
                    "content_sha256": content_sha256,
                    "selection": selection,
                },
            ]
        )

    @event("SetupArtifact")
    def setup_done(self, impl_id: str, impl_sha256: str) -> None:
        self.impl_id = impl_id
        self.artifacts.append(["SetupArtifact", {"impl_id": impl_id, "impl_sha256": impl_sha256}])

    @event("ModelProxyArtifact")
    def model_proxy(self, model_id: str, litellm_config_yaml: str, proxy_url: str | None) -> None:
        self.artifacts.append(
            [
                "ModelProxyArtifact",
                {"model_id": model_id, "litellm_config_yaml": litellm_config_yaml},
            ]
        )

    # -- results ------------------------------------------------------------------
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
    ) -> None:
        self.results_recorded += 1
        if invocation != self.invocations.get("materialize"):
            return
        trials = self.trial_results.setdefault(str(index), {})
        trials[str(trial)] = [score, score_meta, duration_ms]

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
    ) -> None:
        if invocation == self.invocations.get("materialize"):
            self.aggregated[str(index)] = outcome

    @event("ReportFile")
    def report_file(self, name: str, media_type: str, content: str, sha256: str) -> None:
        pass
