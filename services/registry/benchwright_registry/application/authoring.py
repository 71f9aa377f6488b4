"""Authoring: the benchmarks, subsets and impls accounts write, in the registry's store.

Commands come in as contracts (``CreateBenchmark`` ...) with the rows already
read from their upload; answers are the shared views. Every read and write
names the caller's account: another account's benchmark answers 404 exactly as
a missing one does, unless one of its runs is public. Writes are owner-only.

After each save the catalog read model (``projections.CatalogProjection``) is
brought up to date from the notification log, in the same thread, so a listing
right after a create shows it. Calls are synchronous: the service runs them on
its store thread.
"""

import base64
import binascii
import json
import logging
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError, Notification
from eventsourcing.utils import get_topic

from benchwright_registry.domain.authoring import (
    AuthoredBenchmark,
    AuthoredImpl,
    AuthoredSubset,
    SubsetSnapshot,
    check_code,
    grader_code,
    is_benchmark_id,
    new_benchmark_id,
    not_found,
    referenced,
    request_digest,
    tasks_jsonl,
)
from benchwright_registry.domain.catalog import row_categories
from benchwright_registry.projections import (
    CatalogProjection,
    list_benchmarks,
    public_run_count,
    sort_key,
    upsert_benchmark,
)
from benchwright_shared.agentic import is_agentic_row
from benchwright_shared.contracts import (
    BenchmarkResolution,
    CatalogBenchmarkEntry,
    CatalogSubsetEntry,
)
from benchwright_shared.contracts.registry import (
    AppendTasks,
    AppendView,
    BenchmarkView,
    CreateBenchmark,
    CreateImpl,
    CreateSubset,
    ImplView,
    ListBenchmarks,
    SnapshotView,
    SubsetView,
    UpdateBenchmark,
    UpdateImpl,
    UpdateSubset,
    Visibility,
)
from benchwright_shared.ids import impl_id_for
from benchwright_shared.projection import ProjectionStore, ViewCursor
from benchwright_shared.refusal import Refused

log = logging.getLogger(__name__)
Rows = list[dict[str, Any]]
CONFLICT_RETRIES = 3
FOLLOW_BATCH = 500
CATALOG = CatalogProjection.name
# The benchmark events the catalog read model is built from.
CATALOG_TOPICS = tuple(
    get_topic(getattr(AuthoredBenchmark, name))
    for name in (
        "Created",
        "Changed",
        "SubsetAttached",
        "SubsetDetached",
        "ImplRegistered",
        "ImplOfficialSet",
        "ImplRemoved",
        "Deleted",
    )
)


def _now() -> datetime:
    return datetime.now(UTC)


def _parse_time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None


