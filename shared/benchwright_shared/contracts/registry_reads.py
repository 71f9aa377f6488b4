"""Registry reads over runs: leaderboards, run listings, same-impl comparisons, task
ranges, impls frozen from a run, and the phase-cache index.

The registry keys every finished run on (benchmark_id, subset_id, impl_id) with
the model as its own column (concepts §6, §7). A listing shows the caller's own
runs and other accounts' public ones; a leaderboard shows public runs only.
``account`` is always the caller's; a subset, impl or benchmark the caller may
not see answers 404 exactly like one that does not exist.
"""

from datetime import datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from benchwright_shared import subjects
from benchwright_shared.contracts.base import Contract, Problem
from benchwright_shared.contracts.registry import Visibility


# -- questions ----------------------------------------------------------------------------
class ReadLeaderboard(Contract):
    """The best pass rate per model across public runs of a subset, under any impl."""

    subject: ClassVar[str] = subjects.READ_LEADERBOARD

    account: str
    subset_id: str


class ListRegistryRuns(Contract):
    """Finished runs against a subset (``subset_id``) or scored by an impl (``impl_id``)."""

    subject: ClassVar[str] = subjects.LIST_REGISTRY_RUNS

    account: str
    subset_id: str | None = None
    impl_id: str | None = None
    model: str | None = None
    limit: int = 50
    page_token: str | None = None


class CompareImpl(Contract):
    """Runs scored by one impl side by side, by (subset, trials, model)."""

    subject: ClassVar[str] = subjects.COMPARE_IMPL

    account: str
    impl_id: str
    subset_id: str | None = None


class ReadTaskRange(Contract):
    """Runs of a benchmark with results for task indices ``start`` to ``end - 1``."""

    subject: ClassVar[str] = subjects.READ_TASK_RANGE

    account: str
    benchmark_id: str
    start: int
    end: int
    subset_id: str | None = None
    limit: int = 50
    page_token: str | None = None


class CreateImplFromRun(Contract):
    """Register the scorer a run of the caller's used as an impl of ``benchmark_id`` (or of
    ``subset_id``'s benchmark): content-addressed like ``CreateImpl``."""

    subject: ClassVar[str] = subjects.CREATE_IMPL_FROM_RUN

    account: str
    admin: bool = False
    run_id: str
    benchmark_id: str | None = None
    subset_id: str | None = None
    label: str = ""
    description: str = ""


class FindPhaseCell(Contract):
    """The phase-cache index: which run recorded ``phase``'s work for ``fingerprint``.

    A run of ``account`` first (most recent), else a public run of any account.
    """

    subject: ClassVar[str] = subjects.FIND_PHASE_CELL

    account: str
    phase: str
    fingerprint: str
    # A run never reuses its own cells.
    exclude_run_id: str | None = None


# -- answers ------------------------------------------------------------------------------
class _View(BaseModel):
    model_config = ConfigDict(extra="ignore")


class KindTally(_View):
    """One task kind's share of a run (composite subsets, whose rows carry ``input.kind``).

    ``pass_rate`` is over passed + failed, as in the run's summary: errors stay out.
    """

    passed: int = 0
    failed: int = 0
    errored: int = 0
    total: int = 0
    pass_rate: float | None = None


class RegistryRun(_View):
    """A finished run as the registry keys it: (benchmark, subset, impl) and the model."""

    run_id: str
    model: str
    benchmark_id: str | None = None
    # The snapshot the run pinned.
    subset_id: str | None = None
    impl_id: str | None = None
    status: str
    mode: str | None = None
    visibility: Visibility = "private"
    # Whether the run is the caller's own.
    mine: bool = False
    pass_rate: float | None = None
    tasks: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    trials: dict[str, Any] | None = None
    fingerprint: str | None = None
    derived_from: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    # Per task kind, when the subset's rows carry ``input.kind``; None otherwise.
    by_kind: dict[str, KindTally] | None = None


class RegistryRunList(_View):
    problem: Problem | None = None
    runs: list[RegistryRun] = Field(default_factory=list)
    next_page_token: str | None = None


class LeaderboardRow(_View):
    """One model's best public run."""

    rank: int
    model: str
    pass_rate: float
    # The pass rate's 95% Wilson interval: two models whose intervals overlap are
    # not told apart by these runs, whatever their ranks.
    pass_rate_low: float | None = None
    pass_rate_high: float | None = None
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
    # The best run per task kind, when the subset's rows carry ``input.kind``.
    by_kind: dict[str, KindTally] | None = None


class Leaderboard(_View):
    problem: Problem | None = None
    subset_id: str = ""
    benchmark_id: str | None = None
    # The snapshots the leaderboard covers (a rolling subset has several).
    snapshot_ids: list[str] = Field(default_factory=list)
    rows: list[LeaderboardRow] = Field(default_factory=list)


class ComparisonRow(_View):
    """One model's runs under the same (benchmark, subset, impl, trials): comparable."""

    model: str
    subset_id: str | None = None
    trials: dict[str, Any] | None = None
    runs: int
    best_pass_rate: float | None = None
    mean_pass_rate: float | None = None
    best_run_id: str
    latest_run_id: str
    tasks: int = 0
    run_ids: list[str] = Field(default_factory=list)
    latest_finished_at: datetime | None = None


class Comparison(_View):
    problem: Problem | None = None
    impl_id: str = ""
    benchmark_id: str | None = None
    rows: list[ComparisonRow] = Field(default_factory=list)


class RangeRun(RegistryRun):
    """A run's results inside a task range."""

    covered: int = 0
    # Every index of the range (inside the subset) has a result.
    complete: bool = False
    range_passed: int = 0
    range_failed: int = 0
    range_errored: int = 0
    range_pass_rate: float | None = None
    # index -> pass / fail / err, for the indices the run has.
    outcomes: dict[str, str] = Field(default_factory=dict)


class TaskRange(_View):
    problem: Problem | None = None
    benchmark_id: str = ""
    start: int = 0
    end: int = 0
    runs: list[RangeRun] = Field(default_factory=list)
    next_page_token: str | None = None


class PhaseCell(_View):
    problem: Problem | None = None
    run_id: str | None = None
    # The cell is another account's public run's.
    public: bool = False
