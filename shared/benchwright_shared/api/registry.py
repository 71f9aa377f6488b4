"""Answers of the registry's routes: benchmarks, subsets, impls, the reads over runs,
and BUILT subsets.

Each answer that is one of the registry's views subclasses it and adds the
``object`` the API names it by, so each field is declared once, where the
registry declares it; lists wrap them (the views' ``rows`` or ``runs`` are the
answer's ``data``). Views nested inside an answer (a benchmark's subsets, a
leaderboard's rows) are answered as the views themselves.
"""

from typing import Any, Literal

from pydantic import BaseModel, Field

from benchwright_shared.api.base import Answer, AttrDict
from benchwright_shared.contracts.build import BuiltSubsetView
from benchwright_shared.contracts.build import RecipeEdit as RecipeEditView
from benchwright_shared.contracts.registry import AppendView, BenchmarkView, ImplView, SubsetView
from benchwright_shared.contracts.registry_reads import (
    ComparisonRow,
    LeaderboardRow,
    RangeRun,
    RegistryRun,
)

__all__ = [
    "Benchmark",
    "BenchmarkList",
    "BuiltSubset",
    "BuiltSubsetEdit",
    "Deleted",
    "Impl",
    "ImplCode",
    "ImplComparison",
    "Leaderboard",
    "RecipeEdit",
    "RegistryRunAnswer",
    "RegistryRunList",
    "Subset",
    "SubsetAppend",
    "SubsetTasks",
    "TaskRange",
    "TaskRangeRun",
]


class Deleted(BaseModel):
    """What a delete answers: the id and kind of what is gone."""

    object: str
    id: str
    deleted: bool = True


# -- authoring ----------------------------------------------------------------------------
class Benchmark(BenchmarkView):
    """A benchmark; reading one fills ``subsets`` and ``impls``, listings only count them."""

    object: Literal["benchmark"] = "benchmark"


class BenchmarkList(BaseModel):
    """One page of benchmarks; pass ``next_page_token`` on for the next."""

    object: Literal["list"] = "list"
    data: list[Benchmark] = Field(default_factory=list)
    next_page_token: str | None = None


class Subset(SubsetView):
    """A benchmark's task rows; ``snapshot_id`` is what a launch naming it pins now."""

    object: Literal["subset"] = "subset"


class SubsetTasks(BaseModel):
    """A page of a subset's (or one snapshot's) task rows."""

    object: Literal["list"] = "list"
    subset_id: str
    snapshot_id: str
    total: int
    offset: int = 0
    data: list[dict[str, Any]] = Field(default_factory=list)
    has_more: bool = False


class SubsetAppend(AppendView):
    """What an append did; the same idempotency key again answers it unchanged."""

    object: Literal["subset_append"] = "subset_append"


class Impl(ImplView):
    """A scorer (``task_impl.py``), immutable."""

    object: Literal["impl"] = "impl"


class ImplCode(BaseModel):
    """An impl's code, when only JSON is accepted."""

    object: Literal["impl_code"] = "impl_code"
    id: str
    sha256: str
    language: str
    code: str


# -- reads over runs ----------------------------------------------------------------------
class RegistryRunAnswer(RegistryRun):
    """A finished run as the registry keys it."""

    object: Literal["registry_run"] = "registry_run"


class RegistryRunList(BaseModel):
    """One page of finished runs, newest first."""

    object: Literal["list"] = "list"
    data: list[RegistryRunAnswer] = Field(default_factory=list)
    next_page_token: str | None = None


class Leaderboard(BaseModel):
    """The best pass rate per model across a subset's public runs."""

    object: Literal["leaderboard"] = "leaderboard"
    subset_id: str
    benchmark_id: str | None = None
    snapshot_ids: list[str] = Field(default_factory=list)
    data: list[LeaderboardRow] = Field(default_factory=list)


class ImplComparison(BaseModel):
    """The runs that share an impl, one row per (subset snapshot, trials, model)."""

    object: Literal["impl_comparison"] = "impl_comparison"
    impl_id: str
    benchmark_id: str | None = None
    data: list[ComparisonRow] = Field(default_factory=list)


class TaskRangeRun(RangeRun):
    """A run's results inside a task range."""

    object: Literal["registry_run"] = "registry_run"


class TaskRange(BaseModel):
    """The runs of a benchmark with results for task indices ``start`` .. ``end - 1``."""

    object: Literal["task_range"] = "task_range"
    benchmark_id: str
    start: int
    end: int
    data: list[TaskRangeRun] = Field(default_factory=list)
    next_page_token: str | None = None


# -- BUILT subsets ------------------------------------------------------------------------
# ``Answer`` first among the bases, so that its configuration wins (unknown fields kept);
# the view's fields are redeclared only to widen them for readers: free-form objects as
# ``AttrDict``, an enumeration a newer server may extend as an open ``str``, the answer
# types for nested views (the schema and the wire are the view's).
class RecipeEdit(Answer, RecipeEditView):
    """One entry of a BUILT subset's history: what changed, the note, the ids it made."""

    model_config = Answer.model_config  # the view's own ``extra="ignore"`` would win

    # One of ``EditKind``: created, recipe, samples.
    kind: str  # type: ignore[assignment]
    changes: AttrDict = Field(default_factory=AttrDict)


class BuiltSubset(Answer, BuiltSubsetView):
    """A BUILT subset: its recipe (``config``), the impl generated from it, its history."""

    model_config = Answer.model_config
    object: str = "built_subset"
    config: AttrDict
    default_trials: AttrDict
    history: list[RecipeEdit] = Field(default_factory=list)  # type: ignore[assignment]

    @property
    def id(self) -> str:
        """The subset's id (``subset_id``)."""
        return self.subset_id


class BuiltSubsetEdit(BuiltSubset):
    """A BUILT subset after an edit; ``changed`` is False when the edit changed nothing."""

    changed: bool
