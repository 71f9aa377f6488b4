"""The run event log as the outside world sees it.

A run's log is an ordered sequence of ``RunEvent`` envelopes, ``seq`` from 0
(``RunLaunched``). Each ``type`` has a data model below; the orchestrator's
private domain events are translated into these before they leave its store.
"""

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Phase = Literal[
    "fork", "find", "fetch", "analyze", "setup", "attach", "atomize", "materialize", "report"
]


class _Data(BaseModel):
    model_config = ConfigDict(extra="ignore")


class SutRef(_Data):
    """The system under test: ``{model, provider}``, optionally a user's own endpoint."""

    model: str
    provider: str
    api_base: str | None = None


class RunLaunched(_Data):
    run_id: str
    account: str
    mode: Literal["pinned"] = "pinned"
    benchmark_id: str
    benchmark_name: str
    subset_id: str
    subset_slug: str
    impl_id: str | None = None
    sut: SutRef
    limit: int | None = None
    trials: dict[str, Any] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    idempotency_key: str | None = None


class PipelineStarted(_Data):
    phases: list[str]


class PipelineResumed(_Data):
    """The orchestrator came back and carries on the phase that was running."""

    phase: str
    reason: str


class PhaseStarted(_Data):
    phase: str


class PhaseCompleted(_Data):
    phase: str
    duration_ms: int


class PhaseFailed(_Data):
    phase: str
    error_type: str
    detail: str
    stack_trace: str | None = None


class SandboxCreated(_Data):
    sandbox_id: str
    backend: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class SandboxKilled(_Data):
    sandbox_id: str
    backend: str
    reason: str
    duration_ms: int
    cost_micros: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)


class DatasetTasksArtifact(_Data):
    benchmark_id: str
    subset_id: str
    total_tasks: int
    selected_tasks: int
    content_sha256: str
    selection: dict[str, Any] = Field(default_factory=dict)


class SetupArtifact(_Data):
    impl_id: str
    impl_sha256: str


class ModelProxyArtifact(_Data):
    model_id: str
    litellm_config_yaml: str
    # Where the proxy listened for this run: per-run noise, not load-bearing.
    proxy_url: str | None = None


class MaterializeTaskResult(_Data):
    task_id: str
    index: int
    invocation: int = 1
    trial: int = 0
    score: float | None = None
    score_meta: dict[str, Any] = Field(default_factory=dict)
    outcome: Literal["pass", "fail", "err"]
    output: str | None = None
    error_type: str | None = None
    error: str | None = None
    duration_ms: int = 0


class MaterializeTaskAggregated(_Data):
    task_id: str
    index: int
    invocation: int = 1
    score: float | None = None
    outcome: Literal["pass", "fail", "err"]
    trial_scores: list[float | None] = Field(default_factory=list)
    aggregator: str = "any_pass"


class ReportFile(_Data):
    name: str
    media_type: str
    content: str
    sha256: str


class RunHalted(_Data):
    halt_reason: str


class PipelineFinished(_Data):
    status: Literal["ok", "error"]
    duration_ms: int
    summary: dict[str, Any] = Field(default_factory=dict)
    error_type: str | None = None
    detail: str | None = None
    fingerprint: str | None = None


RUN_EVENT_TYPES: dict[str, type[_Data]] = {
    cls.__name__: cls
    for cls in (
        RunLaunched,
        PipelineStarted,
        PipelineResumed,
        PhaseStarted,
        PhaseCompleted,
        PhaseFailed,
        SandboxCreated,
        SandboxKilled,
        DatasetTasksArtifact,
        SetupArtifact,
        ModelProxyArtifact,
        MaterializeTaskResult,
        MaterializeTaskAggregated,
        ReportFile,
        RunHalted,
        PipelineFinished,
    )
}


class RunEvent(BaseModel):
    """One entry of a run's event log."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    run_id: str
    seq: int
    type: str
    ts: datetime
    data: dict[str, Any]

    def typed(self) -> _Data:
        """The data as its type's model (raises ``KeyError`` for an unknown type)."""
        return RUN_EVENT_TYPES[self.type].model_validate(self.data)
