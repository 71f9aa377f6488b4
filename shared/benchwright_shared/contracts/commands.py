"""Commands: imperative messages, each handled by exactly one service.

Every command carries a ``command_id``; it is the JetStream ``Nats-Msg-Id``, so a
command published twice within the dedupe window is stored once, and the
reply event carries it back for correlation.
"""

from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from benchwright_shared import subjects
from benchwright_shared.contracts.base import Contract
from benchwright_shared.contracts.run_events import SutRef
from benchwright_shared.hashing import canonical_json, sha256_hex

# What a sandbox is for (``metadata.benchwright_role``, concepts §4): ``task`` a fanout
# Materialize's; ``harbor_task_env`` a Harbor task's environment, where its agent and
# verifier run; ``template_probe`` the one a product-sandbox run first checks its product
# can start in; ``harbor_orchestrator`` where Harbor's own orchestrator would run.
SandboxRole = Literal[
    "driver", "work", "proxy", "task", "template_probe", "harbor_orchestrator", "harbor_task_env"
]
# A launch's ``compute``: a sandbox backend by name, or let the platform choose.
Compute = Literal["default", "auto", "local", "e2b", "sandbox0"]
COMPUTE_CHOICES: tuple[str, ...] = ("default", "auto", "local", "e2b", "sandbox0")


class LaunchRun(Contract):
    """Create a run and drive its pipeline.

    ``mode`` says which fields matter: ``natural_language`` carries ``request``
    (the benchmark is found by the Driver); ``pinned`` the resolved benchmark,
    subset and impl; ``replay`` and ``fork`` name ``parent_run_id`` and inherit
    from its log; ``rescore`` names ``parent_run_id`` and the ``impl_id`` that scores
    the parent's recorded outputs again, without the model (decision 0062).
    """

    subject: ClassVar[str] = subjects.LAUNCH_RUN

    command_id: str
    run_id: str
    account: str
    mode: Literal["natural_language", "pinned", "replay", "fork", "rescore"] = "pinned"
    benchmark_id: str | None = None
    benchmark_name: str | None = None
    subset_id: str | None = None
    subset_slug: str | None = None
    impl_id: str | None = None
    sut: SutRef | None = None
    # The run's judges (one, or a panel): the models a scorer's ``judge`` calls reach,
    # through the proxy under the judge role (decision 0061). None: no judge.
    judges: list[SutRef] | None = None
    limit: int | None = None
    request: str | None = None
    driver: str | None = None
    # Where sandboxes live: a backend by name, or ``default``/``auto`` for the
    # platform to choose; None on a replay or fork keeps the parent's backend.
    compute: Compute | None = None
    # Checked ceilings, ``{level: {quantity: value}}`` in dollars and seconds.
    limits: dict[str, dict[str, float]] = Field(default_factory=dict)
    parent_run_id: str | None = None
    # Replay: ``{"indices": [...] | None, "task_ids": [...], "only_failed": bool}``.
    # A replay's ``subset_id``, when set, is a newer snapshot of the parent's rolling
    # subset to run on instead of the parent's (decision 0021).
    replay: dict[str, Any] | None = None
    # Fork: ``{"description": str, "from_phase": str}``.
    fork: dict[str, Any] | None = None
    # Guidance for the Driver, and another Driver model for some of its phases.
    hints: list[str] = Field(default_factory=list)
    phase_models: dict[str, str] = Field(default_factory=dict)
    # The proxy's response cache: ``{"mode": "read" | "read_write", "ttl": seconds}``.
    cache: dict[str, Any] | None = None
    # A third-party harness that scores the run instead of a scorer:
    # ``{"name": "inspect", "task": "file.py@name", "args": {...}, "files": {path: text}}``,
    # or agents on a Harbor dataset: ``{"name": "harbor", "dataset": str, "files": {path:
    # text}, "agent": "benchwright" | "oracle" | "nop", "agent_args": {...}, "task": str |
    # None}`` (the gateway checked the files, the agent and each task's environment).
    harness: dict[str, Any] | None = None
    # The run's traces: ``{"traces": bool, "message_content": bool}``; None: the defaults.
    telemetry: dict[str, bool] | None = None
    # The resolved trials config; frozen on the run so replays reproduce it.
    trials: dict[str, Any] = Field(
        default_factory=lambda: {"plan": {"k": 1}, "aggregator": {"name": "any_pass"}}
    )
    metadata: dict[str, Any] = Field(default_factory=dict)
    idempotency_key: str | None = None
    requested_at: datetime


class HaltRun(Contract):
    """Stop a run: tear down its sandboxes and proxy, keep its log readable.

    Every orchestrator process hears it; the one driving the run acts.
    """

    subject: ClassVar[str] = subjects.HALT_RUN

    command_id: str
    run_id: str
    account: str
    halt_reason: str


