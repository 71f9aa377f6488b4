"""The registry's read models.

* ``run_summaries``: runs keyed on (benchmark_id, subset_id, impl_id) with the
  model as its own column, from the run log. The shape columns are filled only
  when a run is terminal, so anything keyed on the run shape sees finished runs
  only. ``visibility`` follows ``RunUpdated``; a public run makes its benchmark
  public and holds what it ran (the checks below).
* ``catalog``: one row per benchmark a listing can show (the built-in catalog,
  seeded at start, and every authored benchmark), from the registry's own
  event store: ``AuthoringApplication`` follows its notification log into it.
"""

import json
from collections.abc import Sequence
from typing import Any

from benchwright_shared.projection import Projection, ViewCursor

PUBLIC = "public"


class RunSummariesProjection(Projection):
    name = "run_summaries"
    version = 3
    tables = {
        "run_summaries": (
            "run_id TEXT PRIMARY KEY, account TEXT NOT NULL, model TEXT NOT NULL, "
            "launched_benchmark_id TEXT, launched_subset_id TEXT, impl_seen TEXT, "
            "benchmark_id TEXT, subset_id TEXT, impl_id TEXT, status TEXT NOT NULL, "
            "pass_rate DOUBLE PRECISION, summary TEXT, "
            "visibility TEXT NOT NULL DEFAULT 'private'"
        ),
    }
    indexes = (
        "run_summaries(benchmark_id, subset_id, impl_id)",
        "run_summaries(visibility)",
    )

    def apply(self, cur: ViewCursor, message: dict[str, Any]) -> None:
        kind, data, run_id = message.get("type"), message.get("data", {}), message.get("run_id")
        table = cur.table("run_summaries")
        if kind == "RunLaunched":
            sut = data.get("sut") or {}
            cur.execute(
                f"INSERT INTO {table} (run_id, account, model, launched_benchmark_id, "
                "launched_subset_id, impl_seen, status) VALUES (?, ?, ?, ?, ?, ?, 'running') "
                "ON CONFLICT (run_id) DO NOTHING",
                [
                    run_id,
                    data.get("account", ""),
                    f"{sut.get('provider')}/{sut.get('model')}" if sut else "",
                    data.get("benchmark_id"),
                    data.get("subset_id"),
                    data.get("impl_id"),
                ],
            )
        elif kind == "BenchmarkResolved":
            # A natural-language launch learns its benchmark (and maybe model) in Find.
            sut = data.get("sut") or {}
            cur.execute(
                f"UPDATE {table} SET launched_benchmark_id = ?, launched_subset_id = ?, "
                "model = COALESCE(NULLIF(?, ''), model) WHERE run_id = ?",
                [
                    data.get("benchmark_id"),
                    data.get("subset_id"),
                    f"{sut['provider']}/{sut['model']}" if sut else None,
                    run_id,
                ],
            )
        elif kind in ("SetupArtifact", "AtomizeArtifact", "DatasetTasksArtifact"):
            column = "launched_subset_id" if kind == "DatasetTasksArtifact" else "impl_seen"
            value = data.get("subset_id" if kind == "DatasetTasksArtifact" else "impl_id")
            if value:
                cur.execute(f"UPDATE {table} SET {column} = ? WHERE run_id = ?", [value, run_id])
        elif kind == "RunUpdated" and data.get("visibility"):
            cur.execute(
                f"UPDATE {table} SET visibility = ? WHERE run_id = ?",
                [data["visibility"], run_id],
            )
        elif kind == "RunDeleted":
            cur.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
        elif kind == "PipelineFinished":
            summary = data.get("summary") or {}
            cur.execute(
                f"UPDATE {table} SET status = ?, pass_rate = ?, summary = ?, "
                "benchmark_id = launched_benchmark_id, subset_id = launched_subset_id, "
                "impl_id = impl_seen WHERE run_id = ?",
                [data.get("status"), summary.get("pass_rate"), json.dumps(summary), run_id],
            )


