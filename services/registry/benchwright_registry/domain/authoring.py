"""What users author: benchmarks, subsets, impls. Aggregates and their rules, no I/O.

Ids say what they name:

* a benchmark is ``bm_<uuid>``; with an idempotency key the uuid is derived from
  (account, key), so a retried create finds the benchmark the first one made;
* a subset snapshot is ``sub_<12 hex>`` of (benchmark id, slug, SHA-256 of the
  rows as canonical JSON lines): the same tasks under the same slug have the
  same id anywhere. A subset's own id is its first snapshot's; each append to a
  rolling subset makes a new snapshot with its own id, and a run pins the
  snapshot it saw, so a later append never changes what an earlier run ran;
* an impl is ``<benchmark_id>:<12 hex of sha256(code)>``: the same code under
  the same benchmark is the same impl, and an impl's code never changes.

Each public method checks its rules first and only then records an event; the
event handlers (the ``@event`` methods) only assign, so replaying history never
re-judges it under today's rules.
"""

import re
import uuid
from collections.abc import Collection, Iterable
from datetime import datetime
from typing import Any

from eventsourcing.domain import Aggregate, event

from benchwright_shared.hashing import canonical_json, fingerprint12, sha256_hex
from benchwright_shared.ids import impl_id_for, stable_uuid
from benchwright_shared.judging import scorer_rubric_problems
from benchwright_shared.refusal import Refused

