"""The gateway's read models: runs and their task rows, built from the run log.

Updates are order-insensitive where JetStream may reorder (redelivery): a
run's terminal status is never overwritten by an earlier event, and task rows
are upserts keyed on (run, invocation, index).
"""

import json
from collections.abc import Callable, Sequence
from typing import Any

from benchwright_gateway.comparison import TaskResult
from benchwright_gateway.labels_view import LABELS_TABLE, record_label
from benchwright_shared.contracts.run_events import (
    AtomizeArtifact,
    BenchmarkResolved,
    DatasetTasksArtifact,
    DriverSelected,
    HaltCleared,
    MaterializeTaskAggregated,
    MaterializeTaskResult,
    PhaseStarted,
    PipelineFinished,
    RunDeleted,
    RunHalted,
    RunLaunched,
    RunUpdated,
    SetupArtifact,
    TaskLabelled,
)
from benchwright_shared.outcomes import is_infra_error
from benchwright_shared.projection import Projection, ViewCursor
from benchwright_shared.run_log import run_event_table, run_event_type
from benchwright_shared.scoring import Settled

OUTPUT_PREVIEW_CHARS = 200
# Messages after which a run may show its terminal status (``RunsProjection._settle``).
SETTLING = frozenset({run_event_type(MaterializeTaskAggregated), run_event_type(PipelineFinished)})