def public_run_count(
    cur: ViewCursor,
    *,
    benchmark_id: str | None = None,
    subset_ids: Sequence[str] = (),
    impl_id: str | None = None,
) -> int:
    """How many public runs reference a benchmark, any of some subset snapshots, or an impl.

    Both the launched ids and the terminal ones count: a public run in flight
    already holds what it runs.
    """
    table = cur.table("run_summaries")
    where: list[str] = []
    params: list[Any] = []
    if benchmark_id is not None:
        where.append("(benchmark_id = ? OR launched_benchmark_id = ?)")
        params += [benchmark_id, benchmark_id]
    if subset_ids:
        marks = ", ".join("?" for _ in subset_ids)
        where.append(f"(subset_id IN ({marks}) OR launched_subset_id IN ({marks}))")
        params += [*subset_ids, *subset_ids]
    if impl_id is not None:
        where.append("(impl_id = ? OR impl_seen = ?)")
        params += [impl_id, impl_id]
    if not where:
        return 0
    cur.execute(
        f"SELECT COUNT(*) AS n FROM {table} WHERE visibility = ? AND ({' OR '.join(where)})",
        [PUBLIC, *params],
    )
    row = cur.fetchone()
    return int(row["n"]) if row else 0


class CatalogProjection(Projection):
    """Benchmarks as a listing shows them: filterable by tag, sortable, pageable."""

    name = "catalog"
    version = 1
    tables = {
        "catalog_benchmarks": (
            "id TEXT PRIMARY KEY, account TEXT, builtin INTEGER NOT NULL DEFAULT 0, "
            "name TEXT NOT NULL, name_key TEXT NOT NULL, description TEXT NOT NULL, "
            "category TEXT NOT NULL, tags TEXT NOT NULL, source TEXT, "
            "subset_count INTEGER NOT NULL DEFAULT 0, impl_count INTEGER NOT NULL DEFAULT 0, "
            "created_at TEXT NOT NULL, updated_at TEXT NOT NULL"
        ),
        "catalog_tags": "benchmark_id TEXT NOT NULL, tag TEXT NOT NULL, "
        "PRIMARY KEY (benchmark_id, tag)",
    }
    indexes = (
        "catalog_benchmarks(account, created_at)",
        "catalog_benchmarks(name_key)",
        "catalog_tags(tag)",
    )

    def apply(self, cur: ViewCursor, message: dict[str, Any]) -> None:
        kind = str(message.get("type", ""))
        ident = message.get("id")
        table = cur.table("catalog_benchmarks")
        if kind in ("AuthoredBenchmark.Created", "builtin"):
            upsert_benchmark(cur, message)
        elif kind == "AuthoredBenchmark.Changed":
            changes = dict(message.get("changes") or {})
            sets, params = ["updated_at = ?"], [message.get("at")]
            for column in ("name", "description", "category"):
                if column in changes:
                    sets.append(f"{column} = ?")
                    params.append(changes[column])
            if "name" in changes:
                sets.append("name_key = ?")
                params.append(str(changes["name"]).lower())
            if "tags" in changes:
                sets.append("tags = ?")
                params.append(json.dumps(changes["tags"]))
                _write_tags(cur, str(ident), changes["tags"])
            cur.execute(f"UPDATE {table} SET {', '.join(sets)} WHERE id = ?", [*params, ident])
        elif kind in _COUNTERS:
            column, step = _COUNTERS[kind]
            cur.execute(
                f"UPDATE {table} SET {column} = {column} + ?, updated_at = ? WHERE id = ?",
                [step, message.get("at"), ident],
            )
        elif kind == "AuthoredBenchmark.Deleted":
            cur.execute(f"DELETE FROM {table} WHERE id = ?", [ident])
            cur.execute(f"DELETE FROM {cur.table('catalog_tags')} WHERE benchmark_id = ?", [ident])


