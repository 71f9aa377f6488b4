"""The run event log as the outside world sees it.

A run's log is an ordered sequence of ``RunEvent`` envelopes, ``seq`` from 0
(``RunLaunched``). Each ``type`` has a data model below, and ``RUN_EVENT_TYPES``
is the whole vocabulary: the orchestrator's private domain events are translated
into these, and checked against them, before they leave its store; readers
dispatch on the type through it (``benchwright_shared.run_log``). A new field is
optional; a type a reader does not know is skipped by it.
"""

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from benchwright_shared.contracts.agent_events import AGENT_EVENT_TYPES
from benchwright_shared.contracts.run_event_data import RunEventData as _RunEventData

Phase = Literal[
    "fork", "find", "fetch", "analyze", "setup", "attach", "atomize", "materialize", "report"
]


# The base of every run event's data model (``run_event_data``, shared with
# ``agent_events``).
RunEventData = _RunEventData
_Data = _RunEventData


class SutRef(_Data):
    """The system under test: ``{model, provider}``, optionally a user's own endpoint."""

    model: str
    provider: str
    api_base: str | None = None


LaunchMode = Literal["natural_language", "pinned", "replay", "fork", "rescore"]


class RunLaunched(_Data):
    run_id: str
    account: str
    mode: LaunchMode = "pinned"
    # Unknown until Find resolves them on a natural-language launch.
    benchmark_id: str | None = None
    benchmark_name: str | None = None
    subset_id: str | None = None
    subset_slug: str | None = None
    impl_id: str | None = None
    sut: SutRef | None = None
    # The run's judges (``LaunchRun.judges``); None: no judge.
    judges: list[SutRef] | None = None
    limit: int | None = None
    trials: dict[str, Any] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    idempotency_key: str | None = None
    request: str | None = None
    driver: str | None = None
    limits: dict[str, Any] | None = None
    # What the launch asked for (``compute``) and the sandbox backend it resolved to.
    compute: str | None = None
    backend: str | None = None
    # The run this one derives from (replay, fork or rescore): the registry's derived-from
    # edge. A rescore scores the parent's recorded outputs with ``impl_id`` (decision 0062).
    parent_run_id: str | None = None
    replay: dict[str, Any] | None = None
    fork: dict[str, Any] | None = None
    # Guidance for the Driver (part of the Atomize fingerprint) and per-phase models.
    hints: list[str] | None = None
    phase_models: dict[str, str] | None = None
    # The proxy's response cache for the run's model calls (None: off).
    cache: dict[str, Any] | None = None
    # The third-party harness that scores the run, its task and files (None: our own).
    harness: dict[str, Any] | None = None
    # The run's traces, as launched (None: the deployment's defaults).
    telemetry: dict[str, bool] | None = None


class DriverSelected(_Data):
    driver: str
    model: str | None = None
    # Why the Driver is not the one asked for (no key configured ...).
    note: str | None = None
    # The phases that talk to another model than ``model``.
    phase_models: dict[str, str] | None = None


class BenchmarkResolved(_Data):
    """Find named the benchmark, subset, scope (and maybe the model) a request means."""

    benchmark_id: str
    benchmark_name: str
    subset_id: str
    subset_slug: str
    scope: dict[str, Any] = Field(default_factory=dict)
    sut: SutRef | None = None
    notes: list[str] = Field(default_factory=list)
    # What the request named, when the catalog lacked it and the request allowed
    # ``benchmark_name`` in its place ("MMLU Pro ... or the nearest benchmark").
    substituted_for: str | None = None


class PhaseFingerprint(_Data):
    """The hash of a phase's inputs. With ``cache_hit`` the phase copied the artifacts
    and snapshot that ``source_run_id`` recorded for the same hash, and did no work."""

    phase: str
    fingerprint: str
    cache_hit: bool = False
    source_run_id: str | None = None


class PhaseRestarted(_Data):
    phase: str
    reason: str
    restarts: int


class HaltCleared(_Data):
    resolution: str | None = None
    cleared_by: str
    was: str | None = None


class AgentTextEvent(_Data):
    phase: str
    text: str


class ToolCallEvent(_Data):
    phase: str
    call_id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolResultEvent(_Data):
    phase: str
    call_id: str
    tool: str
    result: str
    is_error: bool = False


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
    # The sandbox-manager copy that holds it.
    owner: str | None = None


class SandboxLost(_Data):
    """The sandbox went with the sandbox-manager copy that held it (no kill, no bill here)."""

    sandbox_id: str
    reason: str


class SandboxKilled(_Data):
    sandbox_id: str
    backend: str
    reason: str
    duration_ms: int
    cost_micros: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)


class _Artifact(_Data):
    # Set when a replay or fork copied this artifact from its parent's log.
    inherited_from: str | None = None


class FetchArtifact(_Artifact):
    source: str
    content_sha256: str
    total_tasks: int
    bucket: str | None = None
    object_name: str | None = None


class AnalyzeArtifact(_Artifact):
    kind: str
    schema_: dict[str, Any] = Field(default_factory=dict, alias="schema")
    schema_sha256: str
    subsets: list[str] = Field(default_factory=list)
    fields: dict[str, Any] = Field(default_factory=dict)
    candidates: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)


class SyntheticSubsetCreated(_Data):
    """Analyze scoped the rows to a derived subset ("one sample from each category")."""

    subset_id: str
    parent_subset_id: str
    selection: dict[str, Any]
    task_count: int
    # Set when a replay or fork copied it from its parent's log, as artifacts are.
    inherited_from: str | None = None


class DatasetTasksArtifact(_Artifact):
    benchmark_id: str
    subset_id: str
    total_tasks: int
    selected_tasks: int
    content_sha256: str
    selection: dict[str, Any] = Field(default_factory=dict)