class RunsProjection(Projection):
    name = "runs"
    version = 10
    tables = {
        "runs": (
            "run_id TEXT PRIMARY KEY, account TEXT NOT NULL, status TEXT NOT NULL, "
            "phase TEXT, benchmark_id TEXT, benchmark_name TEXT, subset_id TEXT, "
            "subset_slug TEXT, impl_id TEXT, model TEXT, metadata TEXT, "
            "created_at TEXT, finished_at TEXT, summary TEXT, error_type TEXT, detail TEXT, "
            "selected_tasks INTEGER, last_seq INTEGER NOT NULL DEFAULT 0, "
            "halted INTEGER NOT NULL DEFAULT 0, halt_reason TEXT, fingerprint TEXT, "
            "mode TEXT, request TEXT, driver TEXT, parent_run_id TEXT, trials TEXT, "
            "limits TEXT, deleted INTEGER NOT NULL DEFAULT 0, compute TEXT, backend TEXT, "
            "visibility TEXT NOT NULL DEFAULT 'private', "
            # A finished run whose task rows are not all in yet (a redelivered batch
            # can land after the terminal event) shows as running until they are.
            "final_status TEXT, final_total INTEGER, "
            # The benchmark the request named when another ran in its place.
            "substituted_for TEXT, "
            # The run's judges (``RunLaunched.judges``), as JSON.
            "judges TEXT"
        ),
        "tasks": (
            "run_id TEXT NOT NULL, invocation INTEGER NOT NULL, idx INTEGER NOT NULL, "
            "task_id TEXT NOT NULL, score DOUBLE PRECISION, outcome TEXT, output TEXT, "
            "error_type TEXT, error TEXT, duration_ms INTEGER, score_meta TEXT, "
            # ``grp``: the row's group key (its category), for the summary's intervals.
            "trial_scores TEXT, grp TEXT, "
            # The task's model spend over its trials, as the proxy metered it.
            "cost_micros BIGINT, prompt_tokens BIGINT, completion_tokens BIGINT, calls INTEGER, "
            "PRIMARY KEY (run_id, invocation, idx)"
        ),
        # One row per trial of a task: the task row above holds the latest trial's
        # output and the aggregate; these keep each trial's own result.
        "trials": (
            "run_id TEXT NOT NULL, invocation INTEGER NOT NULL, idx INTEGER NOT NULL, "
            "trial INTEGER NOT NULL, score DOUBLE PRECISION, outcome TEXT, output TEXT, "
            "error_type TEXT, error TEXT, duration_ms INTEGER, score_meta TEXT, "
            "cost_micros BIGINT, prompt_tokens BIGINT, completion_tokens BIGINT, calls INTEGER, "
            "PRIMARY KEY (run_id, invocation, idx, trial)"
        ),
        # Each person's latest label of each task (``labels_view``).
        "labels": LABELS_TABLE,
    }
    indexes = ("runs(account, created_at)", "tasks(run_id, outcome)")

    def apply(self, cur: ViewCursor, message: dict[str, Any]) -> None:
        self.apply_batch(cur, [message])

    def apply_batch(self, cur: ViewCursor, messages: Sequence[dict[str, Any]]) -> None:
        # Three things happen once per batch rather than once per message (a replay's
        # main saving), and the batch still ends where the messages one by one would:
        # - a run's ``last_seq`` moves to the highest seq the batch held for it, and a
        #   finished run is settled, at the end (nothing in between reads either, and
        #   settling only ever moves a run out of ``running``);
        # - task rows are written by one statement per kind for a stretch of task
        #   messages: a result and its aggregate write different columns of the same
        #   row, so their order does not matter, and a later row of one kind still
        #   lands after an earlier one. Any other message ends the stretch first.
        last: dict[str, int] = {}
        unsettled: dict[str, None] = {}
        rows: dict[str, list[list[Any]]] = {write: [] for write in TASK_UPSERTS}
        # Runs of this batch that ask for several trials a task: only theirs get trial
        # rows (a run of one trial has its result on its task row already).
        several: dict[str, bool] = {}
        for message in messages:
            kind = message.get("type")
            run_id = message["run_id"]
            if kind in TASK_WRITES:
                for write in TASK_WRITES[kind]:
                    if write == "trial" and not self._several_trials(cur, run_id, several):
                        continue
                    rows[write].append(TASK_ROWS[write](run_id, message.get("data", {})))
            else:
                self._write_task_rows(cur, rows)
                # A type without a handler (one a newer orchestrator writes, say)
                # changes nothing here but the run's ``last_seq``.
                handler = HANDLERS.get(kind or "")
                if handler is not None:
                    handler(self, cur, run_id, message.get("data", {}), message)
            if kind in SETTLING:
                unsettled[run_id] = None
            if kind != "RunLaunched":
                last[run_id] = max(last.get(run_id, 0), int(message.get("seq", 0)))
        self._write_task_rows(cur, rows)
        for run_id in unsettled:
            self._settle(cur, run_id)
        if last:
            cur.executemany(
                f"UPDATE {cur.table('runs')} SET last_seq = ? WHERE run_id = ? AND last_seq < ?",
                [(seq, run_id, seq) for run_id, seq in last.items()],
            )

    def _several_trials(self, cur: ViewCursor, run_id: str, known: dict[str, bool]) -> bool:
        """Whether the run asked for more than one trial a task (remembered in ``known``).

        A run not in the view yet (its launch not applied) counts as several: a
        trial row too many is harmless, one too few is lost."""
        if run_id not in known:
            cur.execute(f"SELECT trials FROM {cur.table('runs')} WHERE run_id = ?", [run_id])
            found = cur.fetchone()
            known[run_id] = found is None or trials_per_task(found["trials"]) > 1
        return known[run_id]

    def _write_task_rows(self, cur: ViewCursor, rows: dict[str, list[list[Any]]]) -> None:
        tables = {"tasks": cur.table("tasks"), "trials": cur.table("trials")}
        for write, pending in rows.items():
            if pending:
                cur.executemany(TASK_UPSERTS[write].format(**tables), pending)
                pending.clear()

    def _on_TaskLabelled(
        self, cur: ViewCursor, run_id: str, d: dict[str, Any], m: dict[str, Any]
    ) -> None:
        record_label(cur, run_id, d, m)

    def _on_RunLaunched(
        self, cur: ViewCursor, run_id: str, d: dict[str, Any], m: dict[str, Any]
    ) -> None:
        cur.execute(
            f"INSERT INTO {cur.table('runs')} (run_id, account, status, benchmark_id, "
            "benchmark_name, subset_id, subset_slug, impl_id, model, metadata, created_at, "
            "mode, request, driver, parent_run_id, trials, limits, compute, backend, judges) "
            "VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (run_id) DO NOTHING",
            [
                run_id,
                d["account"],
                d.get("benchmark_id"),
                d.get("benchmark_name"),
                d.get("subset_id"),
                d.get("subset_slug"),
                d.get("impl_id"),
                json.dumps(d["sut"]) if d.get("sut") else None,
                json.dumps(d.get("metadata") or {}),
                m["ts"],
                d.get("mode", "pinned"),
                d.get("request"),
                d.get("driver"),
                d.get("parent_run_id"),
                json.dumps(d.get("trials")) if d.get("trials") else None,
                json.dumps(d.get("limits") or {}),
                d.get("compute"),
                d.get("backend"),
                json.dumps(d["judges"]) if d.get("judges") else None,
            ],
        )

    def _on_DriverSelected(
        self, cur: ViewCursor, run_id: str, d: dict[str, Any], m: dict[str, Any]
    ) -> None:
        cur.execute(
            f"UPDATE {cur.table('runs')} SET driver = ? WHERE run_id = ?", [d["driver"], run_id]
        )

    def _on_BenchmarkResolved(
        self, cur: ViewCursor, run_id: str, d: dict[str, Any], m: dict[str, Any]
    ) -> None:
        cur.execute(
            f"UPDATE {cur.table('runs')} SET benchmark_id = ?, benchmark_name = ?, "
            "subset_id = ?, subset_slug = ?, model = COALESCE(?, model), substituted_for = ? "
            "WHERE run_id = ?",
            [
                d["benchmark_id"],
                d["benchmark_name"],
                d["subset_id"],
                d["subset_slug"],
                json.dumps(d["sut"]) if d.get("sut") else None,
                d.get("substituted_for"),
                run_id,
            ],
        )

    def _on_AtomizeArtifact(
        self, cur: ViewCursor, run_id: str, d: dict[str, Any], m: dict[str, Any]
    ) -> None:
        cur.execute(
            f"UPDATE {cur.table('runs')} SET impl_id = ? WHERE run_id = ?", [d["impl_id"], run_id]
        )

    def _on_HaltCleared(
        self, cur: ViewCursor, run_id: str, d: dict[str, Any], m: dict[str, Any]
    ) -> None:
        cur.execute(
            f"UPDATE {cur.table('runs')} SET halted = 0, halt_reason = NULL WHERE run_id = ?",
            [run_id],
        )

    def _on_RunUpdated(
        self, cur: ViewCursor, run_id: str, d: dict[str, Any], m: dict[str, Any]
    ) -> None:
        if d.get("visibility"):
            cur.execute(
                f"UPDATE {cur.table('runs')} SET visibility = ? WHERE run_id = ?",
                [d["visibility"], run_id],
            )
        if d.get("metadata"):
            cur.execute(f"SELECT metadata FROM {cur.table('runs')} WHERE run_id = ?", [run_id])
            found = cur.fetchone()
            merged = json.loads(found["metadata"] or "{}") if found else {}
            for key, value in d["metadata"].items():
                if value is None:
                    merged.pop(key, None)
                else:
                    merged[key] = value
            cur.execute(
                f"UPDATE {cur.table('runs')} SET metadata = ? WHERE run_id = ?",
                [json.dumps(merged), run_id],
            )

    def _on_RunDeleted(
        self, cur: ViewCursor, run_id: str, d: dict[str, Any], m: dict[str, Any]
    ) -> None:
        cur.execute(f"UPDATE {cur.table('runs')} SET deleted = 1 WHERE run_id = ?", [run_id])
        cur.execute(f"DELETE FROM {cur.table('tasks')} WHERE run_id = ?", [run_id])
        cur.execute(f"DELETE FROM {cur.table('trials')} WHERE run_id = ?", [run_id])

    def _on_PhaseStarted(
        self, cur: ViewCursor, run_id: str, d: dict[str, Any], m: dict[str, Any]
    ) -> None:
        cur.execute(
            f"UPDATE {cur.table('runs')} SET phase = ? WHERE run_id = ? AND status = 'running'",
            [d["phase"], run_id],
        )

    def _on_DatasetTasksArtifact(
        self, cur: ViewCursor, run_id: str, d: dict[str, Any], m: dict[str, Any]
    ) -> None:
        cur.execute(
            f"UPDATE {cur.table('runs')} SET selected_tasks = ? WHERE run_id = ?",
            [d["selected_tasks"], run_id],
        )

    def _on_SetupArtifact(
        self, cur: ViewCursor, run_id: str, d: dict[str, Any], m: dict[str, Any]
    ) -> None:
        if d.get("impl_id"):
            cur.execute(
                f"UPDATE {cur.table('runs')} SET impl_id = ? WHERE run_id = ?",
                [d["impl_id"], run_id],
            )

    def _on_RunHalted(
        self, cur: ViewCursor, run_id: str, d: dict[str, Any], m: dict[str, Any]
    ) -> None:
        cur.execute(
            f"UPDATE {cur.table('runs')} SET halted = 1, halt_reason = ? WHERE run_id = ?",
            [d["halt_reason"], run_id],
        )

    def _on_PipelineFinished(
        self, cur: ViewCursor, run_id: str, d: dict[str, Any], m: dict[str, Any]
    ) -> None:
        cur.execute(
            f"UPDATE {cur.table('runs')} SET final_status = ?, final_total = ?, finished_at = ?, "
            "summary = ?, error_type = ?, detail = ?, fingerprint = ? WHERE run_id = ?",
            [
                d["status"],
                int((d.get("summary") or {}).get("total") or 0),
                m["ts"],
                json.dumps(d.get("summary") or {}),
                d.get("error_type"),
                d.get("detail"),
                d.get("fingerprint"),
                run_id,
            ],
        )

    def _settle(self, cur: ViewCursor, run_id: str) -> None:
        """Show the terminal status once every task row the summary counts is in."""
        runs, tasks = cur.table("runs"), cur.table("tasks")
        cur.execute(
            f"UPDATE {runs} SET status = final_status, phase = NULL WHERE run_id = ? "
            "AND final_status IS NOT NULL AND status = 'running' AND final_total <= ("
            f"SELECT COUNT(*) FROM {tasks} t WHERE t.run_id = ? AND t.outcome IS NOT NULL "
            f"AND t.invocation = (SELECT MAX(invocation) FROM {tasks} WHERE run_id = ?))",
            [run_id, run_id, run_id],
        )


