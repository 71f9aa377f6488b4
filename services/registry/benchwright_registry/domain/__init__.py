"""The registry's domain: the built-in catalog and user authoring. No I/O here.

``catalog`` holds the benchmarks that ship with the registry and how a launch's
names resolve to them; ``authoring`` holds the aggregates users write
(benchmarks, subsets, impls) and the rules they obey.
"""

from benchwright_registry.domain.authoring import (
    MAX_ROWS_PER_REQUEST,
    AuthoredBenchmark,
    AuthoredImpl,
    AuthoredSubset,
    SubsetSnapshot,
)
from benchwright_registry.domain.catalog import (
    Benchmark,
    Catalog,
    Impl,
    Subset,
    make_benchmark,
    make_subset,
    row_categories,
    rows_to_jsonl,
)

__all__ = [
    "MAX_ROWS_PER_REQUEST",
    "AuthoredBenchmark",
    "AuthoredImpl",
    "AuthoredSubset",
    "Benchmark",
    "Catalog",
    "Impl",
    "Subset",
    "SubsetSnapshot",
    "make_benchmark",
    "make_subset",
    "row_categories",
    "rows_to_jsonl",
]