class ResolveRunHalt(Contract):
    """Un-park a waiting run: a review answered, or an operator pause resumed."""

    subject: ClassVar[str] = subjects.RESOLVE_RUN_HALT

    command_id: str
    run_id: str
    account: str
    action: Literal["review_resolution", "resume"]
    resolution: str | None = None


Visibility = Literal["private", "unlisted", "public"]


class UpdateRun(Contract):
    """Change who may see a run (``visibility``) and/or merge into its ``metadata``."""

    subject: ClassVar[str] = subjects.UPDATE_RUN

    command_id: str
    run_id: str
    account: str
    visibility: Visibility | None = None
    metadata: dict[str, Any] | None = None


class LabelTask(Contract):
    """Record a person's grade of one task of a run (``TaskLabelled`` in its log)."""

    subject: ClassVar[str] = subjects.LABEL_TASK

    command_id: str
    run_id: str
    account: str
    task_id: str
    index: int
    invocation: int = 1
    trial: int = 0
    scale: Literal["pass_fail", "correct_partial_incorrect"]
    grade: str
    note: str | None = None


class DeleteRun(Contract):
    """Irreversibly remove a run from every read model (its log is tombstoned)."""

    subject: ClassVar[str] = subjects.DELETE_RUN

    command_id: str
    run_id: str
    account: str