# The run-log types the runs row follows, each to its handler: keyed by the shared
# models, so only a type of the vocabulary can be named. (Task messages go through
# ``TASK_WRITES`` instead.)
HANDLERS = run_event_table(
    {
        RunLaunched: RunsProjection._on_RunLaunched,
        DriverSelected: RunsProjection._on_DriverSelected,
        BenchmarkResolved: RunsProjection._on_BenchmarkResolved,
        PhaseStarted: RunsProjection._on_PhaseStarted,
        DatasetTasksArtifact: RunsProjection._on_DatasetTasksArtifact,
        SetupArtifact: RunsProjection._on_SetupArtifact,
        AtomizeArtifact: RunsProjection._on_AtomizeArtifact,
        RunHalted: RunsProjection._on_RunHalted,
        HaltCleared: RunsProjection._on_HaltCleared,
        RunUpdated: RunsProjection._on_RunUpdated,
        RunDeleted: RunsProjection._on_RunDeleted,
        TaskLabelled: RunsProjection._on_TaskLabelled,
        PipelineFinished: RunsProjection._on_PipelineFinished,
    }
)


# -- task rows: each message kind writes its own columns, one upsert per kind --------
def _result_row(run_id: str, d: dict[str, Any]) -> list[Any]:
    return [
        run_id,
        d.get("invocation", 1),
        d["index"],
        d["task_id"],
        d.get("output"),
        d.get("error_type"),
        d.get("error"),
        d.get("duration_ms", 0),
        json.dumps(d.get("score_meta") or {}),
    ]


