"""``bw.registry.benchmarks``: create, list, find, update and delete benchmarks; read a range."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator

from .._async_http import AsyncHTTP
from .._http import SyncHTTP
from ..resources._common import (
    follow_pages,
    follow_pages_async,
    new_idempotency_key,
    parse,
    path_id,
)
from ._bodies import (
    FIND_SCAN,
    _benchmark_body,
    _best_match,
    _list_params,
    _range_params,
)
from ._models import (
    Benchmark,
    BenchmarkList,
    Deleted,
    TaskRange,
)
from ._subsets import AsyncSubsets, Subsets


class Benchmarks:
    """Benchmarks; reach it as ``bw.benchmarks`` or ``bw.registry.benchmarks``."""

    subsets: Subsets

    def __init__(self, http: SyncHTTP, subsets: Subsets) -> None:
        self._http = http
        self.subsets = subsets

    def create(
        self,
        name: str,
        *,
        description: str = "",
        category: str = "",
        tags: Iterable[str] = (),
        idempotency_key: str | None = None,
    ) -> Benchmark:
        """Create a benchmark (``bm_<uuid>``), private to your account.

        With an ``idempotency_key`` a repeat returns the benchmark the first call
        made; without one, a key is generated so the SDK's own retries are safe.
        """
        body = _benchmark_body(name, description, category, tags)
        data = self._http.request(
            "POST",
            "/v1/benchmarks",
            json=body,
            headers={"Idempotency-Key": idempotency_key or new_idempotency_key()},
        )
        return parse(Benchmark, data)

    def get(self, bm_id: str, expand: Iterable[str] | None = None) -> Benchmark:
        """One benchmark with its subsets and impls (``expand`` is accepted; both are
        always included)."""
        return parse(Benchmark, self._http.request("GET", f"/v1/benchmarks/{path_id(bm_id)}"))

    def list(
        self,
        tag: str | None = None,
        sort: str | None = None,
        limit: int = 50,
        page_token: str | None = None,
    ) -> BenchmarkList:
        """One page of your benchmarks, the built-in catalog and public ones.

        ``sort``: ``-created_at`` (default), ``created_at``, ``name``, ``-name``.
        """
        data = self._http.request(
            "GET", "/v1/benchmarks", params=_list_params(tag, sort, limit, page_token)
        )
        return parse(BenchmarkList, data)

    def iter(self, tag: str | None = None, sort: str | None = None) -> Iterator[Benchmark]:
        """Every benchmark :meth:`list` would show, following the page tokens."""
        return follow_pages(
            lambda token: self.list(tag=tag, sort=sort, limit=100, page_token=token)
        )

    def find(self, name: str) -> Benchmark | None:
        """A client-side convenience: scans the first 100 rows of :meth:`list` for an
        exact (case-insensitive) name, then an alias (``"BFCL v4"`` finds ``BFCL``), then
        a name or alias containing it. Page through ``list`` past that."""
        return _best_match(name, self.list(limit=FIND_SCAN))

    def update(
        self,
        bm_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        category: str | None = None,
        tags: Iterable[str] | None = None,
    ) -> Benchmark:
        """Change a benchmark's description fields (owner only). Visibility is not set
        here: it follows the benchmark's runs."""
        body = _benchmark_body(name, description, category, tags)
        data = self._http.request(
            "PATCH", f"/v1/benchmarks/{path_id(bm_id)}", json=body, retry_safe=True
        )
        return parse(Benchmark, data)

    def delete(self, bm_id: str) -> Deleted:
        """Remove a benchmark (owner only). A public run referencing it makes this a 409."""
        return parse(Deleted, self._http.request("DELETE", f"/v1/benchmarks/{path_id(bm_id)}"))

    def range(
        self,
        bm_id: str,
        start: int,
        end: int,
        *,
        subset: str | None = None,
        limit: int = 50,
        page_token: str | None = None,
    ) -> TaskRange:
        """The finished runs of the benchmark with results for task indices ``start`` ..
        ``end - 1`` (like Python's ``range``; at most 1,000 indices), newest first, with
        each run's outcomes there. Indices are row positions in the snapshot each run
        pinned; ``subset`` keeps one subset's runs."""
        data = self._http.request(
            "GET",
            f"/v1/benchmarks/{path_id(bm_id)}/range",
            params=_range_params(start, end, subset, limit, page_token),
        )
        return parse(TaskRange, data)


class AsyncBenchmarks:
    """The async twin of :class:`Benchmarks`."""

    subsets: AsyncSubsets

    def __init__(self, http: AsyncHTTP, subsets: AsyncSubsets) -> None:
        self._http = http
        self.subsets = subsets

    async def create(
        self,
        name: str,
        *,
        description: str = "",
        category: str = "",
        tags: Iterable[str] = (),
        idempotency_key: str | None = None,
    ) -> Benchmark:
        """See :meth:`Benchmarks.create`."""
        body = _benchmark_body(name, description, category, tags)
        data = await self._http.request(
            "POST",
            "/v1/benchmarks",
            json=body,
            headers={"Idempotency-Key": idempotency_key or new_idempotency_key()},
        )
        return parse(Benchmark, data)

    async def get(self, bm_id: str, expand: Iterable[str] | None = None) -> Benchmark:
        """See :meth:`Benchmarks.get`."""
        data = await self._http.request("GET", f"/v1/benchmarks/{path_id(bm_id)}")
        return parse(Benchmark, data)

    async def list(
        self,
        tag: str | None = None,
        sort: str | None = None,
        limit: int = 50,
        page_token: str | None = None,
    ) -> BenchmarkList:
        """See :meth:`Benchmarks.list`."""
        data = await self._http.request(
            "GET", "/v1/benchmarks", params=_list_params(tag, sort, limit, page_token)
        )
        return parse(BenchmarkList, data)

    async def iter(
        self, tag: str | None = None, sort: str | None = None
    ) -> AsyncIterator[Benchmark]:
        """See :meth:`Benchmarks.iter`."""
        async for item in follow_pages_async(
            lambda token: self.list(tag=tag, sort=sort, limit=100, page_token=token)
        ):
            yield item

    async def find(self, name: str) -> Benchmark | None:
        """See :meth:`Benchmarks.find`."""
        return _best_match(name, await self.list(limit=FIND_SCAN))

    async def update(
        self,
        bm_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        category: str | None = None,
        tags: Iterable[str] | None = None,
    ) -> Benchmark:
        """See :meth:`Benchmarks.update`."""
        body = _benchmark_body(name, description, category, tags)
        data = await self._http.request(
            "PATCH", f"/v1/benchmarks/{path_id(bm_id)}", json=body, retry_safe=True
        )
        return parse(Benchmark, data)

    async def delete(self, bm_id: str) -> Deleted:
        """See :meth:`Benchmarks.delete`."""
        data = await self._http.request("DELETE", f"/v1/benchmarks/{path_id(bm_id)}")
        return parse(Deleted, data)

    async def range(
        self,
        bm_id: str,
        start: int,
        end: int,
        *,
        subset: str | None = None,
        limit: int = 50,
        page_token: str | None = None,
    ) -> TaskRange:
        """See :meth:`Benchmarks.range`."""
        data = await self._http.request(
            "GET",
            f"/v1/benchmarks/{path_id(bm_id)}/range",
            params=_range_params(start, end, subset, limit, page_token),
        )
        return parse(TaskRange, data)
