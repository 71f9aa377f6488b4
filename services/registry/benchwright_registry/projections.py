"""The registry's read models.

* ``run_summaries``: runs keyed on (benchmark_id, subset_id, impl_id) with the
  model as its own column, from the run log. The shape columns are filled only
  when a run is terminal, so anything keyed on the run shape sees finished runs
  only. ``visibility`` follows ``RunUpdated``; a public run makes its benchmark
  public and holds what it ran (the checks below). Its ``run_tasks`` table holds
  each run's outcome per task index (``MaterializeTaskAggregated``), which is what
  a task-range read asks. ``run_scorers`` and ``scorer_code`` hold the scorers the
  run logs carry (``SetupArtifact``/``AtomizeArtifact`` code): which impl each run
  used, and each impl's code once, so an impl a pipeline wrote reads like an
  authored one (``find_observed_impl``).
* ``phase_cells``: the phase-cache index (decision 0012), which run recorded the
  work of which phase fingerprint, with each run's account and visibility.
* ``catalog``: one row per benchmark a listing can show (the built-in catalog,
  seeded at start, and every authored benchmark), from the registry's own
  event store: ``AuthoringApplication`` follows its notification log into it.
"""

import json
from collections.abc import Sequence
from typing import Any

from benchwright_shared.contracts.run_events import (
    AtomizeArtifact,
    BenchmarkResolved,
    DatasetTasksArtifact,
    DriverSelected,
    MaterializeTaskAggregated,
    PhaseFingerprint,
    PipelineFinished,
    RunDeleted,
    RunLaunched,
    RunUpdated,
    SetupArtifact,
    SutRef,
)
from benchwright_shared.hashing import sha256_hex
from benchwright_shared.projection import Projection, ViewCursor
from benchwright_shared.run_log import LogEntry, RunEventHandlers, run_event_table

PUBLIC = "public"
# The artifacts that carry a scorer's code -> the phase that wrote it.
SCORER_ARTIFACTS = run_event_table({SetupArtifact: "setup", AtomizeArtifact: "atomize"})


class RunSummariesProjection(Projection):
    name = "run_summaries"
    version = 5
    tables = {
        "run_summaries": (
            "run_id TEXT PRIMARY KEY, account TEXT NOT NULL, model TEXT NOT NULL, "
            "launched_benchmark_id TEXT, launched_subset_id TEXT, impl_seen TEXT, "
            "benchmark_id TEXT, subset_id TEXT, impl_id TEXT, status TEXT NOT NULL, "
            "pass_rate DOUBLE PRECISION, summary TEXT, "
            "visibility TEXT NOT NULL DEFAULT 'private', "
            "mode TEXT, parent_run_id TEXT, trials TEXT, total_tasks INTEGER, "
            "tasks INTEGER NOT NULL DEFAULT 0, passed INTEGER NOT NULL DEFAULT 0, "
            "failed INTEGER NOT NULL DEFAULT 0, errored INTEGER NOT NULL DEFAULT 0, "
            "fingerprint TEXT, started_at TEXT, finished_at TEXT, driver TEXT"
        ),
        # One row per task index a run has an aggregated result for (the latest wins).
        "run_tasks": (
            "run_id TEXT NOT NULL, idx INTEGER NOT NULL, outcome TEXT NOT NULL, "
            "PRIMARY KEY (run_id, idx)"
        ),
        # Which impls a run's log says it scored with (Setup's pinned one, Atomize's own).
        "run_scorers": (
            "run_id TEXT NOT NULL, impl_id TEXT NOT NULL, PRIMARY KEY (run_id, impl_id)"
        ),
        # Each impl's code once, with the run (and phase, Driver) that first recorded it.
        "scorer_code": (
            "impl_id TEXT PRIMARY KEY, benchmark_id TEXT NOT NULL, subset_id TEXT, "
            "run_id TEXT NOT NULL, phase TEXT NOT NULL, driver TEXT, kind TEXT, "
            "code TEXT NOT NULL, sha256 TEXT NOT NULL, recorded_at TEXT"
        ),
    }
    indexes = (
        "run_summaries(benchmark_id, subset_id, impl_id)",
        "run_summaries(visibility)",
        "run_summaries(subset_id, model)",
        "run_summaries(impl_id, model)",
        "run_scorers(impl_id)",
    )

    def apply(self, cur: ViewCursor, message: dict[str, Any]) -> None:
        _SUMMARIES.dispatch(cur, message)


