"""Reads over runs: leaderboards, run listings, same-impl comparisons, task ranges,
impls frozen from a run, and the phase-cache index.

Everything here reads the ``run_summaries`` and ``phase_cells`` views, which
follow the run log (``projections.py``). A run is keyed on (benchmark_id,
subset_id, impl_id) with the model as its own column, and only once it is
terminal (concepts §6, §7). Who sees what:

* a listing (``runs``, ``compare``, ``task_range``) shows the caller's own runs,
  whatever their visibility, and other accounts' public runs;
* a leaderboard shows public runs only: a subset of a private benchmark has none;
* a subset, impl or benchmark the caller may not read answers 404 exactly like a
  missing one, unless the caller can see runs that reference it (a pipeline-written
  impl is never registered, yet its runs list by it);
* an impl a pipeline wrote (a run log's Atomize or Setup code, ``scorer_code``) reads
  like an authored one (``observed_impl``): the caller's if one of its runs used it,
  everyone's once one of its runs is public;
* a run over a subset whose rows carry a kind (``input.kind``, the composite shape)
  carries a per-kind breakdown (``by_kind``) in listings and on the leaderboard.

Calls are synchronous: the service runs them on its store thread.
"""

import json
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from benchwright_registry.application.authoring import (
    AuthoringApplication,
    decode_page_token,
    encode_page_token,
)
from benchwright_registry.domain import Catalog
from benchwright_registry.domain.authoring import not_found
from benchwright_registry.projections import PUBLIC, find_cell, find_observed_impl
from benchwright_shared.contracts.registry import CreateImpl, ImplView
from benchwright_shared.contracts.registry_reads import (
    CompareImpl,
    Comparison,
    ComparisonRow,
    CreateImplFromRun,
    FindPhaseCell,
    KindTally,
    Leaderboard,
    LeaderboardRow,
    ListRegistryRuns,
    PhaseCell,
    RangeRun,
    ReadLeaderboard,
    ReadTaskRange,
    RegistryRun,
    RegistryRunList,
    TaskRange,
)
from benchwright_shared.contracts.run_events import (
    AtomizeArtifact,
    RunEvent,
    RunLaunched,
    SetupArtifact,
)
from benchwright_shared.projection import ProjectionStore, ViewCursor
from benchwright_shared.refusal import Refused
from benchwright_shared.run_log import parse_run_event, run_event_type
from benchwright_shared.stats import wilson

MAX_PAGE = 100
# The widest task range one read answers.
MAX_RANGE = 1000
TERMINAL = ("ok", "error")
# The run-log events that say whose a run is and which scorer it used.
SCORER_EVENTS = (SetupArtifact, AtomizeArtifact)
FROM_RUN_EVENTS = (
    run_event_type(RunLaunched),
    run_event_type(SetupArtifact),
    run_event_type(AtomizeArtifact),
)
RUN_COLUMNS = (
    "run_id, account, model, benchmark_id, subset_id, impl_id, status, mode, visibility, "
    "pass_rate, tasks, passed, failed, errored, trials, fingerprint, parent_run_id, "
    "started_at, finished_at, total_tasks"
)
RUNS_SORT = "-finished_at"
# Subset snapshots whose row kinds are kept in memory (snapshots never change).
KINDS_CACHE_SIZE = 64
OUTCOMES = ("pass", "fail", "err")


def _invalid(detail: str, field: str) -> Refused:
    return Refused(400, "invalid argument", detail, field=field, code="invalid_argument")


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


def _time(value: Any) -> datetime | None:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")) if value else None


def row_kind(row: dict[str, Any]) -> str | None:
    """A task row's kind: ``input.kind`` (or ``expected.kind``), as composites carry it."""
    for part in ("input", "expected"):
        value = row.get(part)
        if isinstance(value, dict) and isinstance(value.get("kind"), str) and value["kind"]:
            return str(value["kind"])
    return None


def _tally(counts: dict[str, int]) -> KindTally:
    judged = counts["pass"] + counts["fail"]
    return KindTally(
        passed=counts["pass"],
        failed=counts["fail"],
        errored=counts["err"],
        total=sum(counts.values()),
        pass_rate=counts["pass"] / judged if judged else None,
    )


