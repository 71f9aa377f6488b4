"""``bw.registry.subsets``: subsets of task rows, sync and async."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from .._async_http import AsyncHTTP
from .._http import SyncHTTP
from .._models import AttrDict
from ..harbor import dataset_files
from ..resources._common import (
    follow_pages,
    follow_pages_async,
    new_idempotency_key,
    parse,
    path_id,
)
from ._bodies import (
    _present,
    _rows,
    _runs_params,
    _subset_body,
)
from ._models import (
    Deleted,
    Leaderboard,
    RegistryRun,
    RegistryRunList,
    Subset,
    SubsetAppend,
    SubsetTasks,
)


def _harbor_body(
    slug: str, dataset: str | Path | Mapping[str, str], name: str, description: str
) -> dict[str, Any]:
    files = dict(dataset) if isinstance(dataset, Mapping) else dataset_files(dataset)
    return {"slug": slug, "name": name, "description": description, "files": files}


class Subsets:
    """Subsets of task rows; reach it as ``bw.benchmarks.subsets`` or ``bw.registry.subsets``."""

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http

    def create(
        self,
        benchmark: str,
        slug: str,
        *,
        name: str = "",
        description: str = "",
        tasks: Iterable[Mapping[str, Any]] = (),
        rolling: bool = False,
        grader: Mapping[str, Any] | None = None,
        default_trials: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Subset:
        """Create a subset of ``benchmark`` from rows ``{"task_id", "input", "expected"}``.

        At most 1,000 rows per request; a ``rolling=True`` subset takes more with
        :meth:`append_tasks`. Without ``rolling`` the subset is frozen at creation.
        ``grader`` (``{"code": <task_impl.py>, "label": ...}``) is the scorer a pinned
        launch of this subset runs when it names no impl; ``default_trials`` is used
        when a launch names no ``trials``. The id is a content address: creating the
        same rows under the same slug again returns the same subset, so this call is
        safe to retry (``idempotency_key`` is accepted and sent, but not needed).
        """
        body = _subset_body(slug, name, description, tasks, rolling, grader, default_trials)
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        data = self._http.request(
            "POST",
            f"/v1/benchmarks/{path_id(benchmark)}/subsets",
            json=body,
            headers=headers,
            retry_safe=True,
        )
        return parse(Subset, data)

    def create_harbor(
        self,
        benchmark: str,
        slug: str,
        dataset: str | Path | Mapping[str, str],
        *,
        name: str = "",
        description: str = "",
    ) -> Subset:
        """Store a Harbor dataset as an agentic subset of ``benchmark``: ``dataset`` is
        a local folder of task folders, or its files ``{relative path: text}``.

        The server checks the files as it checks a launch's (a refusal names
        ``files["<path>"]``) and stores one row a task, frozen. The id is the content
        address of the tasks: the same files under the same slug are the same subset,
        so this call is safe to retry. Launch it with ``harness="harbor"``,
        ``benchmark`` and ``subset`` (``metadata={"harbor_harness": {"agent": ...}}``).
        """
        data = self._http.request(
            "POST",
            f"/v1/benchmarks/{path_id(benchmark)}/subsets/harbor",
            json=_harbor_body(slug, dataset, name, description),
            retry_safe=True,
        )
        return parse(Subset, data)

    def get(self, sub_id: str) -> Subset:
        """A subset by its id or by one of its snapshot ids."""
        return parse(Subset, self._http.request("GET", f"/v1/subsets/{path_id(sub_id)}"))

    def tasks(self, sub_id: str, *, offset: int = 0, limit: int = 100) -> SubsetTasks:
        """A page (at most 200) of the rows of a subset, or of the snapshot ``sub_id`` names."""
        data = self._http.request(
            "GET",
            f"/v1/subsets/{path_id(sub_id)}/tasks",
            params={"offset": offset, "limit": limit},
        )
        return parse(SubsetTasks, data)

    def iter_tasks(self, sub_id: str, *, page_size: int = 200) -> Iterator[AttrDict]:
        """Every row of a subset (or snapshot), fetched a page at a time."""
        offset = 0
        while True:
            page = self.tasks(sub_id, offset=offset, limit=page_size)
            yield from page.data
            offset += len(page.data)
            if not page.has_more or not page.data:
                return

    def append_tasks(
        self,
        sub_id: str,
        tasks: Iterable[Mapping[str, Any]],
        *,
        idempotency_key: str | None = None,
    ) -> SubsetAppend:
        """Append rows (at most 1,000) to a rolling subset, making a new snapshot.

        A repeated ``idempotency_key`` adds nothing and answers the first append's
        result; without one, a key is generated so the SDK's own retries are safe.
        A frozen subset raises :class:`~benchwright.ConflictError` (``subset_frozen``).
        """
        data = self._http.request(
            "POST",
            f"/v1/subsets/{path_id(sub_id)}/tasks",
            json={"tasks": _rows(tasks)},
            headers={"Idempotency-Key": idempotency_key or new_idempotency_key()},
        )
        return parse(SubsetAppend, data)

    append = append_tasks

    def update(
        self,
        sub_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        rolling: bool | None = None,
    ) -> Subset:
        """Rename or describe a subset; ``rolling=False`` freezes it, for good."""
        body = _present(name=name, description=description, rolling=rolling)
        data = self._http.request(
            "PATCH", f"/v1/subsets/{path_id(sub_id)}", json=body, retry_safe=True
        )
        return parse(Subset, data)

    def freeze(self, sub_id: str) -> Subset:
        """Stop a rolling subset from taking appends (one way): ``update(rolling=False)``."""
        return self.update(sub_id, rolling=False)

    def delete(self, sub_id: str) -> Deleted:
        """Remove a subset (owner only). A public run that pinned it makes this a 409."""
        return parse(Deleted, self._http.request("DELETE", f"/v1/subsets/{path_id(sub_id)}"))

    def leaderboard(self, sub_id: str) -> Leaderboard:
        """The best pass rate per model across the subset's public runs, under any of its
        impls. Only public runs place, so a subset of a private benchmark has no rows.
        A subset's own id covers every snapshot it has had; a snapshot id, that one."""
        data = self._http.request("GET", f"/v1/subsets/{path_id(sub_id)}/leaderboard")
        return parse(Leaderboard, data)

    def runs(
        self,
        sub_id: str,
        *,
        model: str | None = None,
        limit: int = 50,
        page_token: str | None = None,
    ) -> RegistryRunList:
        """Every finished run against the subset that you may see (your own, whatever
        their visibility, and other accounts' public ones), newest first, one page.
        ``model`` (``"<provider>/<model>"``) keeps one model's."""
        data = self._http.request(
            "GET",
            f"/v1/subsets/{path_id(sub_id)}/runs",
            params=_runs_params(model, limit, page_token),
        )
        return parse(RegistryRunList, data)

    def iter_runs(self, sub_id: str, *, model: str | None = None) -> Iterator[RegistryRun]:
        """Every run :meth:`runs` would list, following the page tokens."""
        return follow_pages(
            lambda token: self.runs(sub_id, model=model, limit=100, page_token=token)
        )


