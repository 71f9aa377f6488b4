"""``bw.registry.impls``: the impls (scorers) of a benchmark, sync and async."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from .._async_http import AsyncHTTP
from .._http import SyncHTTP
from ..resources._common import follow_pages, follow_pages_async, parse, path_id
from ._bodies import (
    JSON_ONLY,
    _from_run_body,
    _impl_body,
    _present,
    _runs_params,
)
from ._models import (
    Deleted,
    Impl,
    ImplComparison,
    RegistryRun,
    RegistryRunList,
)


class Impls:
    """Scorers; reach it as ``bw.impls`` or ``bw.registry.impls``."""

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http

    def create(
        self,
        subset: str | None = None,
        *,
        code: str,
        label: str = "",
        description: str = "",
        benchmark: str | None = None,
        language: str | None = None,
        official: bool = False,
        idempotency_key: str | None = None,
    ) -> Impl:
        """Register ``code`` (a ``task_impl.py`` with ``class Task(BenchTask)``) for a subset.

        The benchmark is the subset's; ``benchmark`` alone works too. Impls are
        immutable and content-addressed: the same code again returns the same impl,
        so this call is safe to retry. Only an admin may pass ``official=True``.
        ``language`` is always Python.
        """
        body = _impl_body(subset, benchmark, label, code, description, language, official)
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        data = self._http.request("POST", "/v1/impls", json=body, headers=headers, retry_safe=True)
        return parse(Impl, data)

    def get(self, imp_id: str) -> Impl:
        """An impl's description (label, official, sha256); not its code."""
        return parse(Impl, self._http.request("GET", f"/v1/impls/{path_id(imp_id)}"))

    def code(self, imp_id: str) -> str:
        """The impl's ``task_impl.py`` text."""
        data = self._http.request("GET", f"/v1/impls/{path_id(imp_id)}/code", headers=JSON_ONLY)
        return str(data["code"])

    def update(
        self,
        imp_id: str,
        *,
        label: str | None = None,
        description: str | None = None,
        official: bool | None = None,
    ) -> Impl:
        """Relabel an impl, or (admin only) change ``official``. The code never changes."""
        body = _present(label=label, description=description, official=official)
        data = self._http.request(
            "PATCH", f"/v1/impls/{path_id(imp_id)}", json=body, retry_safe=True
        )
        return parse(Impl, data)

    def delete(self, imp_id: str) -> Deleted:
        """Remove an impl (owner only). A public run scored by it makes this a 409."""
        return parse(Deleted, self._http.request("DELETE", f"/v1/impls/{path_id(imp_id)}"))

    def create_from_run(
        self,
        from_run: str,
        *,
        benchmark: str | None = None,
        subset: str | None = None,
        label: str = "",
        description: str = "",
    ) -> Impl:
        """Register the scorer one of your runs used (its Setup or Atomize code) as an impl
        of ``subset`` (or ``benchmark``), both yours.

        Content-addressed like :meth:`create`: the same code under the same benchmark is
        the same impl, so this is safe to retry. Another account's run raises
        :class:`~benchwright.NotFoundError`; a run that recorded no scorer yet,
        :class:`~benchwright.ConflictError` (``no_scorer``).
        """
        body = _from_run_body(from_run, benchmark, subset, label, description)
        data = self._http.request("POST", "/v1/impls/from_run", json=body, retry_safe=True)
        return parse(Impl, data)

    def runs(
        self,
        imp_id: str,
        *,
        model: str | None = None,
        limit: int = 50,
        page_token: str | None = None,
    ) -> RegistryRunList:
        """Every finished run scored by this impl that you may see, newest first, one page.
        Works for impls a pipeline wrote (never registered) too."""
        data = self._http.request(
            "GET",
            f"/v1/impls/{path_id(imp_id)}/runs",
            params=_runs_params(model, limit, page_token),
        )
        return parse(RegistryRunList, data)

    def iter_runs(self, imp_id: str, *, model: str | None = None) -> Iterator[RegistryRun]:
        """Every run :meth:`runs` would list, following the page tokens."""
        return follow_pages(
            lambda token: self.runs(imp_id, model=model, limit=100, page_token=token)
        )

    def compare(self, imp_id: str, *, subset: str | None = None) -> ImplComparison:
        """The same-impl comparison view: the runs that share this impl, side by side by
        model, one row per (subset snapshot, trials, model), so the rows of a group were
        measured the same way. ``subset`` keeps one subset's runs."""
        data = self._http.request(
            "GET", f"/v1/impls/{path_id(imp_id)}/compare", params={"subset": subset}
        )
        return parse(ImplComparison, data)