_COUNTERS = {
    "AuthoredBenchmark.SubsetAttached": ("subset_count", 1),
    "AuthoredBenchmark.SubsetDetached": ("subset_count", -1),
    "AuthoredBenchmark.ImplRegistered": ("impl_count", 1),
    "AuthoredBenchmark.ImplRemoved": ("impl_count", -1),
}


def upsert_benchmark(cur: ViewCursor, row: dict[str, Any]) -> None:
    """Insert or refresh one benchmark row (a built-in one is re-seeded at every start)."""
    tags = list(row.get("tags") or [])
    cur.execute(
        f"INSERT INTO {cur.table('catalog_benchmarks')} (id, account, builtin, name, name_key, "
        "description, category, tags, source, subset_count, impl_count, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
        "name = excluded.name, name_key = excluded.name_key, "
        "description = excluded.description, category = excluded.category, "
        "tags = excluded.tags, source = excluded.source, "
        "subset_count = excluded.subset_count, impl_count = excluded.impl_count",
        [
            row["id"],
            row.get("account"),
            1 if row.get("type") == "builtin" else 0,
            row["name"],
            str(row["name"]).lower(),
            row.get("description") or "",
            row.get("category") or "",
            json.dumps(tags),
            row.get("source"),
            int(row.get("subset_count") or 0),
            int(row.get("impl_count") or 0),
            row.get("at") or "",
            row.get("at") or "",
        ],
    )
    _write_tags(cur, str(row["id"]), tags)


def _write_tags(cur: ViewCursor, benchmark_id: str, tags: Sequence[str]) -> None:
    table = cur.table("catalog_tags")
    cur.execute(f"DELETE FROM {table} WHERE benchmark_id = ?", [benchmark_id])
    for tag in sorted({t.strip().lower() for t in tags if t.strip()}):
        cur.execute(f"INSERT INTO {table} (benchmark_id, tag) VALUES (?, ?)", [benchmark_id, tag])


SORT_COLUMNS = {"created_at": "created_at", "name": "name_key"}


def _public_clause(cur: ViewCursor) -> str:
    runs = cur.table("run_summaries")
    return (
        f"EXISTS (SELECT 1 FROM {runs} r WHERE r.visibility = '{PUBLIC}' "
        "AND (r.benchmark_id = b.id OR r.launched_benchmark_id = b.id))"
    )


def list_benchmarks(
    cur: ViewCursor,
    *,
    account: str,
    tag: str | None,
    sort: str,
    limit: int,
    after: tuple[str, str] | None,
) -> list[dict[str, Any]]:
    """One page of the benchmarks ``account`` may see: its own, built-in and public ones.

    ``sort`` is a column name, ``-`` first for descending; ``after`` is the
    (sort key, id) of the previous page's last row. Rows carry ``visibility``.
    """
    descending = sort.startswith("-")
    column = SORT_COLUMNS[sort.lstrip("-")]
    public = _public_clause(cur)
    where = [f"(b.account = ? OR b.builtin = 1 OR {public})"]
    params: list[Any] = [account]
    if tag:
        where.append(
            f"EXISTS (SELECT 1 FROM {cur.table('catalog_tags')} t "
            "WHERE t.benchmark_id = b.id AND t.tag = ?)"
        )
        params.append(tag.strip().lower())
    if after is not None:
        op = "<" if descending else ">"
        where.append(f"(b.{column} {op} ? OR (b.{column} = ? AND b.id {op} ?))")
        params += [after[0], after[0], after[1]]
    order = "DESC" if descending else "ASC"
    cur.execute(
        f"SELECT b.*, CASE WHEN b.builtin = 1 OR {public} THEN '{PUBLIC}' ELSE 'private' END "
        f"AS visibility FROM {cur.table('catalog_benchmarks')} b WHERE {' AND '.join(where)} "
        f"ORDER BY b.{column} {order}, b.id {order} LIMIT ?",
        [*params, limit],
    )
    return cur.fetchall()


def sort_key(row: dict[str, Any], sort: str) -> str:
    """The value a page token carries for ``row`` under ``sort``."""
    return str(row[SORT_COLUMNS[sort.lstrip("-")]])