class SandboxFile(BaseModel):
    """A file to place in a sandbox: inline text, or an object-store blob.

    ``path`` is relative to the sandbox's working directory, or absolute when it lies
    in one of the sandbox's ``CreateSandbox.dirs``; anything else is refused.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    path: str
    content: str | None = None
    bucket: str | None = None
    object_name: str | None = None


# How long a build of a task's environment may take unless the task says (Harbor's
# ``[environment] build_timeout_sec`` default).
DEFAULT_BUILD_TIMEOUT_S = 600.0
# The most a task may give its build.
MAX_BUILD_TIMEOUT_S = 3 * 3600.0


class EnvironmentBuild(BaseModel):
    """A Harbor task's ``environment/`` folder, built into the image its sandboxes
    start from by a backend that builds (e2b: a template). ``context`` holds the
    folder's files by path relative to it, the Dockerfile among them; ``digest``
    names the build by what it is made of, so one environment is built once."""

    model_config = ConfigDict(frozen=True)

    # Named in a failed build's error.
    task: str = Field(min_length=1, max_length=256)
    dockerfile: str
    context: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = Field(default=DEFAULT_BUILD_TIMEOUT_S, gt=0, le=MAX_BUILD_TIMEOUT_S)
    # The build's resources (Harbor's ``cpus`` and ``memory_mb``), when the task sets them.
    cpu_count: int | None = Field(default=None, ge=1, le=64)
    memory_mb: int | None = Field(default=None, ge=1)

    @property
    def digest(self) -> str:
        """SHA-256 of what the image is made of (the task's name and the bound are not)."""
        made_of = {
            "dockerfile": self.dockerfile,
            "context": self.context,
            "cpu_count": self.cpu_count,
            "memory_mb": self.memory_mb,
        }
        return sha256_hex(canonical_json(made_of))


class CreateSandbox(Contract):
    subject: ClassVar[str] = subjects.CREATE_SANDBOX

    command_id: str
    run_id: str
    account: str = ""
    role: SandboxRole
    backend: str = "local"
    files: list[SandboxFile] = Field(default_factory=list)
    # Start from a snapshot's filesystem instead of an empty one; ``files`` go on top.
    from_snapshot: str | None = None
    # Absolute directories the sandbox also presents, empty, writable and owned by its
    # user (a Harbor task's ``/app``, ``/logs``, ``/tests``, ``/solution``): normalised,
    # apart from each other and from the system's places; at most 16. Such a sandbox
    # cannot be snapshotted (its snapshot would miss them).
    dirs: list[str] = Field(default_factory=list)
    # The container image to start from (a Harbor task's ``docker_image``): only a
    # backend that runs images (sandbox0) takes one; the others refuse it
    # (``image_unsupported``) before anything exists.
    image: str | None = Field(default=None, max_length=512)
    # The task's environment to build and start from (a Harbor task's Dockerfile, on a
    # backend that builds: e2b); the others refuse it (``build_unsupported``). A build
    # can outlast the command consumer's ack wait: such a command is answered from
    # the background, within ``build.timeout_s`` plus the usual setup.
    build: EnvironmentBuild | None = None


class Egress(BaseModel):
    """How a run's sandboxes reach the outside: the egress injector, and its CA.

    ``proxy_url`` carries the run's egress key (it opens the injector, not the model
    API) as its user info; the sandbox-manager
    sets it as HTTP(S)_PROXY and writes ``ca_cert_pem`` (the certificate only, never
    its key) where TLS clients look for trusted roots.
    """

    model_config = ConfigDict(frozen=True)

    proxy_url: str
    ca_cert_pem: str


class ExecInSandbox(Contract):
    """Write ``files`` into a sandbox, then run ``argv`` there and report its output.

    The runtime (``bench_task``, ``bench_runner``) is importable as in Materialize.
    Replies with ``SandboxExecFinished`` (or ``SandboxCommandFailed``).
    """

    subject: ClassVar[str] = subjects.EXEC_IN_SANDBOX

    command_id: str
    run_id: str
    sandbox_id: str
    argv: list[str] = Field(default_factory=list)
    files: list[SandboxFile] = Field(default_factory=list)
    stdin: str | None = None
    timeout_s: float = 120.0
    env: dict[str, str] = Field(default_factory=dict)
    egress: Egress | None = None
    # Files to hand out once the command ends (relative paths, or absolute ones in the
    # sandbox's ``dirs``): each goes to the artifacts bucket and comes back in
    # ``SandboxExecFinished.exported``.
    export: list[str] = Field(default_factory=list, max_length=1000)
    # Where the command starts: None or "." the sandbox's working directory, a relative
    # path below it, or one of the sandbox's ``dirs`` (or below one).
    cwd: str | None = None


class SnapshotSandbox(Contract):
    """Capture a sandbox's filesystem as a restorable snapshot.

    Replies with ``SandboxSnapshotted``; ``CreateSandbox.from_snapshot`` restores it.
    """

    subject: ClassVar[str] = subjects.SNAPSHOT_SANDBOX

    command_id: str
    run_id: str
    sandbox_id: str
    label: str = ""


class TaskSpec(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    index: int
    trial: int = 0
    # A rescore's: the output the parent run recorded for this (task, trial). The
    # runner then scores it and never calls ``solve`` (no call to the model under test).
    given_output: str | None = None


class RunTasks(Contract):
    """Run the scorer over ``tasks`` inside a sandbox, streaming results back."""

    subject: ClassVar[str] = subjects.RUN_TASKS

    command_id: str
    run_id: str
    sandbox_id: str
    impl_path: str = "task_impl.py"
    data_path: str = "tasks.jsonl"
    tasks: list[TaskSpec]
    concurrency: int = 8
    timeout_s: float = 300.0
    env: dict[str, str] = Field(default_factory=dict)
    egress: Egress | None = None
    # The Materialize invocation this sweep belongs to, echoed on its results.
    invocation: int | None = None
    # A harness runs the tasks instead of the scorer: ``inspect`` evaluates the
    # Inspect task ``harness_task`` (``file.py`` or ``file.py@name``, relative to the
    # sandbox's working directory) with ``harness_args``; index i is its i-th sample.
    harness: Literal["inspect"] | None = None
    harness_task: str | None = None
    harness_args: dict[str, Any] = Field(default_factory=dict)


class KillSandbox(Contract):
    subject: ClassVar[str] = subjects.KILL_SANDBOX

    command_id: str
    run_id: str
    sandbox_id: str
    reason: str = "finished"


class AttachModel(Contract):
    """Bind a run to its model: the proxy issues a per-run fake key."""

    subject: ClassVar[str] = subjects.ATTACH_MODEL

    command_id: str
    run_id: str
    account: str
    sut: SutRef
    # The run's per-task model spend ceilings (``limits.task.cost`` over all of a task's
    # trials, ``limits.attempt.cost`` per trial), in micro-dollars: the proxy, which
    # meters every call, refuses a task's calls once it reaches one.
    task_cost_micros: int | None = None
    attempt_cost_micros: int | None = None
    # The run's dataset rows and trials a task: a call naming a task index or trial
    # outside them is not the run's, and the proxy refuses it. None: not known yet.
    task_rows: int | None = None
    trials_k: int | None = None
    # The run's response cache (``LaunchRun.cache``); None: every call goes upstream.
    cache: dict[str, Any] | None = None
    # The run's traces (``LaunchRun.telemetry``); None: the deployment's defaults.
    telemetry: dict[str, bool] | None = None
    # The run's judges (``LaunchRun.judges``): a second key, the judge key, reaches them.
    judges: list[SutRef] | None = None


class DetachModel(Contract):
    subject: ClassVar[str] = subjects.DETACH_MODEL

    command_id: str
    run_id: str
    # The ``AttachModel.command_id`` this detach ends. Attach and detach travel on two
    # subjects, so a parked run's late detach can reach the proxy after its resume's
    # attach: naming the attach lets the proxy ignore a detach of a key already
    # replaced. None (senders before this field): detach whatever is bound.
    attach_command_id: str | None = None
