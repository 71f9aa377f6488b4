"""Typed views of the API's response bodies.

Every model allows extra fields: the server adds fields over time and an older SDK must
keep working (and keep exposing them as attributes) rather than fail validation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    PrivateAttr,
    field_validator,
)
from pydantic_core import CoreSchema, core_schema

__all__ = [
    "AsyncTaskList",
    "AttrDict",
    "BenchmarkRef",
    "EventList",
    "LLMSpend",
    "Money",
    "ProjectionRebuild",
    "Run",
    "RunCost",
    "RunEvent",
    "RunLinks",
    "RunList",
    "SubsetRef",
    "SutRef",
    "TaskList",
    "TaskPayload",
    "TaskRow",
    "TaskSummary",
    "TrialResult",
]


class AttrDict(dict[str, Any]):
    """A ``dict`` whose keys are also attributes, recursively (``evt.data.phase``).

    Event payloads vary by event type, so they stay free-form; this keeps them
    convenient without pretending to a schema.
    """

    def __getattr__(self, name: str) -> Any:
        try:
            return _wrap(self[name])
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, key: str) -> Any:
        return _wrap(super().__getitem__(key))

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[Any], handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        """Validate as a plain ``dict[str, Any]`` and wrap the result."""
        return core_schema.no_info_after_validator_function(cls, handler(dict[str, Any]))


def _wrap(value: Any) -> Any:
    if isinstance(value, dict) and not isinstance(value, AttrDict):
        return AttrDict(value)
    if isinstance(value, list):
        return [_wrap(item) for item in value]
    return value


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Money(_Model):
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


class RunCost(_Model):
    """A run's cost, broken down by what incurred it (concepts §9).

    ``incurred`` is model + sandbox + driver + narration; ``billed`` the platform's
    part (sandbox, driver, narration) with the markup. ``proxy_linger`` (model calls
    that finished after the run's key was revoked) is in neither total: add it for
    an all-in figure, using ``amount_usd`` (a linger is routinely sub-cent).
    """

    model: LLMSpend | None = None
    sandbox: Money | None = None
    driver: Money | None = None
    narration: LLMSpend | None = None
    incurred: Money | None = None
    billed: Money | None = None
    proxy_linger: LLMSpend | None = None


class SutRef(_Model):
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


class BenchmarkRef(_Model):
    """The benchmark a run was launched against (None until a natural-language
    launch has found it)."""

    id: str | None = None
    name: str | None = None
    # What the request named, when the catalog lacked it and the request allowed
    # this benchmark in its place ("Run MMLU Pro ..., or the nearest benchmark").
    substituted_for: str | None = None


class SubsetRef(_Model):
    """The benchmark subset a run was launched against (None until resolved)."""

    id: str | None = None
    slug: str | None = None


class RunLinks(_Model):
    """Related URLs of a run; ``dashboard`` is the one meant for humans."""

    self_: str | None = Field(default=None, alias="self")
    tasks: str | None = None
    events: str | None = None
    stream: str | None = None
    report: str | None = None
    dashboard: str | None = None


class Run(_Model):
    """One pipeline execution, as projected from its event log.

    ``runs.get(run_id, fields=[...])`` answers only the named fields (plus ``id`` and
    ``object``): the others keep their defaults here, mostly ``None``, and
    ``run.model_fields_set`` says which ones the server sent. ``expand=[...]`` adds
    the expansions at the bottom (``tasks_summary``, ``artifacts``, ``recent_events``,
    ``blocked_hosts``), which are ``None`` unless asked for.
    """

    id: str
    object: str = "run"
    # ``running``, ``ok`` or ``error``; None only when a ``fields=`` read left it out.
    status: str | None = None
    display_status: str | None = None
    halted: bool = False
    halt_reason: str | None = None
    model: SutRef | None = None
    benchmark: BenchmarkRef | None = None
    subset: SubsetRef | None = None
    impl_id: str | None = None
    phase: str | None = None
    mode: str | None = None
    request: str | None = None
    driver: str | None = None
    # ``private``, ``unlisted`` or ``public``.
    visibility: str | None = None
    # For ``runs.update(if_match=...)``: changes whenever the run's log grows.
    etag: str | None = None
    # The seq of the last log entry this view of the run includes.
    last_seq: int | None = None
    compute: str | None = None
    backend: str | None = None
    metadata: AttrDict | None = None
    # The run this one was replayed or forked from.
    derived_from: str | None = None
    fingerprint: str | None = None
    # How many tasks the run chose to run (None until it has chosen).
    selected_tasks: int | None = None
    trials: AttrDict | None = None
    limits: AttrDict | None = None
    created_at: datetime | None = None
    finished_at: datetime | None = None
    # ``{"type": ..., "detail": ...}`` when the run ended in ``error``.
    error: AttrDict | None = None
    # Zero until billing has costed the run (or while it cannot be reached).
    cost: RunCost = Field(default_factory=RunCost)
    # Filled when the run is terminal; ``expand=["tasks_summary"]`` is live.
    summary: AttrDict | None = None
    links: RunLinks = Field(default_factory=RunLinks)
    # -- expansions (``runs.get(run_id, expand=[...])``) --
    # The aggregate over every task so far, as ``runs.tasks(...).summary``.
    tasks_summary: TaskSummary | None = None
    # The latest artifact of each kind, as ``runs.artifacts(run_id)``.
    artifacts: list[AttrDict] | None = None
    # The last entries of the run's event log, oldest first.
    recent_events: list[RunEvent] | None = None
    # Hosts the run's sandboxes were refused, as ``runs.blocked_hosts(run_id)``.
    blocked_hosts: list[AttrDict] | None = None

    @field_validator("cost", "links", mode="before")
    @classmethod
    def _absent_is_empty(cls, value: Any) -> Any:
        # The server sends ``cost: null`` while billing cannot be reached.
        return {} if value is None else value

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


class DeletedRun(_Model):
    """What ``runs.kill`` answers: the run is gone."""

    id: str
    object: str = "run"
    deleted: bool = True


class RunList(_Model):
    """One page of runs."""

    object: str = "list"
    data: list[Run] = Field(default_factory=list)
    next_page_token: str | None = None


class Interval(_Model):
    """A 95% interval around an estimate: ``wilson`` for a pass rate, a (cluster)
    bootstrap for a mean (``resamples`` drawn; ``clusters`` groups resampled whole)."""

    low: float
    high: float
    method: str
    resamples: int | None = None
    clusters: int | None = None


class SummaryIntervals(_Model):
    """The intervals of a summary's pass rate and mean score, at ``level``."""

    level: float = 0.95
    pass_rate: Interval | None = None
    mean_score: Interval | None = None


class TrialVariance(_Model):
    """How much a task's trials disagree: the mean, over the ``tasks`` with two or more
    settled trials, of the sample variance of their scores."""

    mean: float
    tasks: int


class TaskSummary(_Model):
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


class TrialResult(_Model):
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


class TaskRow(_Model):
    """A slim per-task result; the full input/output lives behind ``TaskList.payload``.

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


class TaskPayload(_Model):
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


class _TaskPage(_Model):
    object: str = "list"
    summary: TaskSummary = Field(default_factory=TaskSummary)
    data: list[TaskRow] = Field(default_factory=list)
    next_page_token: str | None = None
    # The Materialize invocation listed (``summary`` covers the same one), every
    # invocation the run has rows for, and the order asked for.
    version: int | None = None
    versions: list[int] = Field(default_factory=list)
    sort: str | None = None


class TaskList(_TaskPage):
    """One page of a run's task rows plus the run-wide summary."""

    _fetch_payload: Callable[[str], TaskPayload] | None = PrivateAttr(default=None)

    def bind(self, fetch_payload: Callable[[str], TaskPayload]) -> TaskList:
        """Attach the callable ``payload`` uses; the client does this for you."""
        self._fetch_payload = fetch_payload
        return self

    def payload(self, row_id: str) -> TaskPayload:
        """Fetch the full payload of one of this run's task rows (by its row ``id``)."""
        if self._fetch_payload is None:
            raise RuntimeError("this TaskList is not bound to a client")
        return self._fetch_payload(row_id)


class AsyncTaskList(_TaskPage):
    """:class:`TaskList` for the async client: ``await tasks.payload(row_id)``."""

    _fetch_payload: Callable[[str], Awaitable[TaskPayload]] | None = PrivateAttr(default=None)

    def bind(self, fetch_payload: Callable[[str], Awaitable[TaskPayload]]) -> AsyncTaskList:
        """Attach the coroutine function ``payload`` uses; the client does this for you."""
        self._fetch_payload = fetch_payload
        return self

    async def payload(self, row_id: str) -> TaskPayload:
        """Fetch the full payload of one of this run's task rows (by its row ``id``)."""
        if self._fetch_payload is None:
            raise RuntimeError("this AsyncTaskList is not bound to a client")
        return await self._fetch_payload(row_id)


class RunEvent(_Model):
    """One entry of a run's event log; ``data`` varies with ``type``."""

    run_id: str
    seq: int
    type: str
    ts: datetime | None = None
    data: AttrDict = Field(default_factory=AttrDict)


class EventList(_Model):
    """One page of a run's event log."""

    object: str = "list"
    data: list[RunEvent] = Field(default_factory=list)
    has_more: bool = False
    next_after_seq: int | None = None


class ProjectionRebuild(_Model):
    """The outcome of replaying the event log into a projection."""

    projection: str
    applied: int
    digest: str | None = None
    before_digest: str | None = None
    # Messages the replay could not apply and set aside (``/parked`` lists them).
    parked: int = 0

    @property
    def unchanged(self) -> bool:
        """Whether the rebuilt projection is identical to the one it replaced."""
        return self.digest is not None and self.digest == self.before_digest


# ``Run`` names models defined after it.
Run.model_rebuild()
RunList.model_rebuild()