def _aggregated_row(run_id: str, d: dict[str, Any]) -> list[Any]:
    return [
        run_id,
        d.get("invocation", 1),
        d["index"],
        d["task_id"],
        d.get("score"),
        d["outcome"],
        json.dumps(d.get("trial_scores") or []),
        d.get("group"),
        *_spend(d),
    ]


def _trial_row(run_id: str, d: dict[str, Any]) -> list[Any]:
    return [
        run_id,
        d.get("invocation", 1),
        d["index"],
        d.get("trial", 0),
        d.get("score"),
        d.get("outcome"),
        d.get("output"),
        d.get("error_type"),
        d.get("error"),
        d.get("duration_ms", 0),
        json.dumps(d.get("score_meta") or {}),
        *_spend(d),
    ]


def _spend(d: dict[str, Any]) -> list[Any]:
    return [
        d.get("cost_micros"),
        d.get("prompt_tokens"),
        d.get("completion_tokens"),
        d.get("calls"),
    ]


# Which writes each task message makes: a result lands on its task row and as its trial.
TASK_WRITES: dict[str, tuple[str, ...]] = run_event_table(
    {MaterializeTaskResult: ("result", "trial"), MaterializeTaskAggregated: ("aggregated",)}
)
TASK_ROWS: dict[str, Callable[[str, dict[str, Any]], list[Any]]] = {
    "result": _result_row,
    "trial": _trial_row,
    "aggregated": _aggregated_row,
}
TASK_UPSERTS = {
    "result": (
        "INSERT INTO {tasks} (run_id, invocation, idx, task_id, output, error_type, error, "
        "duration_ms, score_meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (run_id, invocation, idx) DO UPDATE SET output = excluded.output, "
        "error_type = excluded.error_type, error = excluded.error, "
        "duration_ms = excluded.duration_ms, score_meta = excluded.score_meta"
    ),
    "trial": (
        "INSERT INTO {trials} (run_id, invocation, idx, trial, score, outcome, output, "
        "error_type, error, duration_ms, score_meta, cost_micros, prompt_tokens, "
        "completion_tokens, calls) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (run_id, invocation, idx, trial) DO UPDATE SET score = excluded.score, "
        "outcome = excluded.outcome, output = excluded.output, "
        "error_type = excluded.error_type, error = excluded.error, "
        "duration_ms = excluded.duration_ms, score_meta = excluded.score_meta, "
        "cost_micros = excluded.cost_micros, prompt_tokens = excluded.prompt_tokens, "
        "completion_tokens = excluded.completion_tokens, calls = excluded.calls"
    ),
    "aggregated": (
        "INSERT INTO {tasks} (run_id, invocation, idx, task_id, score, outcome, trial_scores, "
        "grp, cost_micros, prompt_tokens, completion_tokens, calls) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, invocation, idx) "
        "DO UPDATE SET score = excluded.score, outcome = excluded.outcome, "
        "trial_scores = excluded.trial_scores, grp = excluded.grp, "
        "cost_micros = excluded.cost_micros, prompt_tokens = excluded.prompt_tokens, "
        "completion_tokens = excluded.completion_tokens, calls = excluded.calls"
    ),
}