# -- run_summaries: one handler per run-log type it reads; the others change nothing ----
_SUMMARIES: RunEventHandlers[ViewCursor] = RunEventHandlers()


@_SUMMARIES.on(RunLaunched)
def _launched(cur: ViewCursor, e: LogEntry[RunLaunched]) -> None:
    d = e.data
    cur.execute(
        f"INSERT INTO {cur.table('run_summaries')} (run_id, account, model, "
        "launched_benchmark_id, launched_subset_id, impl_seen, status, mode, parent_run_id, "
        "trials, started_at) VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?) "
        "ON CONFLICT (run_id) DO NOTHING",
        [
            e.run_id,
            d.account,
            _model(d.sut) or "",
            d.benchmark_id,
            d.subset_id,
            d.impl_id,
            d.mode,
            d.parent_run_id,
            json.dumps(d.trials, sort_keys=True) if d.trials else None,
            _ts(e),
        ],
    )


@_SUMMARIES.on(BenchmarkResolved)
def _resolved(cur: ViewCursor, e: LogEntry[BenchmarkResolved]) -> None:
    # A natural-language launch learns its benchmark (and maybe model) in Find.
    d = e.data
    cur.execute(
        f"UPDATE {cur.table('run_summaries')} SET launched_benchmark_id = ?, "
        "launched_subset_id = ?, model = COALESCE(NULLIF(?, ''), model) WHERE run_id = ?",
        [d.benchmark_id, d.subset_id, _model(d.sut), e.run_id],
    )


@_SUMMARIES.on(DriverSelected)
def _driver(cur: ViewCursor, e: LogEntry[DriverSelected]) -> None:
    cur.execute(
        f"UPDATE {cur.table('run_summaries')} SET driver = ? WHERE run_id = ?",
        [e.data.driver, e.run_id],
    )


@_SUMMARIES.on(SetupArtifact, AtomizeArtifact)
def _scorer(cur: ViewCursor, e: LogEntry[SetupArtifact | AtomizeArtifact]) -> None:
    d = e.data
    if d.impl_id and d.code:
        _record_scorer(cur, e)
    if d.impl_id:
        cur.execute(
            f"UPDATE {cur.table('run_summaries')} SET impl_seen = ? WHERE run_id = ?",
            [d.impl_id, e.run_id],
        )


@_SUMMARIES.on(DatasetTasksArtifact)
def _dataset(cur: ViewCursor, e: LogEntry[DatasetTasksArtifact]) -> None:
    d, table = e.data, cur.table("run_summaries")
    if d.subset_id:
        cur.execute(
            f"UPDATE {table} SET launched_subset_id = ? WHERE run_id = ?", [d.subset_id, e.run_id]
        )
    if d.total_tasks is not None:
        cur.execute(
            f"UPDATE {table} SET total_tasks = ? WHERE run_id = ?", [int(d.total_tasks), e.run_id]
        )


@_SUMMARIES.on(MaterializeTaskAggregated)
def _task(cur: ViewCursor, e: LogEntry[MaterializeTaskAggregated]) -> None:
    cur.execute(
        f"INSERT INTO {cur.table('run_tasks')} (run_id, idx, outcome) VALUES (?, ?, ?) "
        "ON CONFLICT (run_id, idx) DO UPDATE SET outcome = excluded.outcome",
        [e.run_id, int(e.data.index), str(e.data.outcome or "err")],
    )


@_SUMMARIES.on(RunUpdated)
def _updated(cur: ViewCursor, e: LogEntry[RunUpdated]) -> None:
    if e.data.visibility:
        cur.execute(
            f"UPDATE {cur.table('run_summaries')} SET visibility = ? WHERE run_id = ?",
            [e.data.visibility, e.run_id],
        )


