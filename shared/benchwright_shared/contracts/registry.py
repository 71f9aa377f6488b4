"""Registry authoring: benchmarks, subsets and impls, asked of the registry service.

These travel as NATS request/reply, like the vault's: an author waits for the
answer (the new id, a 409, a 400 naming the field), and the registry's own
event store is the durable record. Every write is safe to repeat: benchmarks
take an idempotency key, subsets and impls are content-addressed, appends
carry an idempotency key. Task rows do not ride in the message (a thousand
rows can exceed a NATS message): the sender puts them in the datasets bucket
as JSON lines and names the object (``TasksUpload``).

``account`` is always the caller's; anything of another account that is not
public answers 404 exactly like something that does not exist.
"""

from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from benchwright_shared import subjects
from benchwright_shared.contracts.base import Contract, Problem

BenchmarkSort = Literal["created_at", "-created_at", "name", "-name"]
Visibility = Literal["private", "unlisted", "public"]


class TasksUpload(BaseModel):
    """Task rows as JSON lines in an object of the datasets bucket."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    bucket: str = subjects.DATASETS_BUCKET
    object_name: str
    # SHA-256 of the object's bytes, checked before the rows are used.
    sha256: str
    count: int


# -- benchmarks ---------------------------------------------------------------------------
class CreateBenchmark(Contract):
    """A new benchmark owned by ``account``; the same key again returns the same one."""

    subject: ClassVar[str] = subjects.CREATE_BENCHMARK

    account: str
    name: str
    description: str = ""
    category: str = ""
    tags: list[str] = Field(default_factory=list)
    idempotency_key: str | None = None


class UpdateBenchmark(Contract):
    """Change a benchmark's description fields (owner only); unset fields stay."""

    subject: ClassVar[str] = subjects.UPDATE_BENCHMARK

    account: str
    benchmark_id: str
    name: str | None = None
    description: str | None = None
    category: str | None = None
    tags: list[str] | None = None


class ReadBenchmark(Contract):
    subject: ClassVar[str] = subjects.READ_BENCHMARK

    account: str
    benchmark_id: str


class ListBenchmarks(Contract):
    """The caller's own benchmarks and the public ones (the built-in catalog among them)."""

    subject: ClassVar[str] = subjects.LIST_BENCHMARKS

    account: str
    tag: str | None = None
    sort: BenchmarkSort = "-created_at"
    limit: int = 50
    page_token: str | None = None


class DeleteBenchmark(Contract):
    subject: ClassVar[str] = subjects.DELETE_BENCHMARK

    account: str
    benchmark_id: str


# -- subsets ------------------------------------------------------------------------------
class CreateSubset(Contract):
    """A subset of ``benchmark_id``; its id is a content address of its tasks."""

    subject: ClassVar[str] = subjects.CREATE_SUBSET

    account: str
    benchmark_id: str
    slug: str
    name: str = ""
    description: str = ""
    rolling: bool = False
    # {"code": <task_impl.py source>, "label": ...}: the scorer a pin of this subset
    # runs when it names no impl.
    grader: dict[str, Any] | None = None
    default_trials: dict[str, Any] | None = None
    tasks: TasksUpload | None = None


class UpdateSubset(Contract):
    """Rename or describe a subset; ``rolling=False`` freezes it (one way)."""

    subject: ClassVar[str] = subjects.UPDATE_SUBSET

    account: str
    subset_id: str
    name: str | None = None
    description: str | None = None
    rolling: bool | None = None


class AppendTasks(Contract):
    """Grow a rolling subset; the same idempotency key again is a no-op."""

    subject: ClassVar[str] = subjects.APPEND_TASKS

    account: str
    subset_id: str
    tasks: TasksUpload
    idempotency_key: str | None = None


class ReadSubset(Contract):
    """A subset by its id or one of its snapshot ids, with a page of rows if asked."""

    subject: ClassVar[str] = subjects.READ_SUBSET

    account: str
    subset_id: str
    rows_offset: int = 0
    rows_limit: int = 0


class DeleteSubset(Contract):
    subject: ClassVar[str] = subjects.DELETE_SUBSET

    account: str
    subset_id: str