class AsyncSubsets:
    """The async twin of :class:`Subsets`."""

    def __init__(self, http: AsyncHTTP) -> None:
        self._http = http

    async def create(
        self,
        benchmark: str,
        slug: str,
        *,
        name: str = "",
        description: str = "",
        tasks: Iterable[Mapping[str, Any]] = (),
        rolling: bool = False,
        grader: Mapping[str, Any] | None = None,
        default_trials: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Subset:
        """See :meth:`Subsets.create`."""
        body = _subset_body(slug, name, description, tasks, rolling, grader, default_trials)
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        data = await self._http.request(
            "POST",
            f"/v1/benchmarks/{path_id(benchmark)}/subsets",
            json=body,
            headers=headers,
            retry_safe=True,
        )
        return parse(Subset, data)

    async def create_harbor(
        self,
        benchmark: str,
        slug: str,
        dataset: str | Path | Mapping[str, str],
        *,
        name: str = "",
        description: str = "",
    ) -> Subset:
        """See :meth:`Subsets.create_harbor`."""
        data = await self._http.request(
            "POST",
            f"/v1/benchmarks/{path_id(benchmark)}/subsets/harbor",
            json=_harbor_body(slug, dataset, name, description),
            retry_safe=True,
        )
        return parse(Subset, data)

    async def get(self, sub_id: str) -> Subset:
        """See :meth:`Subsets.get`."""
        return parse(Subset, await self._http.request("GET", f"/v1/subsets/{path_id(sub_id)}"))

    async def tasks(self, sub_id: str, *, offset: int = 0, limit: int = 100) -> SubsetTasks:
        """See :meth:`Subsets.tasks`."""
        data = await self._http.request(
            "GET",
            f"/v1/subsets/{path_id(sub_id)}/tasks",
            params={"offset": offset, "limit": limit},
        )
        return parse(SubsetTasks, data)

    async def iter_tasks(self, sub_id: str, *, page_size: int = 200) -> AsyncIterator[AttrDict]:
        """See :meth:`Subsets.iter_tasks`."""
        offset = 0
        while True:
            page = await self.tasks(sub_id, offset=offset, limit=page_size)
            for row in page.data:
                yield row
            offset += len(page.data)
            if not page.has_more or not page.data:
                return

    async def append_tasks(
        self,
        sub_id: str,
        tasks: Iterable[Mapping[str, Any]],
        *,
        idempotency_key: str | None = None,
    ) -> SubsetAppend:
        """See :meth:`Subsets.append_tasks`."""
        data = await self._http.request(
            "POST",
            f"/v1/subsets/{path_id(sub_id)}/tasks",
            json={"tasks": _rows(tasks)},
            headers={"Idempotency-Key": idempotency_key or new_idempotency_key()},
        )
        return parse(SubsetAppend, data)

    append = append_tasks

    async def update(
        self,
        sub_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        rolling: bool | None = None,
    ) -> Subset:
        """See :meth:`Subsets.update`."""
        body = _present(name=name, description=description, rolling=rolling)
        data = await self._http.request(
            "PATCH", f"/v1/subsets/{path_id(sub_id)}", json=body, retry_safe=True
        )
        return parse(Subset, data)

    async def freeze(self, sub_id: str) -> Subset:
        """See :meth:`Subsets.freeze`."""
        return await self.update(sub_id, rolling=False)

    async def delete(self, sub_id: str) -> Deleted:
        """See :meth:`Subsets.delete`."""
        data = await self._http.request("DELETE", f"/v1/subsets/{path_id(sub_id)}")
        return parse(Deleted, data)

    async def leaderboard(self, sub_id: str) -> Leaderboard:
        """See :meth:`Subsets.leaderboard`."""
        data = await self._http.request("GET", f"/v1/subsets/{path_id(sub_id)}/leaderboard")
        return parse(Leaderboard, data)

    async def runs(
        self,
        sub_id: str,
        *,
        model: str | None = None,
        limit: int = 50,
        page_token: str | None = None,
    ) -> RegistryRunList:
        """See :meth:`Subsets.runs`."""
        data = await self._http.request(
            "GET",
            f"/v1/subsets/{path_id(sub_id)}/runs",
            params=_runs_params(model, limit, page_token),
        )
        return parse(RegistryRunList, data)

    async def iter_runs(
        self, sub_id: str, *, model: str | None = None
    ) -> AsyncIterator[RegistryRun]:
        """See :meth:`Subsets.iter_runs`."""
        async for item in follow_pages_async(
            lambda token: self.runs(sub_id, model=model, limit=100, page_token=token)
        ):
            yield item