def trials_per_task(trials: str | None) -> int:
    """``k`` of a run's stored trials config (1 when it has none)."""
    if not trials:
        return 1
    return int((json.loads(trials).get("plan") or {}).get("k") or 1)


# -- queries ---------------------------------------------------------------------------
def get_run(cur: ViewCursor, run_id: str) -> dict[str, Any] | None:
    cur.execute(f"SELECT * FROM {cur.table('runs')} WHERE run_id = ? AND deleted = 0", [run_id])
    return cur.fetchone()


# ``sort`` values and the column each orders by.
RUN_SORTS = {"started_at": "created_at", "finished_at": "finished_at"}


def list_runs(
    cur: ViewCursor,
    account: str,
    *,
    limit: int,
    after: str | None = None,
    status: str | None = None,
    benchmark: str | None = None,
    visibility: str | None = None,
    ranges: dict[str, tuple[str | None, str | None]] | None = None,
    sort: str = "-started_at",
) -> list[dict[str, Any]]:
    """The account's runs, filtered and sorted; ``after`` is the cursor of the last
    row of the previous page (``run_cursor``)."""
    descending = sort.startswith("-")
    column = RUN_SORTS[sort.lstrip("-")]
    key = f"(COALESCE({column}, '') || run_id)"
    sql = f"SELECT * FROM {cur.table('runs')} WHERE account = ? AND deleted = 0"
    params: list[Any] = [account]
    for name, value in (("status", status), ("visibility", visibility)):
        if value:
            sql += f" AND {name} = ?"
            params.append(value)
    if benchmark:
        sql += " AND (benchmark_id = ? OR LOWER(benchmark_name) = LOWER(?))"
        params += [benchmark, benchmark]
    for name, (low, high) in (ranges or {}).items():
        field = RUN_SORTS[name]
        if low:
            sql += f" AND {field} >= ?"
            params.append(low)
        if high:
            sql += f" AND {field} < ?"
            params.append(high)
    if after:
        sql += f" AND {key} {'<' if descending else '>'} ?"
        params.append(after)
    order = "DESC" if descending else "ASC"
    sql += f" ORDER BY {key} {order} LIMIT ?"
    params.append(limit)
    cur.execute(sql, params)
    return cur.fetchall()