@_SUMMARIES.on(RunDeleted)
def _deleted(cur: ViewCursor, e: LogEntry[RunDeleted]) -> None:
    run_id, scorers = e.run_id, cur.table("run_scorers")
    cur.execute(f"DELETE FROM {cur.table('run_summaries')} WHERE run_id = ?", [run_id])
    cur.execute(f"DELETE FROM {cur.table('run_tasks')} WHERE run_id = ?", [run_id])
    cur.execute(f"DELETE FROM {scorers} WHERE run_id = ?", [run_id])
    # Code no remaining run used goes with its last run.
    cur.execute(
        f"DELETE FROM {cur.table('scorer_code')} WHERE impl_id NOT IN "
        f"(SELECT impl_id FROM {scorers})"
    )


@_SUMMARIES.on(PipelineFinished)
def _finished(cur: ViewCursor, e: LogEntry[PipelineFinished]) -> None:
    d = e.data
    summary = d.summary or {}
    cur.execute(
        f"UPDATE {cur.table('run_summaries')} SET status = ?, pass_rate = ?, summary = ?, "
        "tasks = ?, passed = ?, failed = ?, errored = ?, fingerprint = ?, finished_at = ?, "
        "benchmark_id = launched_benchmark_id, subset_id = launched_subset_id, "
        "impl_id = impl_seen WHERE run_id = ?",
        [
            d.status,
            summary.get("pass_rate"),
            json.dumps(summary),
            int(summary.get("total") or 0),
            int(summary.get("passed") or 0),
            int(summary.get("failed") or 0),
            int(summary.get("errored") or 0),
            d.fingerprint,
            _ts(e),
            e.run_id,
        ],
    )


def _model(sut: SutRef | None) -> str | None:
    """``provider/model`` of a run's system under test."""
    return f"{sut.provider}/{sut.model}" if sut else None


def _record_scorer(cur: ViewCursor, e: LogEntry[SetupArtifact | AtomizeArtifact]) -> None:
    """Note that the run scored with the artifact's impl, and keep the impl's code.

    The first run to record an impl's code is its writer (an inherited artifact names
    the run it came from); the same code under the same benchmark is the same impl id,
    so later runs only add their use.
    """
    d = e.data
    impl_id, code = str(d.impl_id), str(d.code)
    cur.execute(
        f"INSERT INTO {cur.table('run_scorers')} (run_id, impl_id) VALUES (?, ?) "
        "ON CONFLICT DO NOTHING",
        [e.run_id, impl_id],
    )
    cur.execute(
        "SELECT launched_benchmark_id, launched_subset_id, driver "
        f"FROM {cur.table('run_summaries')} WHERE run_id = ?",
        [e.run_id],
    )
    run = cur.fetchone() or {}
    inherited = d.inherited_from
    cur.execute(
        f"INSERT INTO {cur.table('scorer_code')} (impl_id, benchmark_id, subset_id, run_id, "
        "phase, driver, kind, code, sha256, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (impl_id) DO NOTHING",
        [
            impl_id,
            run.get("launched_benchmark_id") or impl_id.rsplit(":", 1)[0],
            run.get("launched_subset_id"),
            str(inherited or e.run_id),
            SCORER_ARTIFACTS[e.type],
            None if inherited else run.get("driver"),
            d.kind if isinstance(d, AtomizeArtifact) else None,
            code,
            sha256_hex(code),
            _ts(e),
        ],
    )


def find_observed_impl(cur: ViewCursor, impl_id: str, account: str) -> dict[str, Any] | None:
    """An impl a run log recorded, if ``account`` ran with it or one of its runs is public.

    The row is ``scorer_code``'s, with ``public`` (whether a public run used it).
    """
    runs, scorers = cur.table("run_summaries"), cur.table("run_scorers")
    cur.execute(
        f"SELECT c.*, (SELECT COUNT(*) FROM {scorers} s JOIN {runs} r ON r.run_id = s.run_id "
        f"WHERE s.impl_id = c.impl_id AND r.visibility = ?) AS public_runs, "
        f"(SELECT COUNT(*) FROM {scorers} s JOIN {runs} r ON r.run_id = s.run_id "
        f"WHERE s.impl_id = c.impl_id AND r.account = ?) AS own_runs "
        f"FROM {cur.table('scorer_code')} c WHERE c.impl_id = ?",
        [PUBLIC, account, impl_id],
    )
    row = cur.fetchone()
    if row is None or not (int(row["public_runs"]) or int(row["own_runs"])):
        return None
    return {**row, "public": bool(int(row["public_runs"]))}


