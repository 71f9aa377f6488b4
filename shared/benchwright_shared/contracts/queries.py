"""Queries: request/reply to the service that owns the read model."""

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from benchwright_shared import subjects
from benchwright_shared.contracts.base import Contract, Problem
from benchwright_shared.contracts.run_events import RunEvent, SutRef


class ResolveBenchmark(Contract):
    """Find a benchmark by catalog id or exact name, and one of its subsets."""

    subject: ClassVar[str] = subjects.RESOLVE_BENCHMARK

    account: str
    benchmark: str
    subset: str | None = None
    impl: str | None = None


class BenchmarkResolution(BaseModel):
    model_config = ConfigDict(extra="ignore")

    problem: Problem | None = None
    benchmark_id: str | None = None
    benchmark_name: str | None = None
    subset_id: str | None = None
    subset_slug: str | None = None
    task_count: int = 0
    impl_id: str | None = None
    # The subset's own trials default, for a launch that names none.
    default_trials: dict[str, Any] | None = None
    # A BUILT subset's recipe ``run_timeout``: the per-task wall clock a launch takes
    # as ``limits.task.duration`` (the narrowest ceiling wins).
    task_timeout_s: float | None = None
    # The subset is a Harbor dataset (one row a task, ``input.harbor_files``): only a
    # ``harness: "harbor"`` launch runs it (decision 0050).
    agentic: bool = False


class GetSubsetRows(Contract):
    subject: ClassVar[str] = subjects.GET_SUBSET_ROWS

    subset_id: str
    offset: int = 0
    limit: int = 100


class SubsetRows(BaseModel):
    model_config = ConfigDict(extra="ignore")

    problem: Problem | None = None
    subset_id: str
    total: int = 0
    rows: list[dict[str, Any]] = Field(default_factory=list)
    # Where the full subset lives as JSON lines, for copying into a sandbox.
    bucket: str | None = None
    object_name: str | None = None
    content_sha256: str | None = None


class GetImpl(Contract):
    subject: ClassVar[str] = subjects.GET_IMPL

    impl_id: str


class ImplCode(BaseModel):
    model_config = ConfigDict(extra="ignore")

    problem: Problem | None = None
    impl_id: str
    code: str = ""
    sha256: str = ""


class ListCatalog(Contract):
    """Everything an account can launch by name: benchmarks and their subsets."""

    subject: ClassVar[str] = subjects.LIST_CATALOG

    account: str


class CatalogSubsetEntry(BaseModel):
    model_config = ConfigDict(extra="ignore")

    subset_id: str
    slug: str
    name: str
    task_count: int
    # Distinct values of the rows' top-level ``category`` (MMLU's subjects ...), in row order.
    categories: list[str] = Field(default_factory=list)
    # The official impl, when the subset ships one; None means the Driver must write a scorer.
    official_impl_id: str | None = None


class CatalogBenchmarkEntry(BaseModel):
    model_config = ConfigDict(extra="ignore")

    benchmark_id: str
    name: str
    # Other names a request may use for it ("gsm-8k", "bfcl", "berkeley function calling").
    aliases: list[str] = Field(default_factory=list)
    description: str = ""
    category: str = ""
    tags: list[str] = Field(default_factory=list)
    subsets: list[CatalogSubsetEntry] = Field(default_factory=list)


class CatalogListing(BaseModel):
    model_config = ConfigDict(extra="ignore")

    problem: Problem | None = None
    benchmarks: list[CatalogBenchmarkEntry] = Field(default_factory=list)


class GetRunEvents(Contract):
    subject: ClassVar[str] = subjects.GET_RUN_EVENTS

    run_id: str
    after_seq: int | None = None
    types: list[str] | None = None
    limit: int = 500
    # Only entries about the task at this dataset index (their ``index`` field, as the
    # agent events have): a task page reads its own steps, not the whole run's.
    task_index: int | None = None


