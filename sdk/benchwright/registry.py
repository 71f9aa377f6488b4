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
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

from pydantic import Field

from ._async_http import AsyncHTTP
from ._http import SyncHTTP
from ._models import AttrDict, _Model
from .build import AsyncBuild, Build
from .resources._common import new_idempotency_key, parse, path_id

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

# How many rows ``find`` scans, as the guide documents.
FIND_SCAN = 100
JSON_ONLY = {"Accept": "application/json"}


# -- response models ---------------------------------------------------------------------
class Snapshot(_Model):
    """One state of a subset's task list; a run pins the snapshot it saw."""

    id: str
    task_count: int
    content_sha256: str = ""
    created_at: datetime | None = None


class Subset(_Model):
    """A benchmark's task rows. ``snapshot_id`` is what a launch naming it pins now."""

    id: str
    object: str = "subset"
    benchmark_id: str
    slug: str
    name: str = ""
    description: str = ""
    rolling: bool = False
    task_count: int = 0
    snapshot_id: str
    content_sha256: str = ""
    snapshots: list[Snapshot] = Field(default_factory=list)
    grader: AttrDict | None = None
    grader_impl_id: str | None = None
    default_trials: AttrDict | None = None
    visibility: str = "private"
    builtin: bool = False
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def frozen(self) -> bool:
        """Whether appends are refused (``rolling=False``; freezing is one way)."""
        return not self.rolling


class Impl(_Model):
    """A scorer (``task_impl.py``), immutable; read its code with ``impls.code``."""

    id: str
    object: str = "impl"
    benchmark_id: str
    subset_id: str | None = None
    label: str = ""
    description: str = ""
    language: str = "python"
    official: bool = False
    sha256: str
    size_bytes: int = 0
    visibility: str = "private"
    builtin: bool = False
    created_at: datetime | None = None


class Benchmark(_Model):
    """A benchmark; ``get`` fills ``subsets`` and ``impls``, listings only count them."""

    id: str
    object: str = "benchmark"
    name: str
    description: str = ""
    category: str = ""
    tags: list[str] = Field(default_factory=list)
    # Other names it goes by (the built-in catalog's: "BFCL" is also "bfcl v4").
    aliases: list[str] = Field(default_factory=list)
    owner: str | None = None
    # Derived from runs: public once one of its runs is public.
    visibility: str = "private"
    builtin: bool = False
    source: str | None = None
    subset_count: int = 0
    impl_count: int = 0
    subsets: list[Subset] = Field(default_factory=list)
    impls: list[Impl] = Field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None


class BenchmarkList(_Model):
    """One page of benchmarks; pass ``next_page_token`` on for the next."""

    object: str = "list"
    data: list[Benchmark] = Field(default_factory=list)
    next_page_token: str | None = None


class SubsetAppend(_Model):
    """What an append did. The same idempotency key again answers this, unchanged."""

    object: str = "subset_append"
    subset_id: str
    snapshot_id: str
    appended: int
    task_count: int
    content_sha256: str = ""
    idempotency_key: str | None = None


class SubsetTasks(_Model):
    """A page of a subset's (or one snapshot's) task rows."""

    object: str = "list"
    subset_id: str
    snapshot_id: str
    total: int
    offset: int = 0
    data: list[AttrDict] = Field(default_factory=list)
    has_more: bool = False


class Deleted(_Model):
    """What a delete answers."""

    id: str
    object: str
    deleted: bool = True


class KindTally(_Model):
    """One task kind's share of a run, on a composite subset (rows with ``input.kind``).
    ``pass_rate`` is over passed + failed, like the run's summary."""

    passed: int = 0
    failed: int = 0
    errored: int = 0
    total: int = 0
    pass_rate: float | None = None