def _ts(entry: LogEntry[Any]) -> str | None:
    """When a run event was recorded, as the log says (so a rebuild writes the same)."""
    return str(entry.ts) if entry.ts else None


class PhaseCellsProjection(Projection):
    """The phase-cache index: which run did which phase's work for which fingerprint.

    A cell is a ``PhaseFingerprint`` without ``cache_hit``. Each run's account and
    visibility ride along, so a lookup can offer the caller's own cells and the
    cells of public runs; a deleted run takes its cells with it.
    """

    name = "phase_cells"
    version = 1
    tables = {
        "cell_runs": (
            "run_id TEXT PRIMARY KEY, account TEXT NOT NULL, "
            "visibility TEXT NOT NULL DEFAULT 'private'"
        ),
        "phase_cells": (
            "phase TEXT NOT NULL, fingerprint TEXT NOT NULL, run_id TEXT NOT NULL, "
            "recorded_at TEXT NOT NULL, PRIMARY KEY (phase, fingerprint, run_id)"
        ),
    }
    indexes = ("phase_cells(phase, fingerprint)",)

    def apply(self, cur: ViewCursor, message: dict[str, Any]) -> None:
        _CELLS.dispatch(cur, message)


_CELLS: RunEventHandlers[ViewCursor] = RunEventHandlers()


@_CELLS.on(RunLaunched)
def _cell_run(cur: ViewCursor, e: LogEntry[RunLaunched]) -> None:
    cur.execute(
        f"INSERT INTO {cur.table('cell_runs')} (run_id, account) VALUES (?, ?) "
        "ON CONFLICT DO NOTHING",
        [e.run_id, e.data.account],
    )


@_CELLS.on(PhaseFingerprint)
def _cell(cur: ViewCursor, e: LogEntry[PhaseFingerprint]) -> None:
    if not e.data.cache_hit:
        cur.execute(
            f"INSERT INTO {cur.table('phase_cells')} VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [e.data.phase, e.data.fingerprint, e.run_id, str(e.ts or "")],
        )


@_CELLS.on(RunUpdated)
def _cell_visibility(cur: ViewCursor, e: LogEntry[RunUpdated]) -> None:
    if e.data.visibility:
        cur.execute(
            f"UPDATE {cur.table('cell_runs')} SET visibility = ? WHERE run_id = ?",
            [e.data.visibility, e.run_id],
        )


@_CELLS.on(RunDeleted)
def _cells_deleted(cur: ViewCursor, e: LogEntry[RunDeleted]) -> None:
    cur.execute(f"DELETE FROM {cur.table('phase_cells')} WHERE run_id = ?", [e.run_id])
    cur.execute(f"DELETE FROM {cur.table('cell_runs')} WHERE run_id = ?", [e.run_id])


def find_cell(
    cur: ViewCursor, phase: str, fingerprint: str, account: str, exclude_run_id: str | None = None
) -> tuple[str, bool] | None:
    """The run whose cell ``phase``/``fingerprint`` a run of ``account`` may reuse, and
    whether it is another account's public run.

    The account's own most recent cell first (its data and keys are its own); else
    the most recent cell of a public run of any account.
    """
    cur.execute(
        f"SELECT c.run_id, r.account FROM {cur.table('phase_cells')} c "
        f"JOIN {cur.table('cell_runs')} r ON r.run_id = c.run_id "
        "WHERE c.phase = ? AND c.fingerprint = ? AND c.run_id <> ? "
        "AND (r.account = ? OR r.visibility = ?) "
        "ORDER BY CASE WHEN r.account = ? THEN 0 ELSE 1 END, c.recorded_at DESC, c.run_id "
        "LIMIT 1",
        [phase, fingerprint, exclude_run_id or "", account, PUBLIC, account],
    )
    row = cur.fetchone()
    if row is None:
        return None
    return str(row["run_id"]), str(row["account"]) != account


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