class AsyncImpls:
    """The async twin of :class:`Impls`."""

    def __init__(self, http: AsyncHTTP) -> None:
        self._http = http

    async def create(
        self,
        subset: str | None = None,
        *,
        code: str,
        label: str = "",
        description: str = "",
        benchmark: str | None = None,
        language: str | None = None,
        official: bool = False,
        idempotency_key: str | None = None,
    ) -> Impl:
        """See :meth:`Impls.create`."""
        body = _impl_body(subset, benchmark, label, code, description, language, official)
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        data = await self._http.request(
            "POST", "/v1/impls", json=body, headers=headers, retry_safe=True
        )
        return parse(Impl, data)

    async def get(self, imp_id: str) -> Impl:
        """See :meth:`Impls.get`."""
        return parse(Impl, await self._http.request("GET", f"/v1/impls/{path_id(imp_id)}"))

    async def code(self, imp_id: str) -> str:
        """See :meth:`Impls.code`."""
        data = await self._http.request(
            "GET", f"/v1/impls/{path_id(imp_id)}/code", headers=JSON_ONLY
        )
        return str(data["code"])

    async def update(
        self,
        imp_id: str,
        *,
        label: str | None = None,
        description: str | None = None,
        official: bool | None = None,
    ) -> Impl:
        """See :meth:`Impls.update`."""
        body = _present(label=label, description=description, official=official)
        data = await self._http.request(
            "PATCH", f"/v1/impls/{path_id(imp_id)}", json=body, retry_safe=True
        )
        return parse(Impl, data)

    async def delete(self, imp_id: str) -> Deleted:
        """See :meth:`Impls.delete`."""
        data = await self._http.request("DELETE", f"/v1/impls/{path_id(imp_id)}")
        return parse(Deleted, data)

    async def create_from_run(
        self,
        from_run: str,
        *,
        benchmark: str | None = None,
        subset: str | None = None,
        label: str = "",
        description: str = "",
    ) -> Impl:
        """See :meth:`Impls.create_from_run`."""
        body = _from_run_body(from_run, benchmark, subset, label, description)
        data = await self._http.request("POST", "/v1/impls/from_run", json=body, retry_safe=True)
        return parse(Impl, data)

    async def runs(
        self,
        imp_id: str,
        *,
        model: str | None = None,
        limit: int = 50,
        page_token: str | None = None,
    ) -> RegistryRunList:
        """See :meth:`Impls.runs`."""
        data = await self._http.request(
            "GET",
            f"/v1/impls/{path_id(imp_id)}/runs",
            params=_runs_params(model, limit, page_token),
        )
        return parse(RegistryRunList, data)

    async def iter_runs(
        self, imp_id: str, *, model: str | None = None
    ) -> AsyncIterator[RegistryRun]:
        """See :meth:`Impls.iter_runs`."""
        async for item in follow_pages_async(
            lambda token: self.runs(imp_id, model=model, limit=100, page_token=token)
        ):
            yield item

    async def compare(self, imp_id: str, *, subset: str | None = None) -> ImplComparison:
        """See :meth:`Impls.compare`."""
        data = await self._http.request(
            "GET", f"/v1/impls/{path_id(imp_id)}/compare", params={"subset": subset}
        )
        return parse(ImplComparison, data)
