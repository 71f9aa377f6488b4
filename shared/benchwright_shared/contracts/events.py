"""Integration events published by services other than the orchestrator.

The orchestrator's own facts travel as the run event log (``run_events``).
"""

from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from benchwright_shared import subjects
from benchwright_shared.contracts.base import Contract
from benchwright_shared.contracts.commands import Egress

Outcome = Literal["pass", "fail", "err"]


class SandboxCreated(Contract):
    subject: ClassVar[str] = subjects.SANDBOX_CREATED

    command_id: str
    run_id: str
    sandbox_id: str
    role: str
    backend: str
    created_at: datetime
    metadata: dict[str, Any] = Field(default_factory=dict)
    # The sandbox-manager copy that holds it: commands for it go to that copy.
    owner: str | None = None


class SandboxKilled(Contract):
    subject: ClassVar[str] = subjects.SANDBOX_KILLED

    command_id: str
    run_id: str
    sandbox_id: str
    role: str
    backend: str
    reason: str
    duration_ms: int
    cost_micros: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)
    killed_at: datetime | None = None


class ExportedFile(BaseModel):
    """A file a sandbox handed out: where it now lies in the object store."""

    model_config = ConfigDict(frozen=True)

    path: str
    bucket: str
    object_name: str
    sha256: str
    size_bytes: int


class SandboxExecFinished(Contract):
    """``ExecInSandbox`` ran to its end (or its timeout). Output is truncated to 64 KiB each."""

    subject: ClassVar[str] = subjects.SANDBOX_EXEC_FINISHED

    command_id: str
    run_id: str
    sandbox_id: str
    exit_code: int
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    duration_ms: int = 0
    # What ``ExecInSandbox.export`` asked for and was there (a missing file is left out).
    exported: list[ExportedFile] = Field(default_factory=list)


class SandboxSnapshotted(Contract):
    subject: ClassVar[str] = subjects.SANDBOX_SNAPSHOTTED

    command_id: str
    run_id: str
    sandbox_id: str
    snapshot_id: str
    size_bytes: int = 0


class SandboxCommandFailed(Contract):
    subject: ClassVar[str] = subjects.SANDBOX_COMMAND_FAILED

    command_id: str
    run_id: str
    error_type: str
    detail: str


class TaskOutcome(BaseModel):
    """One trial of one task, as the scorer runner reported it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    index: int
    trial: int = 0
    task_id: str
    score: float | None = None
    score_meta: dict[str, Any] = Field(default_factory=dict)
    outcome: Outcome
    output: str | None = None
    error_type: str | None = None
    error: str | None = None
    duration_ms: int = 0
    # The row's ``category`` (an MMLU subject), when it has one.
    group: str | None = None
    # What the trial's model calls cost, as the proxy stamped each answer.
    cost_micros: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    calls: int | None = None
    # Of ``calls``, those the proxy's response cache answered.
    cached_calls: int | None = None


class SandboxTaskResults(Contract):
    """A batch of a sweep's results, on the run's sweep subject
    (``subjects.sweep_subject(run_id, "task_results")``)."""

    subject: ClassVar[str] = subjects.SANDBOX_TASK_RESULTS

    command_id: str
    run_id: str
    sandbox_id: str
    batch: int
    results: list[TaskOutcome]
    invocation: int | None = None


class SandboxSweepProgress(Contract):
    """A running sweep's heartbeat (every few seconds, on its run's sweep subject):
    the sweep is alive even while no task finishes."""

    subject: ClassVar[str] = subjects.SANDBOX_SWEEP_PROGRESS

    command_id: str
    run_id: str
    sandbox_id: str
    completed: int = 0


class SandboxTasksFinished(Contract):
    """A sweep's end, after its last batch on the same per-run sweep subject."""

    subject: ClassVar[str] = subjects.SANDBOX_TASKS_FINISHED

    command_id: str
    run_id: str
    sandbox_id: str
    batches: int
    completed: int
    error_type: str | None = None
    detail: str | None = None
    invocation: int | None = None


class ModelAttached(Contract):
    subject: ClassVar[str] = subjects.MODEL_ATTACHED

    command_id: str
    run_id: str
    proxy_url: str
    # The run's fake key: valid at our proxy for this run only. It travels on
    # the internal bus to the sandbox; it never enters the run event log.
    proxy_key: str
    model_id: str
    litellm_config_yaml: str
    # How many calls the model serves at once; None when the upstream scales.
    max_concurrency: int | None = None
    # The egress injector for this run's sandboxes (None when the proxy runs none).
    egress: Egress | None = None
    # The judge key (for ``AttachModel.judges``) and each judge's model id, in order:
    # a judge call names one of them as its ``model``. None and []: no judge.
    judge_key: str | None = None
    judge_models: list[str] = Field(default_factory=list)


class DriverUsageRecorded(Contract):
    """What a run's Driver spent on its own model since the last report (not the SUT's)."""

    subject: ClassVar[str] = subjects.DRIVER_USAGE_RECORDED

    usage_id: str
    run_id: str
    account: str
    model_id: str
    source: Literal["driver"] = "driver"
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_micros: int = 0
    recorded_at: datetime | None = None


class ModelUsageRecorded(Contract):
    """A run's proxied model calls over a short window: tokens, latency, cost.

    One event per run per window rather than per call keeps the bus and the
    ledger cheap when a sweep makes thousands of calls a minute. Calls finished
    after the run's key was revoked (the run's teardown) come in windows of
    their own, ``source="proxy_linger"``.
    """

    subject: ClassVar[str] = subjects.MODEL_USAGE_RECORDED

    usage_id: str
    run_id: str
    account: str
    model_id: str
    provider: str
    source: Literal["model", "proxy_linger"] = "model"
    # Whose calls: the model under test's, or the run's judges' (``cost.judge``).
    role: Literal["model", "judge"] = "model"
    calls: int = 0
    failed_calls: int = 0
    # Of ``calls``, those the response cache answered (no tokens, no cost).
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_micros: int = 0
    latency_ms_total: int = 0
    window_start: datetime
    window_end: datetime
