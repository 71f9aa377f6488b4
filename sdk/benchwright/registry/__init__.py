"""The registry: benchmarks, their subsets of task rows, and the impls that score them.

Reach it as ``bw.registry`` (``bw.registry.benchmarks``, ``.subsets``, ``.impls``), or
through the authoring shortcuts the guide uses, ``bw.benchmarks`` (with
``bw.benchmarks.subsets``) and ``bw.impls``: they are the same objects.

>>> bm = bw.benchmarks.create(name="Arithmetic", category="math", tags=["tiny"])
>>> sub = bw.benchmarks.subsets.create(benchmark=bm.id, slug="v1", tasks=rows)
>>> impl = bw.impls.create(subset=sub.id, label="exact match", code=task_impl_py)
>>> run = bw.runs.launch(benchmark=bm.id, subset=sub.id, impl=impl.id, sut=...)

Ids say what they name: a subset id is a content address of its tasks (the same
rows under the same slug are the same subset), each append to a rolling subset
makes a new ``snapshot_id`` that a run can pin, and an impl id is
``<benchmark_id>:<12 hex of sha256(code)>`` (the same code is the same impl).
Another account's private benchmark answers :class:`~benchwright.NotFoundError`,
exactly like one that does not exist.

The resources live beside their async twins: ``_benchmarks``, ``_subsets`` and
``_impls``; ``_registry`` gathers them; ``_models`` holds the response models.
"""

from __future__ import annotations

from ._benchmarks import AsyncBenchmarks, Benchmarks
from ._bodies import FIND_SCAN as FIND_SCAN
from ._bodies import JSON_ONLY as JSON_ONLY
from ._impls import AsyncImpls, Impls
from ._models import (
    Benchmark,
    BenchmarkList,
    ComparisonRow,
    Deleted,
    Impl,
    ImplComparison,
    KindTally,
    Leaderboard,
    LeaderboardRow,
    RangeRun,
    RegistryRun,
    RegistryRunList,
    Snapshot,
    Subset,
    SubsetAppend,
    SubsetTasks,
    TaskRange,
)
from ._registry import AsyncRegistry, Registry
from ._subsets import AsyncSubsets, Subsets

__all__ = [
    "AsyncBenchmarks",
    "AsyncImpls",
    "AsyncRegistry",
    "AsyncSubsets",
    "Benchmark",
    "BenchmarkList",
    "Benchmarks",
    "ComparisonRow",
    "Deleted",
    "Impl",
    "ImplComparison",
    "Impls",
    "KindTally",
    "Leaderboard",
    "LeaderboardRow",
    "RangeRun",
    "Registry",
    "RegistryRun",
    "RegistryRunList",
    "Snapshot",
    "Subset",
    "SubsetAppend",
    "SubsetTasks",
    "Subsets",
    "TaskRange",
]