def run_cursor(row: dict[str, Any], sort: str) -> str:
    return str(row.get(RUN_SORTS[sort.lstrip("-")]) or "") + str(row["run_id"])


# ``sort`` values for task rows and the expression each orders by (then by index).
TASK_SORTS = {
    "index": "idx",
    "score": "COALESCE(score, -1.0)",
    "duration_ms": "COALESCE(duration_ms, 0)",
    "task_id": "task_id",
}


def _latest(tasks: str) -> str:
    return f"(SELECT MAX(invocation) FROM {tasks} WHERE run_id = ?)"


def list_tasks(
    cur: ViewCursor,
    run_id: str,
    *,
    version: int | None = None,
    outcomes: tuple[str, ...] | None = None,
    sort: str = "index",
    after: tuple[Any, int] | None = None,
    limit: int,
    include_running: bool = False,
) -> list[dict[str, Any]]:
    """Task rows of one Materialize invocation (``version``; the latest by default, the
    one the summary covers), settled ones only unless ``include_running``.

    ``sort`` is a key of ``TASK_SORTS``, ``-`` first for descending; ties go by index.
    ``after`` is ``(sort key, index)`` of the previous page's last row (``task_key``).
    """
    tasks = cur.table("tasks")
    descending = sort.startswith("-")
    key = TASK_SORTS[sort.lstrip("-")]
    sql = f"SELECT * FROM {tasks} WHERE run_id = ? AND invocation = "
    params: list[Any] = [run_id]
    if version is None:
        sql += _latest(tasks)
        params.append(run_id)
    else:
        sql += "?"
        params.append(version)
    if not include_running:
        sql += " AND outcome IS NOT NULL"
    if outcomes:
        sql += f" AND outcome IN ({', '.join('?' for _ in outcomes)})"
        params.extend(outcomes)
    if after is not None:
        sql += f" AND ({key} {'<' if descending else '>'} ? OR ({key} = ? AND idx > ?))"
        params.extend([after[0], after[0], after[1]])
    sql += f" ORDER BY {key} {'DESC' if descending else 'ASC'}, idx ASC LIMIT ?"
    params.append(limit)
    cur.execute(sql, params)
    return cur.fetchall()


def task_key(row: dict[str, Any], sort: str) -> tuple[Any, int]:
    """Where a row stands in ``sort``: what ``list_tasks(after=...)`` pages on from."""
    value: Any
    match sort.lstrip("-"):
        case "score":
            value = -1.0 if row.get("score") is None else float(row["score"])
        case "duration_ms":
            value = int(row.get("duration_ms") or 0)
        case "task_id":
            value = str(row["task_id"])
        case _:
            value = int(row["idx"])
    return value, int(row["idx"])


def task_versions(cur: ViewCursor, run_id: str) -> list[int]:
    """The Materialize invocations the run has task rows for, oldest first."""
    cur.execute(
        f"SELECT DISTINCT invocation FROM {cur.table('tasks')} WHERE run_id = ? "
        "ORDER BY invocation",
        [run_id],
    )
    return [int(r["invocation"]) for r in cur.fetchall()]