def _run(
    row: dict[str, Any], account: str, by_kind: dict[str, KindTally] | None = None
) -> RegistryRun:
    return RegistryRun(
        run_id=str(row["run_id"]),
        model=str(row["model"]),
        benchmark_id=row["benchmark_id"],
        subset_id=row["subset_id"],
        impl_id=row["impl_id"],
        status=str(row["status"]),
        mode=row["mode"],
        visibility=row["visibility"],
        mine=row["account"] == account,
        pass_rate=row["pass_rate"],
        tasks=int(row["tasks"] or 0),
        passed=int(row["passed"] or 0),
        failed=int(row["failed"] or 0),
        errored=int(row["errored"] or 0),
        trials=json.loads(row["trials"]) if row["trials"] else None,
        fingerprint=row["fingerprint"],
        derived_from=row["parent_run_id"],
        started_at=_time(row["started_at"]),
        finished_at=_time(row["finished_at"]),
        by_kind=by_kind,
    )


class RegistryReads:
    """What the registry answers about runs: the views over the run log, checked against
    what the caller may read in the catalog and the authored store."""

    def __init__(
        self,
        catalog: Catalog,
        authoring: AuthoringApplication | None,
        views: ProjectionStore | None = None,
    ) -> None:
        self.catalog = catalog
        self.authoring = authoring
        self._views = views if views is not None else (authoring.views if authoring else None)
        # snapshot id -> each row's kind by index (None: its rows carry no kinds).
        self._kinds: OrderedDict[str, dict[int, str] | None] = OrderedDict()

    @property
    def views(self) -> ProjectionStore:
        if self._views is None:
            raise Refused(503, "run views unavailable", "this registry keeps no views")
        return self._views

    # -- who may see what ---------------------------------------------------------------
    def _referenced(self, account: str, column: str, value: str) -> bool:
        """Whether the caller can see a finished run whose ``column`` is ``value``."""

        def find(cur: ViewCursor) -> bool:
            cur.execute(
                f"SELECT 1 AS found FROM {cur.table('run_summaries')} WHERE {column} = ? "
                "AND (account = ? OR visibility = ?) LIMIT 1",
                [value, account, PUBLIC],
            )
            return cur.fetchone() is not None

        return self.views.read(find)

    def _subset_scope(self, account: str, subset_id: str) -> tuple[str | None, list[str]]:
        """The benchmark and the snapshot ids ``subset_id`` covers, if the caller may read
        it: a subset's own id covers every snapshot it has had, a snapshot id just itself."""
        builtin = self.catalog.subsets.get(subset_id)
        if builtin is not None:
            return builtin.benchmark_id, [subset_id]
        if self.authoring is not None:
            try:
                view, _ = self.authoring.subset(account, subset_id)
            except Refused:
                pass
            else:
                if subset_id != view.id:
                    return view.benchmark_id, [subset_id]
                return view.benchmark_id, [s.id for s in view.snapshots] or [view.snapshot_id]
        if self._referenced(account, "subset_id", subset_id):
            return None, [subset_id]
        raise not_found("subset", subset_id, "subset_id")

    def _check_impl(self, account: str, impl_id: str) -> None:
        if impl_id in self.catalog.impls:
            return
        if self.authoring is not None:
            try:
                self.authoring.impl(account, impl_id)
                return
            except Refused:
                pass
        if self._observed(account, impl_id) is not None:
            return
        if not self._referenced(account, "impl_id", impl_id):
            raise not_found("impl", impl_id, "impl_id")

    def _check_benchmark(self, account: str, benchmark_id: str) -> None:
        if benchmark_id in self.catalog.benchmarks:
            return
        if self.authoring is not None:
            try:
                self.authoring.benchmark(account, benchmark_id)
                return
            except Refused:
                pass
        if not self._referenced(account, "benchmark_id", benchmark_id):
            raise not_found("benchmark", benchmark_id, "benchmark_id")

    # -- listings -------------------------------------------------------------------------
    def _visible_runs(
        self,
        account: str,
        where: Sequence[str],
        params: Sequence[Any],
        *,
        limit: int | None = None,
        page_token: str | None = None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Finished runs the caller may see, newest first, one page (all without a limit)."""
        after = decode_page_token(page_token, RUNS_SORT) if page_token else None
        clauses = [
            "(account = ? OR visibility = ?)",
            f"status IN ({_marks(TERMINAL)})",
            *where,
        ]
        args: list[Any] = [account, PUBLIC, *TERMINAL, *params]
        if after is not None:
            clauses.append(
                "(COALESCE(finished_at, '') < ? OR (COALESCE(finished_at, '') = ? AND run_id < ?))"
            )
            args += [after[0], after[0], after[1]]
        tail = ""
        if limit is not None:
            tail = " LIMIT ?"
            args.append(limit + 1)

        def select(cur: ViewCursor) -> list[dict[str, Any]]:
            condition = " AND ".join(clauses).replace("{run_tasks}", cur.table("run_tasks"))
            cur.execute(
                f"SELECT {RUN_COLUMNS} FROM {cur.table('run_summaries')} r "
                f"WHERE {condition} "
                f"ORDER BY COALESCE(finished_at, '') DESC, run_id DESC{tail}",
                args,
            )
            return cur.fetchall()

        rows = self.views.read(select)
        if limit is None or len(rows) <= limit:
            return rows, None
        page = rows[:limit]
        last = page[-1]
        return page, encode_page_token(RUNS_SORT, str(last["finished_at"] or ""), last["run_id"])

    def runs(self, query: ListRegistryRuns) -> RegistryRunList:
        """Finished runs against a subset (any of its snapshots) or scored by an impl that
        the caller may see: its own, and public ones. Newest first, paged."""
        where: list[str] = []
        params: list[Any] = []
        if query.subset_id is not None:
            _, snapshots = self._subset_scope(query.account, query.subset_id)
            where.append(f"subset_id IN ({_marks(snapshots)})")
            params += snapshots
        if query.impl_id is not None:
            self._check_impl(query.account, query.impl_id)
            where.append("impl_id = ?")
            params.append(query.impl_id)
        if not where:
            raise _invalid("name a subset or an impl", "subset_id")
        if query.model is not None:
            where.append("model = ?")
            params.append(query.model)
        limit = max(1, min(query.limit, MAX_PAGE))
        rows, token = self._visible_runs(
            query.account, where, params, limit=limit, page_token=query.page_token
        )
        kinds = self._kind_tallies(rows)
        return RegistryRunList(
            runs=[_run(r, query.account, kinds.get(str(r["run_id"]))) for r in rows],
            next_page_token=token,
        )

    # -- leaderboards ---------------------------------------------------------------------
    def leaderboard(self, query: ReadLeaderboard) -> Leaderboard:
        """The best pass rate per model across the subset's public runs, under any impl.

        Ties go to the run over more tasks, then to the earlier one. Rows are ranked
        by pass rate (equal rates share a rank). Runs without a pass rate (every task
        errored) do not place.
        """
        benchmark_id, snapshots = self._subset_scope(query.account, query.subset_id)

        def select(cur: ViewCursor) -> list[dict[str, Any]]:
            cur.execute(
                f"SELECT {RUN_COLUMNS} FROM {cur.table('run_summaries')} "
                f"WHERE visibility = ? AND status = 'ok' AND pass_rate IS NOT NULL "
                f"AND subset_id IN ({_marks(snapshots)})",
                [PUBLIC, *snapshots],
            )
            return cur.fetchall()

        found = sorted(
            self.views.read(select),
            key=lambda r: (
                -float(r["pass_rate"]),
                -int(r["tasks"] or 0),
                str(r["finished_at"] or ""),
                str(r["run_id"]),
            ),
        )
        best: dict[str, dict[str, Any]] = {}
        counts: dict[str, int] = {}
        for row in found:
            best.setdefault(row["model"], row)
            counts[row["model"]] = counts.get(row["model"], 0) + 1
        kinds = self._kind_tallies(list(best.values()))
        rows: list[LeaderboardRow] = []
        for position, row in enumerate(best.values(), start=1):
            tied = bool(rows) and rows[-1].pass_rate == float(row["pass_rate"])
            passed, failed = int(row["passed"] or 0), int(row["failed"] or 0)
            low, high = wilson(passed, passed + failed) or (None, None)
            rows.append(
                LeaderboardRow(
                    rank=rows[-1].rank if tied else position,
                    model=str(row["model"]),
                    pass_rate=float(row["pass_rate"]),
                    pass_rate_low=low,
                    pass_rate_high=high,
                    run_id=str(row["run_id"]),
                    impl_id=row["impl_id"],
                    subset_id=row["subset_id"],
                    tasks=int(row["tasks"] or 0),
                    passed=int(row["passed"] or 0),
                    failed=int(row["failed"] or 0),
                    errored=int(row["errored"] or 0),
                    runs=counts[row["model"]],
                    finished_at=_time(row["finished_at"]),
                    by_kind=kinds.get(str(row["run_id"])),
                )
            )
        if benchmark_id is None and found:
            benchmark_id = found[0]["benchmark_id"]
        return Leaderboard(
            subset_id=query.subset_id,
            benchmark_id=benchmark_id,
            snapshot_ids=snapshots,
            rows=rows,
        )

    # -- per-kind breakdowns ----------------------------------------------------------------
    def _snapshot_kinds(self, snapshot_id: str) -> dict[int, str] | None:
        """Each row's kind by index, for an authored snapshot whose rows carry one.

        Kept in memory (a snapshot never changes); the built-in catalog's rows carry
        no kinds and are not read.
        """
        if snapshot_id in self._kinds:
            self._kinds.move_to_end(snapshot_id)
            return self._kinds[snapshot_id]
        rows = None
        if snapshot_id not in self.catalog.subsets and self.authoring is not None:
            rows = self.authoring.snapshot_rows(snapshot_id)
        kinds = {i: k for i, row in enumerate(rows or []) if (k := row_kind(row))} or None
        self._kinds[snapshot_id] = kinds
        while len(self._kinds) > KINDS_CACHE_SIZE:
            self._kinds.popitem(last=False)
        return kinds

    def _kind_tallies(self, rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, KindTally]]:
        """Per run of ``rows`` (run views) over a subset whose rows carry kinds: its
        outcomes per kind, from ``run_tasks``. One query for all of them."""
        kinds_of: dict[str, dict[int, str]] = {}
        for row in rows:
            kinds = self._snapshot_kinds(str(row["subset_id"])) if row["subset_id"] else None
            if kinds:
                kinds_of[str(row["run_id"])] = kinds
        if not kinds_of:
            return {}
        run_ids = list(kinds_of)

        def select(cur: ViewCursor) -> list[dict[str, Any]]:
            cur.execute(
                f"SELECT run_id, idx, outcome FROM {cur.table('run_tasks')} "
                f"WHERE run_id IN ({_marks(run_ids)})",
                run_ids,
            )
            return cur.fetchall()

        counts: dict[str, dict[str, dict[str, int]]] = {}
        for task in self.views.read(select):
            run_id = str(task["run_id"])
            kind = kinds_of[run_id].get(int(task["idx"]))
            outcome = str(task["outcome"])
            if kind is None or outcome not in OUTCOMES:
                continue
            per_kind = counts.setdefault(run_id, {})
            per_kind.setdefault(kind, dict.fromkeys(OUTCOMES, 0))[outcome] += 1
        return {
            run_id: {kind: _tally(c) for kind, c in sorted(per_kind.items())}
            for run_id, per_kind in counts.items()
        }

    # -- impls the pipeline wrote ------------------------------------------------------------
    def _observed(self, account: str, impl_id: str) -> dict[str, Any] | None:
        return self.views.read(lambda cur: find_observed_impl(cur, impl_id, account))

    def observed_impl(self, account: str, impl_id: str) -> tuple[ImplView, str] | None:
        """An impl a run's log recorded (the code Atomize wrote, or Setup installed) and
        its code, if the caller ran with it or one of its runs is public.

        Its id is the pipeline's, ``<benchmark_id>:<12 hex of sha256(code)>``, the
        same address ``impls.create`` gives the same code under the same benchmark.
        The label says which Driver wrote it for which run.
        """
        found = self._observed(account, impl_id)
        if found is None:
            return None
        run_id, driver, kind = found["run_id"], found["driver"], found["kind"]
        if found["phase"] == "atomize":
            by = f"the {driver} Driver" if driver else "a Driver"
            label = f"written by {by} for run {run_id}"
            description = (
                f"the scorer Atomize wrote for run {run_id}"
                + (f" ({kind} tasks)" if kind else "")
                + "; recorded in the run's log"
            )
        else:
            label = f"installed by Setup for run {run_id}"
            description = f"the scorer run {run_id} installed; recorded in the run's log"
        code = str(found["code"])
        view = ImplView(
            id=impl_id,
            benchmark_id=str(found["benchmark_id"]),
            subset_id=found["subset_id"],
            label=label,
            description=description,
            official=False,
            sha256=str(found["sha256"]),
            size_bytes=len(code.encode()),
            visibility="public" if found["public"] else "private",
            created_at=_time(found["recorded_at"]),
        )
        return view, code

    # -- same-impl comparison ---------------------------------------------------------------
    def compare(self, query: CompareImpl) -> Comparison:
        """The runs scored by one impl, side by side: one row per (subset snapshot, trials,
        model), so every number in a row's group was measured the same way."""
        self._check_impl(query.account, query.impl_id)
        where, params = ["impl_id = ?"], [query.impl_id]
        if query.subset_id is not None:
            try:
                _, snapshots = self._subset_scope(query.account, query.subset_id)
            except Refused:
                snapshots = [query.subset_id]
            where.append(f"subset_id IN ({_marks(snapshots)})")
            params += snapshots
        found, _ = self._visible_runs(query.account, where, params)
        groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        for row in found:  # newest first
            key = (str(row["subset_id"] or ""), str(row["trials"] or ""), str(row["model"]))
            groups.setdefault(key, []).append(row)
        rows: list[ComparisonRow] = []
        for (_, trials, model), runs in groups.items():
            rated = [r for r in runs if r["pass_rate"] is not None]
            top = max(
                rated, key=lambda r: (float(r["pass_rate"]), int(r["tasks"] or 0)), default=None
            )
            best = top or runs[0]
            rows.append(
                ComparisonRow(
                    model=model,
                    subset_id=runs[0]["subset_id"],
                    trials=json.loads(trials) if trials else None,
                    runs=len(runs),
                    best_pass_rate=float(top["pass_rate"]) if top else None,
                    mean_pass_rate=(
                        sum(float(r["pass_rate"]) for r in rated) / len(rated) if rated else None
                    ),
                    best_run_id=str(best["run_id"]),
                    latest_run_id=str(runs[0]["run_id"]),
                    tasks=int(best["tasks"] or 0),
                    run_ids=[str(r["run_id"]) for r in runs],
                    latest_finished_at=_time(runs[0]["finished_at"]),
                )
            )
        rows.sort(
            key=lambda r: (
                r.subset_id or "",
                json.dumps(r.trials, sort_keys=True),
                -(r.best_pass_rate if r.best_pass_rate is not None else -1.0),
                r.model,
            )
        )
        benchmark_id = found[0]["benchmark_id"] if found else None
        if benchmark_id is None and ":" in query.impl_id:
            benchmark_id = query.impl_id.split(":", 1)[0]
        return Comparison(impl_id=query.impl_id, benchmark_id=benchmark_id, rows=rows)

    # -- task ranges ----------------------------------------------------------------------
    def task_range(self, query: ReadTaskRange) -> TaskRange:
        """Runs of a benchmark with results for task indices ``start`` .. ``end - 1`` (the
        row indices of the snapshot each run pinned), newest first, with each run's
        outcomes there. ``complete`` says a run has every index of the range its subset
        holds."""
        if query.start < 0:
            raise _invalid("start must be 0 or more", "start")
        if query.end <= query.start:
            raise _invalid("end must be greater than start (the range is start .. end - 1)", "end")
        if query.end - query.start > MAX_RANGE:
            raise _invalid(f"a range spans at most {MAX_RANGE} tasks", "end")
        self._check_benchmark(query.account, query.benchmark_id)
        where = [
            "benchmark_id = ?",
            "EXISTS (SELECT 1 FROM {run_tasks} t WHERE t.run_id = r.run_id AND t.idx >= ? "
            "AND t.idx < ?)",
        ]
        params: list[Any] = [query.benchmark_id, query.start, query.end]
        if query.subset_id is not None:
            _, snapshots = self._subset_scope(query.account, query.subset_id)
            where.append(f"subset_id IN ({_marks(snapshots)})")
            params += snapshots
        limit = max(1, min(query.limit, MAX_PAGE))
        rows, token = self._visible_runs(
            query.account, where, params, limit=limit, page_token=query.page_token
        )
        outcomes = self._outcomes([str(r["run_id"]) for r in rows], query.start, query.end)
        runs: list[RangeRun] = []
        for row in rows:
            seen = outcomes.get(str(row["run_id"]), {})
            total = row["total_tasks"]
            wanted = len(range(query.start, min(query.end, int(total)) if total else query.end))
            counts = {o: sum(1 for v in seen.values() if v == o) for o in ("pass", "fail", "err")}
            judged = counts["pass"] + counts["fail"]
            runs.append(
                RangeRun(
                    **_run(row, query.account).model_dump(),
                    covered=len(seen),
                    complete=wanted > 0 and len(seen) >= wanted,
                    range_passed=counts["pass"],
                    range_failed=counts["fail"],
                    range_errored=counts["err"],
                    range_pass_rate=counts["pass"] / judged if judged else None,
                    outcomes={str(i): seen[i] for i in sorted(seen)},
                )
            )
        return TaskRange(
            benchmark_id=query.benchmark_id,
            start=query.start,
            end=query.end,
            runs=runs,
            next_page_token=token,
        )

    def _outcomes(self, run_ids: list[str], start: int, end: int) -> dict[str, dict[int, str]]:
        if not run_ids:
            return {}

        def select(cur: ViewCursor) -> list[dict[str, Any]]:
            cur.execute(
                f"SELECT run_id, idx, outcome FROM {cur.table('run_tasks')} "
                f"WHERE run_id IN ({_marks(run_ids)}) AND idx >= ? AND idx < ?",
                [*run_ids, start, end],
            )
            return cur.fetchall()

        found: dict[str, dict[int, str]] = {}
        for row in self.views.read(select):
            found.setdefault(str(row["run_id"]), {})[int(row["idx"])] = str(row["outcome"])
        return found

    # -- impls from runs ------------------------------------------------------------------
    def impl_from_run(
        self, command: CreateImplFromRun, events: Sequence[RunEvent]
    ) -> tuple[ImplView, bool]:
        """Register the scorer a run of the caller's used (the last ``SetupArtifact`` or
        ``AtomizeArtifact`` with code in its log) as an impl, exactly as ``impls.create``
        would: the same code under the same benchmark is the same impl.

        ``events`` is the run's log filtered to ``FROM_RUN_EVENTS``; another account's
        run reads as missing.
        """
        if self.authoring is None:
            raise Refused(503, "authoring unavailable", "this registry has no store")
        entries = [entry.data for entry in map(parse_run_event, events) if entry is not None]
        launched = next((d for d in entries if isinstance(d, RunLaunched)), None)
        if launched is None or launched.account != command.account:
            raise not_found("run", command.run_id, "from_run")
        scorers = [d for d in entries if isinstance(d, SCORER_EVENTS) and d.code]
        if not scorers:
            raise Refused(
                409,
                "run has no scorer",
                f"run {command.run_id!r} has not recorded scorer code (Setup or Atomize)",
                field="from_run",
                code="no_scorer",
            )
        scorer = scorers[-1]
        source = scorer.impl_id or "unregistered"
        return self.authoring.create_impl(
            CreateImpl(
                account=command.account,
                admin=command.admin,
                benchmark_id=command.benchmark_id,
                subset_id=command.subset_id,
                label=command.label or f"from run {command.run_id}",
                description=command.description
                or f"the scorer run {command.run_id} used ({source})",
                code=str(scorer.code),
            )
        )

    # -- the phase-cache index ------------------------------------------------------------
    def phase_cell(self, query: FindPhaseCell) -> PhaseCell:
        """The run whose work for ``phase``/``fingerprint`` a run of ``account`` may copy:
        its own most recent, else a public run's (decision 0012)."""
        found = self.views.read(
            lambda cur: find_cell(
                cur, query.phase, query.fingerprint, query.account, query.exclude_run_id
            )
        )
        if found is None:
            return PhaseCell()
        run_id, public = found
        return PhaseCell(run_id=run_id, public=public)