class SetupArtifact(_Artifact):
    impl_id: str | None = None
    impl_sha256: str | None = None
    code: str | None = None


class AtomizeArtifact(_Artifact):
    impl_id: str
    impl_sha256: str
    invocation: int = 1
    kind: str
    code: str
    check: dict[str, Any] = Field(default_factory=dict)
    guidance: list[str] = Field(default_factory=list)


class ModelProxyArtifact(_Artifact):
    model_id: str
    litellm_config_yaml: str
    # Where the proxy listened for this run: per-run noise, not load-bearing.
    proxy_url: str | None = None


class SnapshotCreated(_Data):
    phase: str
    snapshot_id: str
    sandbox_id: str | None = None
    size_bytes: int = 0
    inherited_from: str | None = None


class HarnessLogArtifact(_Data):
    """A log the run's harness wrote (an Inspect ``.eval``), kept in the object store."""

    name: str
    media_type: str
    bucket: str
    object_name: str
    sha256: str
    size_bytes: int


class TemplateProbed(_Data):
    """A product-sandbox run probed a task environment (a ``template_probe`` sandbox)
    for what its product needs, before any task sandbox started.

    ``found``: where each executable resolved (None: missing), whether the product's
    working directory exists, the base's OS and Python. ``problems`` empty is ``ok``;
    otherwise the run was refused with them.
    """

    sandbox_id: str
    # The tasks whose environment this is (tasks with the same environment share a probe).
    tasks: list[str] = Field(default_factory=list)
    ok: bool
    found: dict[str, Any] = Field(default_factory=dict)
    problems: list[str] = Field(default_factory=list)
    duration_ms: int = 0


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
    # The trial's model calls, as the proxy metered them (None: not metered).
    cost_micros: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    calls: int | None = None
    # Of ``calls``, those the response cache answered (recorded so a replay is exact).
    cached_calls: int | None = None


class MaterializeTaskAggregated(_Data):
    task_id: str
    index: int
    invocation: int = 1
    score: float | None = None
    outcome: Literal["pass", "fail", "err"]
    trial_scores: list[float | None] = Field(default_factory=list)
    aggregator: str = "any_pass"
    # The task ended err because the platform failed it (``benchwright_shared.outcomes``).
    infra: bool = False
    # The row's ``category`` (an MMLU subject): intervals resample whole groups.
    group: str | None = None
    # The task's model spend over all its trials (None: none of them was metered).
    cost_micros: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    calls: int | None = None


class ReportFile(_Data):
    name: str
    media_type: str
    content: str
    sha256: str


class RunHalted(_Data):
    halt_reason: str


class RunDeleted(_Data):
    deleted_by: str


class RunUpdated(_Data):
    """Who may see the run changed, or its metadata did (a key set to None is removed)."""

    visibility: Literal["private", "unlisted", "public"] | None = None
    metadata: dict[str, Any] | None = None
    updated_by: str


class TaskLabelled(_Data):
    """A person graded one task (one trial of it, on a run of several) by hand.

    Labels come after the grader's, usually on a finished run, and are how the platform
    measures the grader's agreement with people (docs/judges.md, "Human labels"). A
    later label of the same (invocation, index, trial) by the same ``labelled_by``
    replaces theirs for readers; the log keeps both. ``grade`` is on ``scale``:
    ``pass_fail`` ("pass", "fail") or ``correct_partial_incorrect`` ("C", "P", "I").
    """

    label_id: str
    task_id: str
    index: int
    invocation: int = 1
    trial: int = 0
    scale: Literal["pass_fail", "correct_partial_incorrect"]
    grade: str
    note: str | None = None
    labelled_by: str


class PipelineFinished(_Data):
    status: Literal["ok", "error"]
    duration_ms: int
    summary: dict[str, Any] = Field(default_factory=dict)
    error_type: str | None = None
    detail: str | None = None
    fingerprint: str | None = None


# Every type a run log may hold -> its data model.
_RUN_EVENT_MODELS: tuple[type[RunEventData], ...] = (
    RunLaunched,
    PipelineStarted,
    PipelineResumed,
    DriverSelected,
    BenchmarkResolved,
    PhaseStarted,
    PhaseCompleted,
    PhaseFailed,
    PhaseFingerprint,
    PhaseRestarted,
    HaltCleared,
    AgentTextEvent,
    ToolCallEvent,
    ToolResultEvent,
    SandboxCreated,
    SandboxKilled,
    SandboxLost,
    FetchArtifact,
    AnalyzeArtifact,
    SyntheticSubsetCreated,
    DatasetTasksArtifact,
    SetupArtifact,
    AtomizeArtifact,
    ModelProxyArtifact,
    SnapshotCreated,
    HarnessLogArtifact,
    TemplateProbed,
    MaterializeTaskResult,
    MaterializeTaskAggregated,
    ReportFile,
    RunHalted,
    RunDeleted,
    RunUpdated,
    TaskLabelled,
    PipelineFinished,
    # What an agent did in a task's attempt (``agent_events``).
    *AGENT_EVENT_TYPES,
)
RUN_EVENT_TYPES: dict[str, type[RunEventData]] = {cls.__name__: cls for cls in _RUN_EVENT_MODELS}


class RunEvent(BaseModel):
    """One entry of a run's event log."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    run_id: str
    seq: int
    type: str
    ts: datetime
    data: dict[str, Any]

    def typed(self) -> RunEventData:
        """The data validated as its type's model (``KeyError`` for an unknown type).

        Readers that must not fail on an older entry use ``run_log.parse_run_event``.
        """
        return RUN_EVENT_TYPES[self.type].model_validate(self.data)