class RegistryRun(_Model):
    """A finished run as the registry keys it: (benchmark, subset, impl) with the model as
    its own column. ``subset_id`` is the snapshot the run pinned; ``mine`` says the run is
    your own (others' runs are listed only when public)."""

    run_id: str
    object: str = "registry_run"
    model: str
    benchmark_id: str | None = None
    subset_id: str | None = None
    impl_id: str | None = None
    status: str
    mode: str | None = None
    visibility: str = "private"
    mine: bool = False
    pass_rate: float | None = None
    tasks: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    trials: AttrDict | None = None
    fingerprint: str | None = None
    derived_from: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    # Per task kind, when the subset's rows carry ``input.kind`` (section 8); else None.
    by_kind: dict[str, KindTally] | None = None

    @property
    def id(self) -> str:
        """The run's id (``run_id``), for ``bw.runs.get(row.id)``."""
        return self.run_id


class RegistryRunList(_Model):
    """One page of finished runs, newest first; pass ``next_page_token`` on for the next."""

    object: str = "list"
    data: list[RegistryRun] = Field(default_factory=list)
    next_page_token: str | None = None


class LeaderboardRow(_Model):
    """One model's best public run on a subset. Equal pass rates share a ``rank``."""

    rank: int
    model: str
    pass_rate: float
    run_id: str
    impl_id: str | None = None
    subset_id: str | None = None
    tasks: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    # How many public runs of this model the best was chosen from.
    runs: int = 1
    finished_at: datetime | None = None
    # The run's per-kind breakdown, when the subset's rows carry ``input.kind``.
    by_kind: dict[str, KindTally] | None = None


class Leaderboard(_Model):
    """A subset's leaderboard: the best pass rate per model across its public runs, under
    any of its impls (each row names the impl and snapshot its run used)."""

    object: str = "leaderboard"
    subset_id: str
    benchmark_id: str | None = None
    snapshot_ids: list[str] = Field(default_factory=list)
    data: list[LeaderboardRow] = Field(default_factory=list)


class ComparisonRow(_Model):
    """One model's runs under one impl, subset snapshot and trials config: comparable."""

    model: str
    subset_id: str | None = None
    trials: AttrDict | None = None
    runs: int
    best_pass_rate: float | None = None
    mean_pass_rate: float | None = None
    best_run_id: str
    latest_run_id: str
    tasks: int = 0
    run_ids: list[str] = Field(default_factory=list)
    latest_finished_at: datetime | None = None


class ImplComparison(_Model):
    """The runs that share an impl, side by side by model (``impls.compare``)."""

    object: str = "impl_comparison"
    impl_id: str
    benchmark_id: str | None = None
    data: list[ComparisonRow] = Field(default_factory=list)


class RangeRun(RegistryRun):
    """A run's results inside a task range: how many indices it covers, whether it has all
    of them (``complete``), its counts there, and ``outcomes`` by index
    (``"pass"``, ``"fail"``, ``"err"``)."""

    covered: int = 0
    complete: bool = False
    range_passed: int = 0
    range_failed: int = 0
    range_errored: int = 0
    range_pass_rate: float | None = None
    outcomes: dict[str, str] = Field(default_factory=dict)


class TaskRange(_Model):
    """The runs of a benchmark with results for task indices ``start`` .. ``end - 1``."""

    object: str = "task_range"
    benchmark_id: str
    start: int
    end: int
    data: list[RangeRun] = Field(default_factory=list)
    next_page_token: str | None = None