class RunEventsPage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    problem: Problem | None = None
    events: list[RunEvent] = Field(default_factory=list)
    has_more: bool = False
    # The log position this page looked through: with a filter, entries up to it that
    # were not sent did not match, so the next page starts after it. None: nothing read.
    scanned_seq: int | None = None


class RebuildProjection(BaseModel):
    """Admin: drop a projection and replay it from the stream."""

    model_config = ConfigDict(extra="ignore")

    projection: str


class RebuildResult(BaseModel):
    model_config = ConfigDict(extra="ignore")

    problem: Problem | None = None
    projection: str
    applied: int = 0
    digest: str = ""
    before_digest: str = ""
    # Messages the replay could not apply and set aside (``ListParked`` shows them).
    parked: int = 0


class ListParked(BaseModel):
    """Admin: the messages a projection could not apply and set aside."""

    model_config = ConfigDict(extra="ignore")

    projection: str


class ParkedMessage(BaseModel):
    position: int
    error: str
    message: str
    parked_at: str


class ParkedMessages(BaseModel):
    model_config = ConfigDict(extra="ignore")

    problem: Problem | None = None
    projection: str
    data: list[ParkedMessage] = Field(default_factory=list)


class GetRunCost(Contract):
    subject: ClassVar[str] = "bw.q.billing.run_cost.v1"

    run_id: str


class RunCost(BaseModel):
    """What a run has cost so far, by source, in micro-dollars."""

    model_config = ConfigDict(extra="ignore")

    run_id: str
    model_micros: int = 0
    sandbox_micros: int = 0
    driver_micros: int = 0
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # The run-summary LLM's spend (concepts §9); billed like the Driver's.
    narration_micros: int = 0
    narration_calls: int = 0
    narration_prompt_tokens: int = 0
    narration_completion_tokens: int = 0
    # Model calls the proxy finished for the run after its key was revoked (the run's
    # ledger was final): reported apart, in no total.
    proxy_linger_micros: int = 0
    proxy_linger_calls: int = 0
    proxy_linger_prompt_tokens: int = 0
    proxy_linger_completion_tokens: int = 0
    # The run's judges' calls (decision 0061): paid like the model's, by the account's
    # provider key, and part of ``incurred``.
    judge_micros: int = 0
    judge_calls: int = 0
    judge_prompt_tokens: int = 0
    judge_completion_tokens: int = 0
    # What the run takes from the balance: the platform's part with the markup
    # (None from a billing that predates it).
    billed_micros: int | None = None


class PriceModelCalls(Contract):
    """What calls of the given sizes (``{"prompt_tokens", "completion_tokens"}``) would
    cost on a model, priced exactly as the proxy bills a call: an estimate's figures."""

    subject: ClassVar[str] = subjects.PRICE_MODEL_CALLS

    sut: SutRef
    usages: list[dict[str, int]] = Field(default_factory=list, max_length=100)


class ModelCallPrices(BaseModel):
    model_config = ConfigDict(extra="ignore")

    problem: Problem | None = None
    # One price per usage asked, in micro-dollars.
    micros: list[int] = Field(default_factory=list)
    # ``operator`` (the deployment's BW_MODEL_PRICES), ``provider`` (its own table) or
    # ``unpriced`` (no price known: every figure is 0).
    source: str = "unpriced"


class CheckProviderKeys(Contract):
    """Which of ``suts`` the account could not call: no key for its provider, neither
    the deployment's nor one of the account's secrets for the provider's host."""

    subject: ClassVar[str] = subjects.CHECK_PROVIDER_KEYS

    account: str
    suts: list[SutRef] = Field(default_factory=list, max_length=20)


class ProviderKeys(BaseModel):
    model_config = ConfigDict(extra="ignore")

    problem: Problem | None = None
    # The positions in ``suts`` no key reaches, each with why.
    missing: dict[int, str] = Field(default_factory=dict)
