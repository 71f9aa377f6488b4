"""``/v1/runs``: a run, its task rows and their payloads, its log, its fingerprint and
its narration, as the gateway answers them and the SDK reads them."""

from datetime import datetime
from typing import Any

from pydantic import Field, field_serializer, field_validator

from benchwright_shared.api.account import BlockedHost
from benchwright_shared.api.artifacts import Artifact
from benchwright_shared.api.base import Answer, AttrDict, Timestamp


class Money(Answer):
    """An amount of money in minor units; a run's costs also carry ``amount_usd``,
    exact where the cents are rounded."""

    amount_cents: int = 0
    currency: str = "USD"
    amount_usd: float | None = None


class LLMSpend(Money):
    """What an LLM cost, with how many calls and tokens it took."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class RunCost(Answer):
    """A run's cost, broken down by what incurred it (concepts §9).

    ``incurred`` is model + judge + sandbox + driver + narration; ``billed`` the platform's
    part (sandbox, driver, narration) with the markup. ``proxy_linger`` (model calls
    that finished after the run's key was revoked) is in neither total: add it for
    an all-in figure, using ``amount_usd`` (a linger is routinely sub-cent).
    """

    model: LLMSpend | None = None
    # The run's judges' calls (a model-graded scorer's), apart from the model's.
    judge: LLMSpend | None = None
    sandbox: Money | None = None
    driver: Money | None = None
    narration: LLMSpend | None = None
    incurred: Money | None = None
    billed: Money | None = None
    proxy_linger: LLMSpend | None = None


class SutRef(Answer):
    """The system under test (the API's ``model`` field)."""

    model: str
    provider: str
    api_base: str | None = None

    @property
    def identifier(self) -> str:
        """The model's name at its provider (``qwen/qwen3-8b``): the guide's
        ``model.identifier``."""
        return self.model

    @property
    def source(self) -> str:
        """Where the model is served from (the provider): the guide's ``model.source``."""
        return self.provider


class BenchmarkRef(Answer):
    """The benchmark a run was launched against (None until a natural-language
    launch has found it)."""

    id: str | None = None
    name: str | None = None
    # What the request named, when the catalog lacked it and the request allowed
    # this benchmark in its place ("Run MMLU Pro ..., or the nearest benchmark").
    substituted_for: str | None = None


class SubsetRef(Answer):
    """The benchmark subset a run was launched against (None until resolved)."""

    id: str | None = None
    slug: str | None = None


class RunLinks(Answer):
    """Related URLs of a run; ``dashboard`` is the one meant for humans."""

    self_: str | None = Field(default=None, alias="self")
    tasks: str | None = None
    events: str | None = None
    stream: str | None = None
    report: str | None = None
    dashboard: str | None = None


class Interval(Answer):
    """A 95% interval around an estimate: ``wilson`` for a pass rate, a (cluster)
    bootstrap for a mean (``resamples`` drawn; ``clusters`` groups resampled whole)."""

    low: float
    high: float
    method: str
    resamples: int | None = None
    clusters: int | None = None


class SummaryIntervals(Answer):
    """The intervals of a summary's pass rate and mean score, at ``level``."""

    level: float = 0.95
    pass_rate: Interval | None = None
    mean_score: Interval | None = None


class TrialVariance(Answer):
    """How much a task's trials disagree: the mean, over the ``tasks`` with two or more
    settled trials, of the sample variance of their scores."""

    mean: float
    tasks: int


class TaskSummary(Answer):
    """Aggregate results over all of a run's tasks (not just the returned page).

    ``pass_rate`` is over passed + failed; ``mean_score`` over the same tasks' scores;
    ``intervals`` says how sure each is.
    """

    total: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    # Of ``errored``, the tasks the platform failed (a lost sandbox, an unreachable proxy).
    infra_errored: int = 0
    pass_rate: float | None = None
    mean_score: float | None = None
    intervals: SummaryIntervals | None = None
    trial_variance: TrialVariance | None = None
    duration_ms_p50: float | None = None
    duration_ms_p95: float | None = None


class RunEvent(Answer):
    """One entry of a run's event log; ``data`` varies with ``type``."""

    run_id: str
    seq: int
    type: str
    # Optional: the SDK also builds events from bare SSE messages.
    ts: datetime | None = None
    data: AttrDict = Field(default_factory=AttrDict)


class Run(Answer):
    """One pipeline execution, as projected from its event log.

    ``GET /v1/runs/{id}?fields=`` answers only the named fields (plus ``id`` and
    ``object``): the others keep their defaults here, mostly ``None``, and
    ``model_fields_set`` says which ones the server sent. ``expand=`` adds the
    expansions at the bottom (``tasks_summary``, ``artifacts``, ``recent_events``,
    ``blocked_hosts``), which are ``None`` unless asked for.
    """

    # Declared in the order the gateway renders them: the wire keeps its key order.
    id: str
    object: str = "run"
    # ``running``, ``ok`` or ``error``; None only when a ``fields=`` read left it out.
    status: str | None = None
    display_status: str | None = None
    halted: bool = False
    halt_reason: str | None = None
    phase: str | None = None
    model: SutRef | None = None
    # The run's judges (a model-graded scorer's second model; several: a panel).
    judges: list[SutRef] | None = None
    mode: str | None = None
    request: str | None = None
    driver: str | None = None
    # ``private``, ``unlisted`` or ``public``.
    visibility: str | None = None
    # For ``If-Match`` on ``PATCH``: changes whenever the run's log grows.
    etag: str | None = None
    compute: str | None = None
    backend: str | None = None
    # The run this one was replayed or forked from.
    derived_from: str | None = None
    trials: AttrDict | None = None
    limits: AttrDict | None = None
    benchmark: BenchmarkRef | None = None
    subset: SubsetRef | None = None
    impl_id: str | None = None
    fingerprint: str | None = None
    metadata: AttrDict | None = None
    # How many tasks the run chose to run (None until it has chosen).
    selected_tasks: int | None = None
    created_at: Timestamp | None = None
    finished_at: Timestamp | None = None
    # The seq of the last log entry this view of the run includes.
    last_seq: int | None = None
    # ``{"type": ..., "detail": ...}`` when the run ended in ``error``.
    error: AttrDict | None = None
    # Filled when the run is terminal; ``expand=tasks_summary`` is live.
    summary: AttrDict | None = None
    # Empty until billing has costed the run (null on the wire while it cannot be reached).
    cost: RunCost = Field(default_factory=RunCost)
    links: RunLinks = Field(default_factory=RunLinks)
    # -- expansions (``expand=``) --
    # The aggregate over every task so far, as ``/tasks`` reports it.
    tasks_summary: TaskSummary | None = None
    # The latest artifact of each kind, as ``/artifacts``.
    artifacts: list[Artifact] | None = None
    # The last entries of the run's event log, oldest first.
    recent_events: list[RunEvent] | None = None
    # Hosts the run's sandboxes were refused, as ``/blocked-hosts``.
    blocked_hosts: list[BlockedHost] | None = None

    @field_validator("cost", "links", mode="before")
    @classmethod
    def _absent_is_empty(cls, value: Any) -> Any:
        # The run is rendered with ``cost: null`` while billing cannot be reached.
        return {} if value is None else value

    @field_serializer("cost")
    def _unknown_is_null(self, cost: RunCost) -> RunCost | None:
        # Read as empty, written back as it came: null while billing cannot say.
        return cost if cost.model_fields_set or cost.model_extra else None

    @property
    def is_terminal(self) -> bool:
        """Whether the run has stopped changing status (``ok`` or ``error``)."""
        return self.status is not None and self.status != "running"

    # Flat names the guide's examples read (``r.benchmark_name``, ``r.get("subset_id")``).
    @property
    def benchmark_id(self) -> str | None:
        return self.benchmark.id if self.benchmark else None

    @property
    def benchmark_name(self) -> str | None:
        return self.benchmark.name if self.benchmark else None

    @property
    def subset_id(self) -> str | None:
        return self.subset.id if self.subset else None

    def get(self, key: str, default: Any = None) -> Any:
        """A field by name, dict-style, flat names included; ``default`` when absent."""
        value = getattr(self, key, None)
        return default if value is None else value


class DeletedRun(Answer):
    """What ``DELETE /v1/runs/{id}`` answers: the run is gone."""

    id: str
    object: str = "run"
    deleted: bool = True


class RunList(Answer):
    """One page of runs."""

    object: str = "list"
    data: list[Run] = Field(default_factory=list)
    next_page_token: str | None = None


class TrialResult(Answer):
    """One trial of a task (runs launched with ``trials``): its own score and outcome.

    In a task list it carries ``output_preview``; in a payload the whole ``output``,
    ``score_meta`` and ``error``.
    """

    trial: int
    score: float | None = None
    outcome: str | None = None
    error_type: str | None = None
    duration_ms: int | None = None
    # The trial's model calls as the proxy metered them; None when none was.
    cost: LLMSpend | None = None
    output_preview: str | None = None
    output: Any = None
    score_meta: AttrDict = Field(default_factory=AttrDict)
    error: Any = None


class TaskRow(Answer):
    """A slim per-task result; the full input and output are behind ``/payload``.

    ``score`` and ``outcome`` are the task's aggregate over its trials, ``trials``
    each trial's own result (filled for runs of more than one trial a task). ``version``
    is the Materialize invocation the row belongs to.
    """

    id: str
    object: str = "task"
    task_id: str
    index: int | None = None
    invocation: int | None = None
    version: int | None = None
    score: float | None = None
    outcome: str | None = None
    output_preview: str | None = None
    error_type: str | None = None
    duration_ms: int | None = None
    # The task's model spend over all its trials (``limits.task.cost`` bounds it).
    cost: LLMSpend | None = None
    trials: list[TrialResult] = Field(default_factory=list)


class TaskPayload(Answer):
    """A task's full input, expected answer, model output and scoring detail, and
    every trial's result in ``trials``."""

    id: str
    object: str = "task_payload"
    task_id: str
    input: Any = None
    expected: Any = None
    output: Any = None
    score: float | None = None
    outcome: str | None = None
    score_meta: AttrDict = Field(default_factory=AttrDict)
    error: Any = None
    trials: list[TrialResult] = Field(default_factory=list)


class TaskPage(Answer):
    """One page of a run's task rows plus the summary of the same sweep."""

    object: str = "list"
    summary: TaskSummary = Field(default_factory=TaskSummary)
    data: list[TaskRow] = Field(default_factory=list)
    next_page_token: str | None = None
    # The Materialize invocation listed (``summary`` covers the same one), every
    # invocation the run has rows for, and the order asked for.
    version: int | None = None
    versions: list[int] = Field(default_factory=list)
    sort: str | None = None


class EventList(Answer):
    """One page of a run's event log."""

    object: str = "list"
    data: list[RunEvent] = Field(default_factory=list)
    has_more: bool = False
    next_after_seq: int | None = None


class FingerprintRecord(Answer):
    """One log entry's part of a fingerprint: the canonical JSON hashed for it."""

    seq: int
    type: str
    canonical: str


class Fingerprint(Answer):
    """How a run's fingerprint was derived, recomputed from its log at read time."""

    object: str = "fingerprint"
    run_id: str
    # What the run recorded, and what its log gives now (None for an empty log).
    fingerprint: str | None = None
    recomputed: str | None = None
    matches: bool | None = None
    algorithm: str
    records: list[FingerprintRecord] = Field(default_factory=list)
    # Each load-bearing entry type and the fields of it that are hashed.
    rules: dict[str, list[str]] = Field(default_factory=dict)


class Narration(Answer):
    """A run told in plain words from its log (no model is asked)."""

    object: str = "narration"
    run_id: str
    # ``recent`` (the last steps) or ``all``.
    slice: str
    text: str
    # Tasks settled so far, by outcome.
    outcomes: dict[str, int] = Field(default_factory=dict)
    events_read: int = 0