# -- impls --------------------------------------------------------------------------------
class CreateImpl(Contract):
    """Register scorer code; the id is ``<benchmark_id>:<12 hex of sha256(code)>``.

    The benchmark is the subset's when ``subset_id`` is given. Only an admin may
    set ``official``.
    """

    subject: ClassVar[str] = subjects.CREATE_IMPL

    account: str
    admin: bool = False
    benchmark_id: str | None = None
    subset_id: str | None = None
    label: str = ""
    description: str = ""
    code: str
    official: bool = False


class UpdateImpl(Contract):
    """Relabel an impl or (admin) change its ``official`` flag; the code never changes."""

    subject: ClassVar[str] = subjects.UPDATE_IMPL

    account: str
    admin: bool = False
    impl_id: str
    label: str | None = None
    description: str | None = None
    official: bool | None = None


class ReadImpl(Contract):
    subject: ClassVar[str] = subjects.READ_IMPL

    account: str
    impl_id: str
    with_code: bool = False


class DeleteImpl(Contract):
    subject: ClassVar[str] = subjects.DELETE_IMPL

    account: str
    impl_id: str


# -- answers ------------------------------------------------------------------------------
class SnapshotView(BaseModel):
    """One state of a subset's task list; runs pin a snapshot id."""

    model_config = ConfigDict(extra="ignore")

    id: str
    task_count: int
    content_sha256: str = ""
    created_at: datetime | None = None


class SubsetView(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str
    benchmark_id: str
    slug: str
    name: str = ""
    description: str = ""
    rolling: bool = False
    task_count: int = 0
    # The latest snapshot: what a launch naming this subset pins.
    snapshot_id: str
    content_sha256: str = ""
    snapshots: list[SnapshotView] = Field(default_factory=list)
    grader: dict[str, Any] | None = None
    grader_impl_id: str | None = None
    default_trials: dict[str, Any] | None = None
    visibility: Visibility = "private"
    builtin: bool = False
    created_at: datetime | None = None
    updated_at: datetime | None = None


class ImplView(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str
    benchmark_id: str
    subset_id: str | None = None
    label: str = ""
    description: str = ""
    language: str = "python"
    official: bool = False
    sha256: str
    size_bytes: int = 0
    visibility: Visibility = "private"
    builtin: bool = False
    created_at: datetime | None = None


class BenchmarkView(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str
    name: str
    description: str = ""
    category: str = ""
    tags: list[str] = Field(default_factory=list)
    # Other names a launch or a search may use (the built-in catalog's, e.g. "bfcl v4").
    aliases: list[str] = Field(default_factory=list)
    # The owning account; None for the built-in catalog.
    owner: str | None = None
    # Derived from runs: public once one of its runs is public.
    visibility: Visibility = "private"
    builtin: bool = False
    source: str | None = None
    subset_count: int = 0
    impl_count: int = 0
    # Filled on a single read, left empty in listings.
    subsets: list[SubsetView] = Field(default_factory=list)
    impls: list[ImplView] = Field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None


class AppendView(BaseModel):
    """What an append did; a repeat of its idempotency key answers the same."""

    model_config = ConfigDict(extra="ignore")

    subset_id: str
    snapshot_id: str
    appended: int
    task_count: int
    content_sha256: str = ""
    idempotency_key: str | None = None


class RegistryAnswer(BaseModel):
    """The registry's answer to any authoring request: a problem, or what was asked for.

    ``problem.extra["code"]`` carries a machine-readable reason
    (``subset_frozen``, ``referenced_by_public_runs``, ...).
    """

    model_config = ConfigDict(extra="ignore")

    problem: Problem | None = None
    # False when a repeat found what an earlier request made.
    created: bool = False
    benchmark: BenchmarkView | None = None
    benchmarks: list[BenchmarkView] = Field(default_factory=list)
    next_page_token: str | None = None
    subset: SubsetView | None = None
    rows: list[dict[str, Any]] = Field(default_factory=list)
    impl: ImplView | None = None
    code: str | None = None
    append: AppendView | None = None