def encode_page_token(sort: str, key: str, ident: str) -> str:
    raw = json.dumps({"s": sort, "k": key, "i": ident}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(token: str, sort: str) -> tuple[str, str]:
    """The (sort key, id) a page token resumes after; it must come from the same sort."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        if data["s"] == sort:
            return str(data["k"]), str(data["i"])
    except (binascii.Error, ValueError, KeyError, TypeError):
        pass
    raise Refused(
        400,
        "invalid page token",
        "page_token does not come from a listing with this sort",
        field="page_token",
        code="invalid_argument",
    )


class AuthoringApplication(Application[uuid.UUID]):
    """Benchmarks, subsets and impls written by accounts, event-sourced."""

    name = "registry"

    def __init__(self, env: dict[str, str], views: ProjectionStore) -> None:
        super().__init__(env=env)
        self.views = views

    # -- plumbing -----------------------------------------------------------------------
    def _get[A](self, cls: type[A], aggregate_id: uuid.UUID) -> A | None:
        try:
            found: A = self.repository.get(aggregate_id)
        except AggregateNotFoundError:
            return None
        return found

    def _retrying[T](self, fn: Callable[[], T]) -> T:
        """Run a command again when another process changed the same aggregates first."""
        for attempt in range(CONFLICT_RETRIES):
            try:
                return fn()
            except IntegrityError:
                if attempt == CONFLICT_RETRIES - 1:
                    raise Refused(
                        409,
                        "concurrent change",
                        "another request changed this at the same time; try again",
                        code="conflict",
                    ) from None
        raise AssertionError("unreachable")

    def _commit(self, *aggregates: Any) -> None:
        self.save(*aggregates)
        try:
            self.follow()
        except Exception:
            # Saved is saved: the service's periodic follow brings the listing up to date.
            log.exception("registry: the catalog read model lags the store")

    def follow(self) -> int:
        """Apply stored benchmark events the catalog read model has not seen yet."""
        applied = 0
        start = self.views.max_position(CATALOG)
        while True:
            notifications = self.recorder.select_notifications(
                start=start, limit=FOLLOW_BATCH, topics=CATALOG_TOPICS, inclusive_of_start=False
            )
            if not notifications:
                return applied
            items = [(n.id, self._catalog_message(n)) for n in notifications]
            applied += self.views.apply_many(CATALOG, items)
            start = notifications[-1].id

    def _catalog_message(self, notification: Notification) -> dict[str, Any]:
        domain_event: Any = self.mapper.to_domain_event(notification)
        fields = {
            k: v
            for k, v in vars(domain_event).items()
            if k not in ("originator_id", "originator_version", "timestamp", "originator_topic")
        }
        return {
            **fields,
            "type": type(domain_event).__qualname__,
            "id": f"bm_{domain_event.originator_id}",
            "at": domain_event.timestamp.isoformat(),
        }

    def rebuild_catalog(self, builtin_rows: Sequence[dict[str, Any]]) -> int:
        """Drop the catalog read model and build it again: built-ins, then every event."""
        self.views.reset(CATALOG)
        self.seed_catalog(builtin_rows)
        return self.follow()

    def seed_catalog(self, builtin_rows: Sequence[dict[str, Any]]) -> None:
        """Put (or refresh) the built-in benchmarks in the catalog read model."""

        def write(cur: ViewCursor) -> None:
            for row in builtin_rows:
                upsert_benchmark(cur, {**row, "type": "builtin"})

        self.views.write(write)

    # -- who may see what -----------------------------------------------------------------
    def public_runs(
        self,
        *,
        benchmark_id: str | None = None,
        subset_ids: Sequence[str] = (),
        impl_id: str | None = None,
    ) -> int:
        return self.views.read(
            lambda cur: public_run_count(
                cur, benchmark_id=benchmark_id, subset_ids=subset_ids, impl_id=impl_id
            )
        )

    def _visibility(self, bm: AuthoredBenchmark) -> Visibility:
        return "public" if self.public_runs(benchmark_id=bm.benchmark_id) else "private"

    def _benchmark(self, benchmark_id: str) -> AuthoredBenchmark | None:
        if not is_benchmark_id(benchmark_id):
            return None
        bm = self._get(AuthoredBenchmark, AuthoredBenchmark.create_id(benchmark_id))
        return None if bm is None or bm.deleted else bm

    def _readable(self, account: str, benchmark_id: str, field: str) -> AuthoredBenchmark:
        """A benchmark the caller owns, or a public one."""
        bm = self._benchmark(benchmark_id)
        if bm is None or (
            bm.account != account and not self.public_runs(benchmark_id=benchmark_id)
        ):
            raise not_found("benchmark", benchmark_id, field)
        return bm

    def _owned(self, account: str, benchmark_id: str, field: str) -> AuthoredBenchmark:
        """A benchmark the caller owns; anything else reads as missing."""
        bm = self._benchmark(benchmark_id)
        if bm is None or bm.account != account:
            raise not_found("benchmark", benchmark_id, field)
        return bm

    def _subset(self, subset_or_snapshot: str) -> tuple[AuthoredSubset, dict[str, Any]] | None:
        """The subset a subset id or snapshot id names, and that snapshot (deleted or not)."""
        snap = self._get(SubsetSnapshot, SubsetSnapshot.create_id(subset_or_snapshot))
        if snap is None:
            return None
        subset = self._get(AuthoredSubset, AuthoredSubset.create_id(snap.subset_id))
        if subset is None:
            return None
        snapshot = subset.snapshot(snap.snapshot_id)
        if snapshot is None:
            return None
        return subset, snapshot

    def _live_subset(
        self, account: str, subset_id: str, *, owner: bool
    ) -> tuple[AuthoredBenchmark, AuthoredSubset, dict[str, Any]]:
        found = self._subset(subset_id)
        if found is None or found[0].deleted:
            raise not_found("subset", subset_id, "subset_id")
        subset, snapshot = found
        try:
            check = self._owned if owner else self._readable
            bm = check(account, subset.benchmark_id, "subset_id")
        except Refused:
            raise not_found("subset", subset_id, "subset_id") from None
        return bm, subset, snapshot

    def _live_impl(
        self, account: str, impl_id: str, *, owner: bool
    ) -> tuple[AuthoredBenchmark, AuthoredImpl]:
        impl = self._get(AuthoredImpl, AuthoredImpl.create_id(impl_id))
        if impl is None or impl.deleted:
            raise not_found("impl", impl_id, "impl_id")
        try:
            check = self._owned if owner else self._readable
            bm = check(account, impl.benchmark_id, "impl_id")
        except Refused:
            raise not_found("impl", impl_id, "impl_id") from None
        if impl_id not in bm.impls:
            raise not_found("impl", impl_id, "impl_id")
        return bm, impl

    # -- views ----------------------------------------------------------------------------
    def _benchmark_view(self, bm: AuthoredBenchmark, *, detail: bool) -> BenchmarkView:
        visibility = self._visibility(bm)
        subsets: list[SubsetView] = []
        impls: list[ImplView] = []
        if detail:
            for subset_id in bm.subsets.values():
                subset = self._get(AuthoredSubset, AuthoredSubset.create_id(subset_id))
                if subset is not None:
                    subsets.append(self._subset_view(subset, visibility, snapshots=False))
            for impl_id in bm.impls:
                impl = self._get(AuthoredImpl, AuthoredImpl.create_id(impl_id))
                if impl is not None:
                    impls.append(self._impl_view(bm, impl, visibility))
        return BenchmarkView(
            id=bm.benchmark_id,
            name=bm.name,
            description=bm.description,
            category=bm.category,
            tags=list(bm.tags),
            owner=bm.account,
            visibility=visibility,
            subset_count=len(bm.subsets),
            impl_count=len(bm.impls),
            subsets=subsets,
            impls=impls,
            created_at=bm.created_on,
            updated_at=bm.modified_on,
        )

    @staticmethod
    def _subset_view(
        subset: AuthoredSubset, visibility: Visibility, *, snapshots: bool = True
    ) -> SubsetView:
        latest = subset.latest
        return SubsetView(
            id=subset.subset_id,
            benchmark_id=subset.benchmark_id,
            slug=subset.slug,
            name=subset.name,
            description=subset.description,
            rolling=subset.rolling,
            task_count=int(latest["task_count"]),
            snapshot_id=str(latest["id"]),
            content_sha256=str(latest["content_sha256"]),
            snapshots=[SnapshotView.model_validate(s) for s in subset.snapshots]
            if snapshots
            else [],
            grader=subset.grader,
            grader_impl_id=subset.grader_impl_id,
            default_trials=subset.default_trials,
            visibility=visibility,
            created_at=subset.created_on,
            updated_at=subset.updated_at,
        )

    @staticmethod
    def _impl_view(bm: AuthoredBenchmark, impl: AuthoredImpl, visibility: Visibility) -> ImplView:
        return ImplView(
            id=impl.impl_id,
            benchmark_id=impl.benchmark_id,
            subset_id=impl.subset_id,
            label=impl.label,
            description=impl.description,
            official=bm.impls.get(impl.impl_id, False),
            sha256=impl.sha256,
            size_bytes=len(impl.code.encode()),
            visibility=visibility,
            created_at=impl.created_on,
        )

    # -- benchmarks -------------------------------------------------------------------------
    def create_benchmark(self, command: CreateBenchmark) -> tuple[BenchmarkView, bool]:
        """A new benchmark; with an idempotency key, a repeat answers the first one."""
        digest = request_digest(
            command.model_dump(include={"name", "description", "category", "tags"})
        )
        benchmark_id = new_benchmark_id(command.account, command.idempotency_key)
        existing = self._get(AuthoredBenchmark, AuthoredBenchmark.create_id(benchmark_id))
        if existing is not None:
            if existing.request_sha256 != digest:
                raise Refused(
                    409,
                    "idempotency key reused",
                    "this Idempotency-Key was used for a different benchmark",
                    field="Idempotency-Key",
                    code="idempotency_key_reused",
                )
            if existing.deleted:
                raise not_found("benchmark", benchmark_id, "Idempotency-Key")
            return self._benchmark_view(existing, detail=True), False
        bm = AuthoredBenchmark(
            id=AuthoredBenchmark.create_id(benchmark_id),
            account=command.account,
            name=command.name,
            description=command.description,
            category=command.category,
            tags=_unique(command.tags),
            request_sha256=digest,
        )
        self._commit(bm)
        return self._benchmark_view(bm, detail=True), True

    def update_benchmark(self, command: UpdateBenchmark) -> BenchmarkView:
        def change() -> BenchmarkView:
            bm = self._owned(command.account, command.benchmark_id, "benchmark_id")
            tags = _unique(command.tags) if command.tags is not None else None
            if bm.change(
                name=command.name,
                description=command.description,
                category=command.category,
                tags=tags,
            ):
                self._commit(bm)
            return self._benchmark_view(bm, detail=True)

        return self._retrying(change)

    def benchmark(self, account: str, benchmark_id: str) -> BenchmarkView:
        """One benchmark with its subsets and impls."""
        return self._benchmark_view(
            self._readable(account, benchmark_id, "benchmark_id"), detail=True
        )

    def list_benchmarks(self, query: ListBenchmarks) -> tuple[list[BenchmarkView], str | None]:
        """A page of the caller's, the built-in and the public benchmarks, and the next token."""
        after = decode_page_token(query.page_token, query.sort) if query.page_token else None
        limit = max(1, min(query.limit, 100))
        rows = self.views.read(
            lambda cur: list_benchmarks(
                cur,
                account=query.account,
                tag=query.tag,
                sort=query.sort,
                limit=limit + 1,
                after=after,
            )
        )
        page = rows[:limit]
        token = None
        if len(rows) > limit:
            last = page[-1]
            token = encode_page_token(query.sort, sort_key(last, query.sort), str(last["id"]))
        return [_listed(row) for row in page], token

    def delete_benchmark(self, account: str, benchmark_id: str) -> None:
        """Remove a benchmark (and so its subsets and impls) from the registry: owner only,
        and never while a public run references it."""

        def delete() -> None:
            bm = self._owned(account, benchmark_id, "benchmark_id")
            count = self.public_runs(benchmark_id=benchmark_id)
            if count:
                raise referenced("benchmark", benchmark_id, count)
            bm.delete()
            self._commit(bm)

        self._retrying(delete)

    def owned_by_name(self, account: str, name: str) -> list[str]:
        """Ids of the account's benchmarks named ``name`` (case-insensitively)."""

        def find(cur: ViewCursor) -> list[str]:
            cur.execute(
                f"SELECT id FROM {cur.table('catalog_benchmarks')} "
                "WHERE account = ? AND name_key = ? ORDER BY created_at",
                [account, name.strip().lower()],
            )
            return [str(r["id"]) for r in cur.fetchall()]

        return self.views.read(find)

    # -- subsets ----------------------------------------------------------------------------
    def create_subset(self, command: CreateSubset, rows: Rows) -> tuple[SubsetView, bool]:
        """A subset of the caller's benchmark. The same tasks under the same slug are the
        same subset: a repeat answers it unchanged."""

        def create() -> tuple[SubsetView, bool]:
            bm = self._owned(command.account, command.benchmark_id, "benchmark_id")
            subset_id, content_sha256 = AuthoredSubset.address(bm.benchmark_id, command.slug, rows)
            code = grader_code(command.grader) if command.grader is not None else None
            grader_impl_id = impl_id_for(bm.benchmark_id, code) if code is not None else None
            existing = self._get(AuthoredSubset, AuthoredSubset.create_id(subset_id))
            visibility = self._visibility(bm)
            if existing is not None and not existing.deleted:
                return self._subset_view(existing, visibility), False
            bm.claim_slug(command.slug, subset_id)
            at = _now()
            pending: list[Any] = [bm]
            fields: dict[str, Any] = {
                "name": command.name or command.slug,
                "description": command.description,
                "rolling": command.rolling,
                "grader": command.grader,
                "grader_impl_id": grader_impl_id,
                "default_trials": command.default_trials,
            }
            if existing is not None:
                existing.restore(rows, at=at, **fields)
                subset = existing
            else:
                subset = AuthoredSubset(
                    id=AuthoredSubset.create_id(subset_id),
                    subset_id=subset_id,
                    benchmark_id=bm.benchmark_id,
                    account=command.account,
                    slug=command.slug,
                    rows=rows,
                    content_sha256=content_sha256,
                    at=at,
                    **fields,
                )
                pending.append(self._snapshot_record(subset_id, subset_id, len(rows)))
            pending.append(subset)
            if code is not None:
                pending += self._register_impl(
                    bm,
                    subset_id=subset_id,
                    account=command.account,
                    label=str(command.grader.get("label") or "grader")
                    if command.grader
                    else "grader",
                    description="the subset's grader",
                    code=code,
                    official=False,
                )[1]
            unique = {id(a): a for a in pending if a is not None}
            self._commit(*unique.values())
            return self._subset_view(subset, visibility), True

        return self._retrying(create)

    def _snapshot_record(self, snapshot_id: str, subset_id: str, count: int) -> Any:
        if self._get(SubsetSnapshot, SubsetSnapshot.create_id(snapshot_id)) is not None:
            return None
        return SubsetSnapshot(
            id=SubsetSnapshot.create_id(snapshot_id),
            snapshot_id=snapshot_id,
            subset_id=subset_id,
            task_count=count,
        )

    def append_tasks(self, command: AppendTasks, rows: Rows) -> tuple[AppendView, bool]:
        """Add rows to a rolling subset: a new snapshot. A repeated key changes nothing."""

        def append() -> tuple[AppendView, bool]:
            _, subset, _ = self._live_subset(command.account, command.subset_id, owner=True)
            result, new = subset.append(
                rows,
                idempotency_key=command.idempotency_key,
                request_sha256=request_digest(rows),
                at=_now(),
            )
            if new:
                record = self._snapshot_record(
                    result["snapshot_id"], subset.subset_id, result["task_count"]
                )
                self._commit(*[a for a in (subset, record) if a is not None])
            return AppendView.model_validate(result), new

        return self._retrying(append)

    def update_subset(self, command: UpdateSubset) -> SubsetView:
        def change() -> SubsetView:
            bm, subset, _ = self._live_subset(command.account, command.subset_id, owner=True)
            if subset.change(
                name=command.name,
                description=command.description,
                rolling=command.rolling,
                at=_now(),
            ):
                self._commit(subset)
            return self._subset_view(subset, self._visibility(bm))

        return self._retrying(change)

    def subset(
        self, account: str, subset_id: str, rows_offset: int = 0, rows_limit: int = 0
    ) -> tuple[SubsetView, Rows]:
        """A subset by its id or a snapshot id, and a page of that snapshot's rows.

        The subset's own id means what it holds now (as in a launch); only the
        pipeline, which pins snapshots, reads a rolling subset's first snapshot by it.
        """
        bm, subset, snapshot = self._live_subset(account, subset_id, owner=False)
        if subset_id == subset.subset_id:
            snapshot = subset.latest
        count = int(snapshot["task_count"])
        start = max(rows_offset, 0)
        rows = subset.rows[start : min(start + max(rows_limit, 0), count)]
        return self._subset_view(subset, self._visibility(bm)), [dict(r) for r in rows]

    def delete_subset(self, account: str, subset_id: str) -> None:
        """Remove a subset from its benchmark (its slug is free again): owner only, and
        never while a public run pinned any of its snapshots."""

        def delete() -> None:
            bm, subset, _ = self._live_subset(account, subset_id, owner=True)
            count = self.public_runs(subset_ids=[s["id"] for s in subset.snapshots])
            if count:
                raise referenced("subset", subset_id, count)
            subset.delete(_now())
            # A retired BUILT subset's slug already names its successor: leave that be.
            if bm.subsets.get(subset.slug) == subset.subset_id:
                bm.release_slug(subset.slug)
            self._commit(subset, bm)

        self._retrying(delete)

    # -- impls ------------------------------------------------------------------------------
    def _register_impl(
        self,
        bm: AuthoredBenchmark,
        *,
        subset_id: str | None,
        account: str,
        label: str,
        description: str,
        code: str,
        official: bool,
    ) -> tuple[AuthoredImpl, list[Any], bool]:
        """The impl for ``code`` under ``bm`` (made, restored or found) and what to save."""
        impl_id = impl_id_for(bm.benchmark_id, code)
        impl = self._get(AuthoredImpl, AuthoredImpl.create_id(impl_id))
        created = impl is None or impl.deleted or impl_id not in bm.impls
        if impl is None:
            impl = AuthoredImpl.for_code(
                benchmark_id=bm.benchmark_id,
                subset_id=subset_id,
                account=account,
                label=label,
                description=description,
                code=code,
            )
        else:
            impl.restore(label=label, description=description)
        bm.add_impl(impl_id, official)
        return impl, [impl, bm], created

    def create_impl(self, command: CreateImpl) -> tuple[ImplView, bool]:
        """Register scorer code under the subset's (or the named) benchmark. The same code
        again is the same impl."""

        def create() -> tuple[ImplView, bool]:
            if command.subset_id is not None:
                bm, subset, _ = self._live_subset(command.account, command.subset_id, owner=True)
                if command.benchmark_id is not None and command.benchmark_id != bm.benchmark_id:
                    raise Refused(
                        400,
                        "subset of another benchmark",
                        f"subset {command.subset_id} belongs to {bm.benchmark_id}",
                        field="benchmark",
                        code="invalid_argument",
                    )
                subset_id: str | None = subset.subset_id
            elif command.benchmark_id is not None:
                bm = self._owned(command.account, command.benchmark_id, "benchmark")
                subset_id = None
            else:
                raise Refused(
                    400,
                    "no subset",
                    "name the subset the impl scores (or its benchmark)",
                    field="subset",
                    code="invalid_argument",
                )
            if command.official and not command.admin:
                raise admin_only()
            check_code(command.code)
            impl, pending, created = self._register_impl(
                bm,
                subset_id=subset_id,
                account=command.account,
                label=command.label,
                description=command.description,
                code=command.code,
                official=command.official,
            )
            self._commit(*pending)
            return self._impl_view(bm, impl, self._visibility(bm)), created

        return self._retrying(create)

    def update_impl(self, command: UpdateImpl) -> ImplView:
        def change() -> ImplView:
            bm, impl = self._live_impl(command.account, command.impl_id, owner=True)
            if command.official is not None and not command.admin:
                raise admin_only()
            changed = impl.relabel(label=command.label, description=command.description)
            if command.official is not None:
                bm.set_official(impl.impl_id, command.official)
            if changed or command.official is not None:
                self._commit(impl, bm)
            return self._impl_view(bm, impl, self._visibility(bm))

        return self._retrying(change)

    def impl(self, account: str, impl_id: str) -> tuple[ImplView, str]:
        """An impl's description and its code."""
        bm, impl = self._live_impl(account, impl_id, owner=False)
        return self._impl_view(bm, impl, self._visibility(bm)), impl.code

    def delete_impl(self, account: str, impl_id: str) -> None:
        """Remove an impl from its benchmark: owner only, never while a public run used it."""

        def delete() -> None:
            bm, impl = self._live_impl(account, impl_id, owner=True)
            count = self.public_runs(impl_id=impl_id)
            if count:
                raise referenced("impl", impl_id, count)
            impl.delete()
            bm.remove_impl(impl_id)
            self._commit(impl, bm)

        self._retrying(delete)

    # -- what the pipeline asks ---------------------------------------------------------------
    def resolve(
        self, account: str, benchmark: str, subset: str | None, impl: str | None
    ) -> BenchmarkResolution | None:
        """A pinned launch's benchmark, the snapshot it pins and the impl it runs.

        None when ``benchmark`` names nothing this account may run (the caller
        answers 404 the same way for every miss).
        """
        bm = self._resolve_benchmark(account, benchmark)
        if bm is None:
            return None
        if not bm.subsets:
            raise Refused(409, "benchmark has no subsets", bm.name, field="benchmark")
        chosen, snapshot = self._resolve_subset(bm, subset)
        impl_id = self._resolve_impl(bm, chosen, impl)
        return BenchmarkResolution(
            benchmark_id=bm.benchmark_id,
            benchmark_name=bm.name,
            subset_id=str(snapshot["id"]),
            subset_slug=chosen.slug,
            task_count=int(snapshot["task_count"]),
            impl_id=impl_id,
            default_trials=chosen.default_trials,
            agentic=bool(chosen.rows) and is_agentic_row(chosen.rows[0]),
        )

    def _resolve_benchmark(self, account: str, benchmark: str) -> AuthoredBenchmark | None:
        if is_benchmark_id(benchmark):
            try:
                return self._readable(account, benchmark, "benchmark")
            except Refused:
                return None
        ids = self.owned_by_name(account, benchmark)
        if len(ids) > 1:
            raise Refused(
                409,
                "ambiguous benchmark name",
                f"{len(ids)} of your benchmarks are named {benchmark!r}: pin one by id",
                field="benchmark",
                code="ambiguous",
            )
        return self._benchmark(ids[0]) if ids else None

    def _resolve_subset(
        self, bm: AuthoredBenchmark, subset: str | None
    ) -> tuple[AuthoredSubset, dict[str, Any]]:
        wanted = subset if subset is not None else next(iter(bm.subsets.values()))
        subset_id = bm.subsets.get(wanted, wanted)
        found = self._subset(subset_id)
        if found is None or found[0].deleted or found[0].subset_id not in bm.subsets.values():
            raise Refused(
                404,
                "subset not found",
                f"{bm.name} has no subset {subset!r}; it has {', '.join(bm.subsets)}",
                field="subset",
                code="not_found",
            )
        chosen, snapshot = found
        # A subset's own id means what it holds now; a snapshot id means that snapshot.
        if subset_id == chosen.subset_id:
            snapshot = chosen.latest
        return chosen, snapshot

    @staticmethod
    def _resolve_impl(
        bm: AuthoredBenchmark, subset: AuthoredSubset, impl: str | None
    ) -> str | None:
        if impl is None:
            grader = subset.grader_impl_id if subset.grader_impl_id in bm.impls else None
            return bm.latest_official() or grader
        if impl == "latest:official":
            official = bm.latest_official()
            if official is None:
                raise Refused(
                    404,
                    "impl not found",
                    f"{bm.name} has no official impl yet",
                    field="impl",
                    code="not_found",
                )
            return official
        if impl not in bm.impls:
            raise Refused(
                404,
                "impl not found",
                f"no impl {impl!r} for this benchmark",
                field="impl",
                code="not_found",
            )
        return impl

    def snapshot_jsonl(self, snapshot_id: str) -> tuple[bytes, int, str] | None:
        """A snapshot's rows as JSON lines, its row count and content SHA-256.

        Served for deleted subsets too: runs that pinned a snapshot keep reading it.
        """
        found = self._subset(snapshot_id)
        if found is None:
            return None
        subset, snapshot = found
        count = int(snapshot["task_count"])
        return tasks_jsonl(subset.rows[:count]), count, str(snapshot["content_sha256"])

    def snapshot_rows(self, snapshot_id: str) -> Rows | None:
        """A snapshot's task rows (deleted or not), or None for an id the store never had."""
        found = self._subset(snapshot_id)
        if found is None:
            return None
        subset, snapshot = found
        return [dict(r) for r in subset.rows[: int(snapshot["task_count"])]]

    def impl_code(self, impl_id: str) -> tuple[str, str] | None:
        """An impl's (code, sha256), deleted or not: a run that pinned it still runs it."""
        impl = self._get(AuthoredImpl, AuthoredImpl.create_id(impl_id))
        return (impl.code, impl.sha256) if impl is not None else None

    def catalog_entries(self, account: str) -> list[CatalogBenchmarkEntry]:
        """The account's own benchmarks as a natural-language launch's Find sees them."""

        def own(cur: ViewCursor) -> list[str]:
            cur.execute(
                f"SELECT id FROM {cur.table('catalog_benchmarks')} WHERE account = ? "
                "ORDER BY created_at",
                [account],
            )
            return [str(r["id"]) for r in cur.fetchall()]

        entries = []
        for benchmark_id in self.views.read(own):
            bm = self._benchmark(benchmark_id)
            if bm is None:
                continue
            subsets = []
            for subset_id in bm.subsets.values():
                subset = self._get(AuthoredSubset, AuthoredSubset.create_id(subset_id))
                if subset is None:
                    continue
                subsets.append(
                    CatalogSubsetEntry(
                        subset_id=str(subset.latest["id"]),
                        slug=subset.slug,
                        name=subset.name,
                        task_count=int(subset.latest["task_count"]),
                        categories=list(row_categories(subset.rows)),
                        official_impl_id=self._resolve_impl(bm, subset, None),
                    )
                )
            entries.append(
                CatalogBenchmarkEntry(
                    benchmark_id=bm.benchmark_id,
                    name=bm.name,
                    description=bm.description,
                    category=bm.category,
                    tags=list(bm.tags),
                    subsets=subsets,
                )
            )
        return entries


def admin_only() -> Refused:
    return Refused(
        403,
        "admin only",
        "only an admin may mark an impl official",
        field="official",
        code="admin_only",
    )


def _unique(tags: Sequence[str]) -> list[str]:
    seen: dict[str, None] = {}
    for tag in tags:
        if tag.strip():
            seen.setdefault(tag.strip())
    return list(seen)


def _listed(row: dict[str, Any]) -> BenchmarkView:
    return BenchmarkView(
        id=str(row["id"]),
        name=str(row["name"]),
        description=str(row["description"]),
        category=str(row["category"]),
        tags=list(json.loads(row["tags"] or "[]")),
        owner=row["account"],
        visibility=row["visibility"],
        builtin=bool(row["builtin"]),
        source=row.get("source"),
        subset_count=int(row["subset_count"]),
        impl_count=int(row["impl_count"]),
        created_at=_parse_time(row["created_at"]),
        updated_at=_parse_time(row["updated_at"]),
    )