# -- request bodies ------------------------------------------------------------------------
def _present(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def _rows(tasks: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(row) for row in tasks]


def _benchmark_body(
    name: str | None,
    description: str | None,
    category: str | None,
    tags: Iterable[str] | None,
) -> dict[str, Any]:
    return _present(
        name=name,
        description=description,
        category=category,
        tags=list(tags) if tags is not None else None,
    )


def _subset_body(
    slug: str,
    name: str,
    description: str,
    tasks: Iterable[Mapping[str, Any]],
    rolling: bool,
    grader: Mapping[str, Any] | None,
    default_trials: Mapping[str, Any] | None,
) -> dict[str, Any]:
    return {
        "slug": slug,
        "name": name,
        "description": description,
        "tasks": _rows(tasks),
        "rolling": rolling,
        **_present(
            grader=dict(grader) if grader is not None else None,
            default_trials=dict(default_trials) if default_trials is not None else None,
        ),
    }


def _impl_body(
    subset: str | None,
    benchmark: str | None,
    label: str,
    code: str,
    description: str,
    language: str | None,
    official: bool,
) -> dict[str, Any]:
    body = {
        "label": label,
        "code": code,
        "description": description,
        **_present(subset=subset, benchmark=benchmark, language=language),
    }
    if official:
        body["official"] = True
    return body


def _list_params(
    tag: str | None, sort: str | None, limit: int, page_token: str | None
) -> dict[str, Any]:
    return {"tag": tag, "sort": sort, "limit": limit, "page_token": page_token}


def _best_match(name: str, page: BenchmarkList) -> Benchmark | None:
    """The first exact name match, else the first exact alias match, else the first name
    or alias containing ``name``; all case-insensitive."""
    wanted = name.strip().lower()

    def names(b: Benchmark) -> list[str]:
        return [b.name.lower(), *(a.lower() for a in b.aliases)]

    exact = [b for b in page.data if b.name.lower() == wanted]
    alias = [b for b in page.data if wanted in names(b)[1:]]
    partial = [b for b in page.data if any(wanted in n for n in names(b))]
    found = exact or alias or partial
    return found[0] if found else None


def _runs_params(model: str | None, limit: int, page_token: str | None) -> dict[str, Any]:
    return {"model": model, "limit": limit, "page_token": page_token}


def _range_params(
    start: int, end: int, subset: str | None, limit: int, page_token: str | None
) -> dict[str, Any]:
    return {
        "start": start,
        "end": end,
        "subset": subset,
        "limit": limit,
        "page_token": page_token,
    }


def _from_run_body(
    from_run: str, benchmark: str | None, subset: str | None, label: str, description: str
) -> dict[str, Any]:
    return {
        "from_run": from_run,
        "label": label,
        "description": description,
        **_present(benchmark=benchmark, subset=subset),
    }


# -- the synchronous client ------------------------------------------------------------------
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
        token: str | None = None
        while True:
            page = self.runs(sub_id, model=model, limit=100, page_token=token)
            yield from page.data
            token = page.next_page_token
            if token is None:
                return


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
        token: str | None = None
        while True:
            page = self.runs(imp_id, model=model, limit=100, page_token=token)
            yield from page.data
            token = page.next_page_token
            if token is None:
                return

    def compare(self, imp_id: str, *, subset: str | None = None) -> ImplComparison:
        """The same-impl comparison view: the runs that share this impl, side by side by
        model, one row per (subset snapshot, trials, model), so the rows of a group were
        measured the same way. ``subset`` keeps one subset's runs."""
        data = self._http.request(
            "GET", f"/v1/impls/{path_id(imp_id)}/compare", params={"subset": subset}
        )
        return parse(ImplComparison, data)


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
        token: str | None = None
        while True:
            page = self.list(tag=tag, sort=sort, limit=100, page_token=token)
            yield from page.data
            token = page.next_page_token
            if token is None:
                return

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


# -- the asynchronous client ------------------------------------------------------------------
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
        token: str | None = None
        while True:
            page = await self.runs(sub_id, model=model, limit=100, page_token=token)
            for run in page.data:
                yield run
            token = page.next_page_token
            if token is None:
                return


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
        token: str | None = None
        while True:
            page = await self.runs(imp_id, model=model, limit=100, page_token=token)
            for run in page.data:
                yield run
            token = page.next_page_token
            if token is None:
                return

    async def compare(self, imp_id: str, *, subset: str | None = None) -> ImplComparison:
        """See :meth:`Impls.compare`."""
        data = await self._http.request(
            "GET", f"/v1/impls/{path_id(imp_id)}/compare", params={"subset": subset}
        )
        return parse(ImplComparison, data)


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
        token: str | None = None
        while True:
            page = await self.list(tag=tag, sort=sort, limit=100, page_token=token)
            for benchmark in page.data:
                yield benchmark
            token = page.next_page_token
            if token is None:
                return

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
