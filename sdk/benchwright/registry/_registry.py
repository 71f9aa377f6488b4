"""``bw.registry``: benchmarks, subsets, impls and builds in one place, sync and async."""

from __future__ import annotations

from .._async_http import AsyncHTTP
from .._http import SyncHTTP
from ..build import AsyncBuild, Build
from ._benchmarks import AsyncBenchmarks, Benchmarks
from ._impls import AsyncImpls, Impls
from ._subsets import AsyncSubsets, Subsets


class Registry:
    """``bw.registry``: benchmarks, subsets and impls in one place."""

    benchmarks: Benchmarks
    subsets: Subsets
    impls: Impls
    build: Build

    def __init__(self, http: SyncHTTP) -> None:
        self.subsets = Subsets(http)
        self.benchmarks = Benchmarks(http, self.subsets)
        self.impls = Impls(http)
        # BUILT subsets: recipes and sample edits (``benchwright.build``).
        self.build = Build(http)


class AsyncRegistry:
    """``AsyncBenchwright().registry``: the async twin of :class:`Registry`."""

    benchmarks: AsyncBenchmarks
    subsets: AsyncSubsets
    impls: AsyncImpls
    build: AsyncBuild

    def __init__(self, http: AsyncHTTP) -> None:
        self.subsets = AsyncSubsets(http)
        self.benchmarks = AsyncBenchmarks(http, self.subsets)
        self.impls = AsyncImpls(http)
        self.build = AsyncBuild(http)