def task_trials(
    cur: ViewCursor, run_id: str, invocation: int, indexes: Sequence[int]
) -> dict[int, list[dict[str, Any]]]:
    """index -> that task's trials in trial order, for the given rows of one invocation."""
    found: dict[int, list[dict[str, Any]]] = {}
    if not indexes:
        return found
    cur.execute(
        f"SELECT * FROM {cur.table('trials')} WHERE run_id = ? AND invocation = ? "
        f"AND idx IN ({', '.join('?' for _ in indexes)}) ORDER BY idx, trial",
        [run_id, invocation, *indexes],
    )
    for row in cur.fetchall():
        found.setdefault(int(row["idx"]), []).append(row)
    return found


def task_outcomes(cur: ViewCursor, run_id: str, version: int | None = None) -> list[Settled]:
    """Every settled task of one sweep (the latest), as its summary needs it."""
    tasks = cur.table("tasks")
    sql = (
        f"SELECT idx, outcome, duration_ms, error_type, score, grp, trial_scores FROM {tasks} "
        "WHERE run_id = ? AND outcome IS NOT NULL AND invocation = "
    )
    if version is None:
        cur.execute(sql + _latest(tasks), [run_id, run_id])
    else:
        cur.execute(sql + "?", [run_id, version])
    return [
        Settled(
            outcome=r["outcome"],
            duration_ms=int(r["duration_ms"] or 0),
            infra=is_infra_error(r["error_type"]),
            score=r["score"],
            group=r["grp"],
            trial_scores=tuple(json.loads(r["trial_scores"] or "[]")),
            task_index=int(r["idx"]),
        )
        for r in cur.fetchall()
    ]


def task_results(cur: ViewCursor, run_id: str) -> list[TaskResult]:
    """Every settled task of the run's latest sweep, for a paired comparison."""
    tasks = cur.table("tasks")
    cur.execute(
        f"SELECT task_id, idx, outcome, score, grp FROM {tasks} WHERE run_id = ? "
        f"AND outcome IS NOT NULL AND invocation = {_latest(tasks)}",
        [run_id, run_id],
    )
    return [
        TaskResult(r["task_id"], int(r["idx"]), r["outcome"], r["score"], r["grp"])
        for r in cur.fetchall()
    ]


def latest_outcomes(cur: ViewCursor, run_id: str) -> dict[int, tuple[str, str]]:
    """index -> (task_id, outcome) from the run's latest sweep."""
    tasks = cur.table("tasks")
    cur.execute(
        f"SELECT idx, task_id, outcome FROM {tasks} WHERE run_id = ? "
        f"AND outcome IS NOT NULL AND invocation = {_latest(tasks)}",
        [run_id, run_id],
    )
    return {int(r["idx"]): (r["task_id"], r["outcome"]) for r in cur.fetchall()}


def recorded_outputs(cur: ViewCursor, run_id: str) -> int:
    """How many tasks of the run's latest sweep recorded an output on their row (the
    latest trial's), or, on a run of several trials, in any trial."""
    found = 0
    for table in (cur.table("tasks"), cur.table("trials")):
        cur.execute(
            f"SELECT COUNT(*) AS n FROM {table} WHERE run_id = ? AND output IS NOT NULL "
            f"AND invocation = {_latest(table)}",
            [run_id, run_id],
        )
        row = cur.fetchone()
        found = max(found, int(row["n"]) if row else 0)
    return found


def get_task(cur: ViewCursor, run_id: str, invocation: int, index: int) -> dict[str, Any] | None:
    cur.execute(
        f"SELECT * FROM {cur.table('tasks')} WHERE run_id = ? AND invocation = ? AND idx = ?",
        [run_id, invocation, index],
    )
    return cur.fetchone()


def preview(text: str | None) -> str | None:
    if text is None:
        return None
    return text if len(text) <= OUTPUT_PREVIEW_CHARS else text[: OUTPUT_PREVIEW_CHARS - 1] + "…"