MAX_ROWS_PER_REQUEST = 1000
MAX_TASK_ID_LENGTH = 500
MAX_CODE_BYTES = 256 * 1024
SLUG = re.compile(r"[a-z0-9][a-z0-9._-]{0,99}")
BENCHMARK_ID = re.compile(r"bm_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def not_found(what: str, ident: str, field: str) -> Refused:
    """Missing, deleted and not yours all read the same."""
    return Refused(404, f"{what} not found", f"no {what} {ident!r}", field=field, code="not_found")


def referenced(what: str, ident: str, count: int) -> Refused:
    return Refused(
        409,
        f"{what} is referenced by public runs",
        f"{count} public run(s) reference {what} {ident!r}; hide them first "
        "(a public run keeps what it ran reachable)",
        code="referenced_by_public_runs",
    )


# -- ids and content addresses ------------------------------------------------------------
def new_benchmark_id(account: str, idempotency_key: str | None) -> str:
    """``bm_<uuid>``: derived from (account, key) when there is a key, random otherwise."""
    ident = stable_uuid("benchmark", account, idempotency_key) if idempotency_key else uuid.uuid4()
    return f"bm_{ident}"


def is_benchmark_id(value: str) -> bool:
    return BENCHMARK_ID.fullmatch(value) is not None


def tasks_jsonl(rows: Iterable[dict[str, Any]]) -> bytes:
    """Rows as canonical JSON lines: the bytes a subset's content address covers."""
    return b"".join(canonical_json(r).encode() + b"\n" for r in rows)


def snapshot_id_for(benchmark_id: str, slug: str, content_sha256: str) -> str:
    """The content address of a subset's task list under a benchmark and slug."""
    return "sub_" + fingerprint12(
        canonical_json({"benchmark_id": benchmark_id, "slug": slug, "tasks": content_sha256})
    )


def request_digest(value: Any) -> str:
    """What a repeated idempotency key is compared against."""
    return sha256_hex(canonical_json(value))


# -- rules --------------------------------------------------------------------------------
def check_slug(slug: str) -> None:
    if not SLUG.fullmatch(slug):
        raise Refused(
            400,
            "invalid slug",
            f"{slug!r}: use 1-100 of a-z, 0-9, '.', '_', '-', starting with a letter or digit",
            field="slug",
            code="invalid_argument",
        )


def check_rows(
    rows: list[dict[str, Any]], *, existing: Collection[str] = (), field: str = "tasks"
) -> None:
    """At most 1,000 rows a request, each an object with its own ``task_id``."""
    if len(rows) > MAX_ROWS_PER_REQUEST:
        raise Refused(
            400,
            "too many tasks",
            f"{len(rows)} rows: at most {MAX_ROWS_PER_REQUEST:,} per request; create the "
            "subset with rolling=true and add the rest with append_tasks",
            field=field,
            code="invalid_argument",
        )
    seen: set[str] = set()
    for i, row in enumerate(rows):
        where = f"{field}[{i}]"
        if not isinstance(row, dict):
            raise Refused(
                400,
                "invalid task",
                f"{where} is not an object",
                field=where,
                code="invalid_argument",
            )
        task_id = row.get("task_id")
        if not isinstance(task_id, str) or not task_id or len(task_id) > MAX_TASK_ID_LENGTH:
            raise Refused(
                400,
                "invalid task",
                f"{where}.task_id must be a string of 1-{MAX_TASK_ID_LENGTH} characters",
                field=f"{where}.task_id",
                code="invalid_argument",
            )
        if task_id in seen or task_id in existing:
            raise Refused(
                400,
                "duplicate task id",
                f"{where}.task_id {task_id!r} is already in the subset; task ids are unique",
                field=f"{where}.task_id",
                code="duplicate_task_id",
            )
        seen.add(task_id)


def check_code(code: str, field: str = "code") -> None:
    """Scorer code must be Python that compiles, and not huge. It is never run here."""
    size = len(code.encode())
    if not code.strip() or size > MAX_CODE_BYTES:
        raise Refused(
            400,
            "invalid code",
            f"{field} must be 1 byte to {MAX_CODE_BYTES // 1024} KiB of Python (got {size})",
            field=field,
            code="invalid_argument",
        )
    try:
        compile(code, "task_impl.py", "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise Refused(
            400,
            "code does not compile",
            f"{field}: line {exc.lineno}: {exc.msg}",
            field=field,
            code="invalid_argument",
        ) from None
    # A model-graded scorer's rubric in its settings block: weights that cannot grade
    # (negative, not numbers, summing to nothing) are refused before any run pays.
    problems = scorer_rubric_problems(code)
    if problems:
        first = problems[0]
        raise Refused(
            422,
            "invalid rubric",
            f"{field}: {first.field}: {first.detail}",
            field=f"{field}.{first.field}",
            code="invalid_rubric",
        )


def grader_code(grader: dict[str, Any]) -> str:
    """The scorer code a grader carries: ``{"code": <task_impl.py>, "label": ...}``."""
    code = grader.get("code")
    if not isinstance(code, str):
        raise Refused(
            400,
            "invalid grader",
            "grader.code must hold the scorer (a task_impl.py with class Task(BenchTask))",
            field="grader.code",
            code="invalid_argument",
        )
    check_code(code, "grader.code")
    return code


# -- aggregates ---------------------------------------------------------------------------
class AuthoredBenchmark(Aggregate):
    """A benchmark an account made: its description, its subsets by slug, its impls."""

    @staticmethod
    def create_id(benchmark_id: str) -> uuid.UUID:
        return uuid.UUID(benchmark_id.removeprefix("bm_"))

    @event("Created")
    def __init__(
        self,
        id: uuid.UUID,
        account: str,
        name: str,
        description: str,
        category: str,
        tags: list[str],
        request_sha256: str,
    ) -> None:
        self.account = account
        self.name = name
        self.description = description
        self.category = category
        self.tags = list(tags)
        self.request_sha256 = request_sha256
        # slug -> subset id, in creation order.
        self.subsets: dict[str, str] = {}
        # impl id -> official, in creation order.
        self.impls: dict[str, bool] = {}
        self.deleted = False

    @property
    def benchmark_id(self) -> str:
        return f"bm_{self.id}"

    def latest_official(self) -> str | None:
        """The newest official impl: what ``latest:official`` names."""
        official = [impl_id for impl_id, flag in self.impls.items() if flag]
        return official[-1] if official else None

    # rules, then events
    def change(
        self,
        *,
        name: str | None,
        description: str | None,
        category: str | None,
        tags: list[str] | None,
    ) -> bool:
        changes = {
            k: v
            for k, v in (
                ("name", name),
                ("description", description),
                ("category", category),
                ("tags", tags),
            )
            if v is not None and v != getattr(self, k)
        }
        if changes:
            self._changed(changes)
        return bool(changes)

    @event("Changed")
    def _changed(self, changes: dict[str, Any]) -> None:
        for key, value in changes.items():
            setattr(self, key, value)

    def claim_slug(self, slug: str, subset_id: str) -> None:
        """Record a subset under ``slug``; a slug names one live subset at a time."""
        taken = self.subsets.get(slug)
        if taken is not None and taken != subset_id:
            raise Refused(
                409,
                "slug taken",
                f"{self.benchmark_id} already has a subset {slug!r} ({taken}) with other tasks",
                field="slug",
                code="slug_taken",
            )
        if taken is None:
            self._subset_attached(slug, subset_id)

    @event("SubsetAttached")
    def _subset_attached(self, slug: str, subset_id: str) -> None:
        self.subsets[slug] = subset_id

    def release_slug(self, slug: str) -> None:
        if slug in self.subsets:
            self._subset_detached(slug)

    @event("SubsetDetached")
    def _subset_detached(self, slug: str) -> None:
        self.subsets.pop(slug, None)

    def add_impl(self, impl_id: str, official: bool) -> None:
        if impl_id not in self.impls:
            self._impl_registered(impl_id, official)
        elif official and not self.impls[impl_id]:
            self.set_official(impl_id, True)

    @event("ImplRegistered")
    def _impl_registered(self, impl_id: str, official: bool) -> None:
        self.impls[impl_id] = official

    def set_official(self, impl_id: str, official: bool) -> None:
        if self.impls.get(impl_id) != official:
            self._impl_official(impl_id, official)

    @event("ImplOfficialSet")
    def _impl_official(self, impl_id: str, official: bool) -> None:
        self.impls[impl_id] = official

    def remove_impl(self, impl_id: str) -> None:
        if impl_id in self.impls:
            self._impl_removed(impl_id)

    @event("ImplRemoved")
    def _impl_removed(self, impl_id: str) -> None:
        self.impls.pop(impl_id, None)

    def delete(self) -> None:
        if not self.deleted:
            self._deleted()

    @event("Deleted")
    def _deleted(self) -> None:
        self.deleted = True


class AuthoredSubset(Aggregate):
    """A subset's task rows, its snapshots, and the appends it has taken."""

    @staticmethod
    def create_id(subset_id: str) -> uuid.UUID:
        return stable_uuid("authored-subset", subset_id)

    @event("Created")
    def __init__(
        self,
        id: uuid.UUID,
        subset_id: str,
        benchmark_id: str,
        account: str,
        slug: str,
        name: str,
        description: str,
        rolling: bool,
        grader: dict[str, Any] | None,
        grader_impl_id: str | None,
        default_trials: dict[str, Any] | None,
        rows: list[dict[str, Any]],
        content_sha256: str,
        at: datetime,
    ) -> None:
        self.subset_id = subset_id
        self.benchmark_id = benchmark_id
        self.account = account
        self.slug = slug
        self.name = name
        self.description = description
        self.rolling = rolling
        self.grader = grader
        self.grader_impl_id = grader_impl_id
        self.default_trials = default_trials
        self.rows = list(rows)
        self.snapshots: list[dict[str, Any]] = [
            {
                "id": subset_id,
                "task_count": len(rows),
                "content_sha256": content_sha256,
                "created_at": at.isoformat(),
            }
        ]
        # idempotency key -> {"request_sha256", "result"}
        self.appends: dict[str, dict[str, Any]] = {}
        self.deleted = False
        self.updated_at = at

    @classmethod
    def address(cls, benchmark_id: str, slug: str, rows: list[dict[str, Any]]) -> tuple[str, str]:
        """Check a new subset's slug and rows; its (id, content SHA-256)."""
        check_slug(slug)
        check_rows(rows)
        content_sha256 = sha256_hex(tasks_jsonl(rows))
        return snapshot_id_for(benchmark_id, slug, content_sha256), content_sha256

    @property
    def latest(self) -> dict[str, Any]:
        return self.snapshots[-1]

    def snapshot(self, snapshot_id: str) -> dict[str, Any] | None:
        return next((s for s in self.snapshots if s["id"] == snapshot_id), None)

    def append(
        self,
        rows: list[dict[str, Any]],
        *,
        idempotency_key: str | None,
        request_sha256: str,
        at: datetime,
    ) -> tuple[dict[str, Any], bool]:
        """Add rows to a rolling subset: (the append's result, whether it is new).

        A repeated idempotency key answers what its first use did, without
        adding anything; the same key with other rows is refused.
        """
        if idempotency_key is not None and idempotency_key in self.appends:
            earlier = self.appends[idempotency_key]
            if earlier["request_sha256"] != request_sha256:
                raise Refused(
                    409,
                    "idempotency key reused",
                    "this Idempotency-Key was used for a different append",
                    field="Idempotency-Key",
                    code="idempotency_key_reused",
                )
            return dict(earlier["result"]), False
        if not self.rolling:
            raise Refused(
                409,
                "subset is frozen",
                f"subset {self.subset_id} is frozen: appends need a rolling subset "
                "(create one with rolling=true)",
                field="subset_id",
                code="subset_frozen",
            )
        if not rows:
            raise Refused(
                400,
                "no tasks",
                "an append needs at least one row",
                field="tasks",
                code="invalid_argument",
            )
        check_rows(rows, existing={str(r["task_id"]) for r in self.rows})
        content_sha256 = sha256_hex(tasks_jsonl([*self.rows, *rows]))
        snapshot_id = snapshot_id_for(self.benchmark_id, self.slug, content_sha256)
        result = {
            "subset_id": self.subset_id,
            "snapshot_id": snapshot_id,
            "appended": len(rows),
            "task_count": len(self.rows) + len(rows),
            "content_sha256": content_sha256,
            "idempotency_key": idempotency_key,
        }
        self._appended(rows, result, request_sha256, at)
        return result, True

    @event("TasksAppended")
    def _appended(
        self,
        rows: list[dict[str, Any]],
        result: dict[str, Any],
        request_sha256: str,
        at: datetime,
    ) -> None:
        self.rows.extend(rows)
        self.snapshots.append(
            {
                "id": result["snapshot_id"],
                "task_count": result["task_count"],
                "content_sha256": result["content_sha256"],
                "created_at": at.isoformat(),
            }
        )
        if result["idempotency_key"] is not None:
            self.appends[result["idempotency_key"]] = {
                "request_sha256": request_sha256,
                "result": result,
            }
        self.updated_at = at

    def change(
        self, *, name: str | None, description: str | None, rolling: bool | None, at: datetime
    ) -> bool:
        """Rename, describe, or freeze. Freezing is one way: ``rolling=True`` on a frozen
        subset is refused."""
        if rolling is True and not self.rolling:
            raise Refused(
                409,
                "subset is frozen",
                f"subset {self.subset_id} is frozen, and freezing is one way",
                field="rolling",
                code="subset_frozen",
            )
        changed = False
        described = {
            k: v
            for k, v in (("name", name), ("description", description))
            if v is not None and v != getattr(self, k)
        }
        if described:
            self._described(described, at)
            changed = True
        if rolling is False and self.rolling:
            self._frozen(at)
            changed = True
        return changed

    @event("Described")
    def _described(self, changes: dict[str, Any], at: datetime) -> None:
        for key, value in changes.items():
            setattr(self, key, value)
        self.updated_at = at

    @event("Frozen")
    def _frozen(self, at: datetime) -> None:
        self.rolling = False
        self.updated_at = at

    def delete(self, at: datetime) -> None:
        if not self.deleted:
            self._deleted(at)

    @event("Deleted")
    def _deleted(self, at: datetime) -> None:
        self.deleted = True
        self.updated_at = at

    def restore(
        self,
        rows: list[dict[str, Any]],
        *,
        name: str,
        description: str,
        rolling: bool,
        grader: dict[str, Any] | None,
        grader_impl_id: str | None,
        default_trials: dict[str, Any] | None,
        at: datetime,
    ) -> None:
        """Bring a deleted subset back when the same tasks are uploaded again.

        Its id is the content address of those tasks, so it can only come back
        as it was: a rolling subset that took appends cannot be recreated from
        its first rows.
        """
        if rows != self.rows:
            raise Refused(
                409,
                "subset deleted",
                f"subset {self.subset_id} was deleted after taking appends; its id cannot "
                "name other tasks: use another slug",
                field="slug",
                code="subset_deleted",
            )
        self._restored(
            {
                "name": name,
                "description": description,
                "rolling": rolling,
                "grader": grader,
                "grader_impl_id": grader_impl_id,
                "default_trials": default_trials,
            },
            at,
        )

    @event("Restored")
    def _restored(self, fields: dict[str, Any], at: datetime) -> None:
        for key, value in fields.items():
            setattr(self, key, value)
        self.deleted = False
        self.updated_at = at


class SubsetSnapshot(Aggregate):
    """Which subset a snapshot id belongs to, and how many of its rows it covers."""

    @staticmethod
    def create_id(snapshot_id: str) -> uuid.UUID:
        return stable_uuid("subset-snapshot", snapshot_id)

    @event("Recorded")
    def __init__(self, id: uuid.UUID, snapshot_id: str, subset_id: str, task_count: int) -> None:
        self.snapshot_id = snapshot_id
        self.subset_id = subset_id
        self.task_count = task_count


class AuthoredImpl(Aggregate):
    """Scorer code, immutable; only its label and description change."""

    @staticmethod
    def create_id(impl_id: str) -> uuid.UUID:
        return stable_uuid("authored-impl", impl_id)

    @event("Created")
    def __init__(
        self,
        id: uuid.UUID,
        impl_id: str,
        benchmark_id: str,
        subset_id: str | None,
        account: str,
        label: str,
        description: str,
        code: str,
        sha256: str,
    ) -> None:
        self.impl_id = impl_id
        self.benchmark_id = benchmark_id
        self.subset_id = subset_id
        self.account = account
        self.label = label
        self.description = description
        self.code = code
        self.sha256 = sha256
        self.deleted = False

    @classmethod
    def for_code(
        cls,
        *,
        benchmark_id: str,
        subset_id: str | None,
        account: str,
        label: str,
        description: str,
        code: str,
    ) -> "AuthoredImpl":
        impl_id = impl_id_for(benchmark_id, code)
        return cls(
            id=cls.create_id(impl_id),
            impl_id=impl_id,
            benchmark_id=benchmark_id,
            subset_id=subset_id,
            account=account,
            label=label,
            description=description,
            code=code,
            sha256=sha256_hex(code),
        )

    def relabel(self, *, label: str | None, description: str | None) -> bool:
        changes = {
            k: v
            for k, v in (("label", label), ("description", description))
            if v is not None and v != getattr(self, k)
        }
        if changes:
            self._relabelled(changes)
        return bool(changes)

    @event("Relabelled")
    def _relabelled(self, changes: dict[str, Any]) -> None:
        for key, value in changes.items():
            setattr(self, key, value)

    def delete(self) -> None:
        if not self.deleted:
            self._deleted()

    @event("Deleted")
    def _deleted(self) -> None:
        self.deleted = True

    def restore(self, *, label: str, description: str) -> None:
        """The same code registered again after a delete: the same impl, back."""
        if self.deleted:
            self._restored(label, description)

    @event("Restored")
    def _restored(self, label: str, description: str) -> None:
        self.label = label
        self.description = description
        self.deleted = False
