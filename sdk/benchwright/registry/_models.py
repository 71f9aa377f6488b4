"""The registry's response models: benchmarks, subsets, impls, runs and leaderboards.

Each model subclasses the gateway's answer (``benchwright_shared.api.registry``, which
itself subclasses the registry's view where the answer is one), so each field is
declared once, where the server declares it; ``_Model`` comes after the answer among
the bases, so that its configuration wins. The SDK adds:
fields a newer server sends kept as attributes (``extra="allow"``, so an older client
keeps working), the ``object`` the gateway answers with, free-form objects as
:class:`AttrDict`, ``visibility`` as an open ``str`` (a value a newer server adds must
not fail an older client) and the SDK's models for nested views; the type ignores below
are those deliberate widenings.
``tests/sdk/test_model_parity.py`` holds every model to the answer it mirrors.
"""

from __future__ import annotations

from pydantic import Field

from benchwright_shared.api import registry as answers
from benchwright_shared.contracts import registry as views
from benchwright_shared.contracts import registry_reads as reads

from .._models import AttrDict, _Model


# -- response models ---------------------------------------------------------------------
class Snapshot(views.SnapshotView, _Model):
    """One state of a subset's task list; a run pins the snapshot it saw."""


class Subset(answers.Subset, _Model):
    """A benchmark's task rows. ``snapshot_id`` is what a launch naming it pins now."""

    object: str = "subset"  # type: ignore[assignment]
    snapshots: list[Snapshot] = Field(default_factory=list)  # type: ignore[assignment]
    grader: AttrDict | None = None
    default_trials: AttrDict | None = None
    visibility: str = "private"  # type: ignore[assignment]

    @property
    def frozen(self) -> bool:
        """Whether appends are refused (``rolling=False``; freezing is one way)."""
        return not self.rolling


class Impl(answers.Impl, _Model):
    """A scorer (``task_impl.py``), immutable; read its code with ``impls.code``."""

    object: str = "impl"  # type: ignore[assignment]
    visibility: str = "private"  # type: ignore[assignment]


class Benchmark(answers.Benchmark, _Model):
    """A benchmark; ``get`` fills ``subsets`` and ``impls``, listings only count them."""

    object: str = "benchmark"  # type: ignore[assignment]
    # Derived from runs: public once one of its runs is public.
    visibility: str = "private"  # type: ignore[assignment]
    subsets: list[Subset] = Field(default_factory=list)  # type: ignore[assignment]
    impls: list[Impl] = Field(default_factory=list)  # type: ignore[assignment]


class BenchmarkList(answers.BenchmarkList, _Model):
    """One page of benchmarks; pass ``next_page_token`` on for the next."""

    object: str = "list"  # type: ignore[assignment]
    data: list[Benchmark] = Field(default_factory=list)  # type: ignore[assignment]


class SubsetAppend(answers.SubsetAppend, _Model):
    """What an append did. The same idempotency key again answers this, unchanged."""

    object: str = "subset_append"  # type: ignore[assignment]


class SubsetTasks(answers.SubsetTasks, _Model):
    """A page of a subset's (or one snapshot's) task rows."""

    object: str = "list"  # type: ignore[assignment]
    data: list[AttrDict] = Field(default_factory=list)  # type: ignore[assignment]


class Deleted(answers.Deleted, _Model):
    """What a delete answers."""


class KindTally(reads.KindTally, _Model):
    """One task kind's share of a run, on a composite subset (rows with ``input.kind``).
    ``pass_rate`` is over passed + failed, like the run's summary."""


class RegistryRun(answers.RegistryRunAnswer, _Model):
    """A finished run as the registry keys it: (benchmark, subset, impl) with the model as
    its own column. ``subset_id`` is the snapshot the run pinned; ``mine`` says the run is
    your own (others' runs are listed only when public)."""

    object: str = "registry_run"  # type: ignore[assignment]
    visibility: str = "private"  # type: ignore[assignment]
    trials: AttrDict | None = None
    # Per task kind, when the subset's rows carry ``input.kind`` (section 8); else None.
    by_kind: dict[str, KindTally] | None = None  # type: ignore[assignment]

    @property
    def id(self) -> str:
        """The run's id (``run_id``), for ``bw.runs.get(row.id)``."""
        return self.run_id


class RegistryRunList(answers.RegistryRunList, _Model):
    """One page of finished runs, newest first; pass ``next_page_token`` on for the next."""

    object: str = "list"  # type: ignore[assignment]
    data: list[RegistryRun] = Field(default_factory=list)  # type: ignore[assignment]


class LeaderboardRow(reads.LeaderboardRow, _Model):
    """One model's best public run on a subset. Equal pass rates share a ``rank``."""

    # The run's per-kind breakdown, when the subset's rows carry ``input.kind``.
    by_kind: dict[str, KindTally] | None = None  # type: ignore[assignment]


class Leaderboard(answers.Leaderboard, _Model):
    """A subset's leaderboard: the best pass rate per model across its public runs, under
    any of its impls (each row names the impl and snapshot its run used)."""

    object: str = "leaderboard"  # type: ignore[assignment]
    data: list[LeaderboardRow] = Field(default_factory=list)  # type: ignore[assignment]


class ComparisonRow(reads.ComparisonRow, _Model):
    """One model's runs under one impl, subset snapshot and trials config: comparable."""

    trials: AttrDict | None = None


class ImplComparison(answers.ImplComparison, _Model):
    """The runs that share an impl, side by side by model (``impls.compare``)."""

    object: str = "impl_comparison"  # type: ignore[assignment]
    data: list[ComparisonRow] = Field(default_factory=list)  # type: ignore[assignment]


# The SDK's ``RegistryRun`` first, so that its widened fields win over the view's, and
# ``_Model`` last, so that its configuration does (unknown fields kept).
class RangeRun(RegistryRun, answers.TaskRangeRun, _Model):
    """A run's results inside a task range: how many indices it covers, whether it has all
    of them (``complete``), its counts there, and ``outcomes`` by index
    (``"pass"``, ``"fail"``, ``"err"``)."""

    object: str = "registry_run"  # type: ignore[assignment]


class TaskRange(answers.TaskRange, _Model):
    """The runs of a benchmark with results for task indices ``start`` .. ``end - 1``."""

    object: str = "task_range"  # type: ignore[assignment]
    data: list[RangeRun] = Field(default_factory=list)  # type: ignore[assignment]
