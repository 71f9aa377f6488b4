"""The registry's response models: benchmarks, subsets, impls, runs and leaderboards."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from .._models import AttrDict, _Model


# -- response models ---------------------------------------------------------------------
class Snapshot(_Model):
    """One state of a subset's task list; a run pins the snapshot it saw."""

    id: str
    task_count: int
    content_sha256: str = ""
    created_at: datetime | None = None


class Subset(_Model):
    """A benchmark's task rows. ``snapshot_id`` is what a launch naming it pins now."""

    id: str
    object: str = "subset"
    benchmark_id: str
    slug: str
    name: str = ""
    description: str = ""
    rolling: bool = False
    task_count: int = 0
    snapshot_id: str
    content_sha256: str = ""
    snapshots: list[Snapshot] = Field(default_factory=list)
    grader: AttrDict | None = None
    grader_impl_id: str | None = None
    default_trials: AttrDict | None = None
    visibility: str = "private"
    builtin: bool = False
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def frozen(self) -> bool:
        """Whether appends are refused (``rolling=False``; freezing is one way)."""
        return not self.rolling


class Impl(_Model):
    """A scorer (``task_impl.py``), immutable; read its code with ``impls.code``."""

    id: str
    object: str = "impl"
    benchmark_id: str
    subset_id: str | None = None
    label: str = ""
    description: str = ""
    language: str = "python"
    official: bool = False
    sha256: str
    size_bytes: int = 0
    visibility: str = "private"
    builtin: bool = False
    created_at: datetime | None = None


class Benchmark(_Model):
    """A benchmark; ``get`` fills ``subsets`` and ``impls``, listings only count them."""

    id: str
    object: str = "benchmark"
    name: str
    description: str = ""
    category: str = ""
    tags: list[str] = Field(default_factory=list)
    # Other names it goes by (the built-in catalog's: "BFCL" is also "bfcl v4").
    aliases: list[str] = Field(default_factory=list)
    owner: str | None = None
    # Derived from runs: public once one of its runs is public.
    visibility: str = "private"
    builtin: bool = False
    source: str | None = None
    subset_count: int = 0
    impl_count: int = 0
    subsets: list[Subset] = Field(default_factory=list)
    impls: list[Impl] = Field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None


class BenchmarkList(_Model):
    """One page of benchmarks; pass ``next_page_token`` on for the next."""

    object: str = "list"
    data: list[Benchmark] = Field(default_factory=list)
    next_page_token: str | None = None


class SubsetAppend(_Model):
    """What an append did. The same idempotency key again answers this, unchanged."""

    object: str = "subset_append"
    subset_id: str
    snapshot_id: str
    appended: int
    task_count: int
    content_sha256: str = ""
    idempotency_key: str | None = None


class SubsetTasks(_Model):
    """A page of a subset's (or one snapshot's) task rows."""

    object: str = "list"
    subset_id: str
    snapshot_id: str
    total: int
    offset: int = 0
    data: list[AttrDict] = Field(default_factory=list)
    has_more: bool = False


class Deleted(_Model):
    """What a delete answers."""

    id: str
    object: str
    deleted: bool = True


class KindTally(_Model):
    """One task kind's share of a run, on a composite subset (rows with ``input.kind``).
    ``pass_rate`` is over passed + failed, like the run's summary."""

    passed: int = 0
    failed: int = 0
    errored: int = 0
    total: int = 0
    pass_rate: float | None = None


class RegistryRun(_Model):
    """A finished run as the registry keys it: (benchmark, subset, impl) with the model as
    its own column. ``subset_id`` is the snapshot the run pinned; ``mine`` says the run is
    your own (others' runs are listed only when public)."""

    run_id: str
    object: str = "registry_run"
    model: str
    benchmark_id: str | None = None
    subset_id: str | None = None
    impl_id: str | None = None
    status: str
    mode: str | None = None
    visibility: str = "private"
    mine: bool = False
    pass_rate: float | None = None
    tasks: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    trials: AttrDict | None = None
    fingerprint: str | None = None
    derived_from: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    # Per task kind, when the subset's rows carry ``input.kind`` (section 8); else None.
    by_kind: dict[str, KindTally] | None = None

    @property
    def id(self) -> str:
        """The run's id (``run_id``), for ``bw.runs.get(row.id)``."""
        return self.run_id


class RegistryRunList(_Model):
    """One page of finished runs, newest first; pass ``next_page_token`` on for the next."""

    object: str = "list"
    data: list[RegistryRun] = Field(default_factory=list)
    next_page_token: str | None = None


class LeaderboardRow(_Model):
    """One model's best public run on a subset. Equal pass rates share a ``rank``."""

    rank: int
    model: str
    pass_rate: float
    run_id: str
    impl_id: str | None = None
    subset_id: str | None = None
    tasks: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    # How many public runs of this model the best was chosen from.
    runs: int = 1
    finished_at: datetime | None = None
    # The run's per-kind breakdown, when the subset's rows carry ``input.kind``.
    by_kind: dict[str, KindTally] | None = None


class Leaderboard(_Model):
    """A subset's leaderboard: the best pass rate per model across its public runs, under
    any of its impls (each row names the impl and snapshot its run used)."""

    object: str = "leaderboard"
    subset_id: str
    benchmark_id: str | None = None
    snapshot_ids: list[str] = Field(default_factory=list)
    data: list[LeaderboardRow] = Field(default_factory=list)


class ComparisonRow(_Model):
    """One model's runs under one impl, subset snapshot and trials config: comparable."""

    model: str
    subset_id: str | None = None
    trials: AttrDict | None = None
    runs: int
    best_pass_rate: float | None = None
    mean_pass_rate: float | None = None
    best_run_id: str
    latest_run_id: str
    tasks: int = 0
    run_ids: list[str] = Field(default_factory=list)
    latest_finished_at: datetime | None = None


class ImplComparison(_Model):
    """The runs that share an impl, side by side by model (``impls.compare``)."""

    object: str = "impl_comparison"
    impl_id: str
    benchmark_id: str | None = None
    data: list[ComparisonRow] = Field(default_factory=list)


class RangeRun(RegistryRun):
    """A run's results inside a task range: how many indices it covers, whether it has all
    of them (``complete``), its counts there, and ``outcomes`` by index
    (``"pass"``, ``"fail"``, ``"err"``)."""

    covered: int = 0
    complete: bool = False
    range_passed: int = 0
    range_failed: int = 0
    range_errored: int = 0
    range_pass_rate: float | None = None
    outcomes: dict[str, str] = Field(default_factory=dict)


class TaskRange(_Model):
    """The runs of a benchmark with results for task indices ``start`` .. ``end - 1``."""

    object: str = "task_range"
    benchmark_id: str
    start: int
    end: int
    data: list[RangeRun] = Field(default_factory=list)
    next_page_token: str | None = None
