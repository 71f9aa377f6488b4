"""What the pages read from the gateway's ``runs``, ``tasks`` and ``trials`` views that
the API has no shape for: a searched, numbered page of runs or of task rows, and a
run's outcome vector (one character per task, what the heatmap draws)."""

import json
from dataclasses import dataclass
from typing import Any

from benchwright_shared.outcomes import is_infra_error
from benchwright_shared.projection import ViewCursor

# One character per task in the outcome vector, by what the task row holds.
PENDING, RUNNING, PASSED, FAILED, ERRORED, INFRA = ".", "r", "p", "f", "e", "x"
OUTCOME_CODES = {"pass": PASSED, "fail": FAILED}
RUN_SORTS = {
    "newest": "created_at DESC, run_id DESC",
    "oldest": "created_at ASC, run_id ASC",
    "finished": "COALESCE(finished_at, '') DESC, run_id DESC",
    "benchmark": "LOWER(COALESCE(benchmark_name, '')) ASC, created_at DESC",
}
# ``{a}`` is the table the page's rows come from (tasks, or one trial's results).
TASK_SORTS = {
    "index": "{a}.idx ASC",
    "-score": "COALESCE({a}.score, -1.0) DESC, {a}.idx ASC",
    "score": "COALESCE({a}.score, -1.0) ASC, {a}.idx ASC",
    "-duration": "COALESCE({a}.duration_ms, 0) DESC, {a}.idx ASC",
    "task_id": "t.task_id ASC, {a}.idx ASC",
}
# The filter values of a task page: settled outcomes, or a row still running.
TASK_OUTCOMES = ("pass", "fail", "err", "running")


def _like(text: str) -> str:
    """A LIKE pattern finding ``text`` anywhere, its own wildcards taken literally."""
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


@dataclass(frozen=True)
class Page:
    """One numbered page of rows and how many rows the whole listing has."""

    rows: list[dict[str, Any]]
    total: int
    offset: int
    limit: int


def runs_page(
    cur: ViewCursor,
    account: str,
    *,
    status: str | None,
    search: str | None,
    sort: str,
    offset: int,
    limit: int,
) -> Page:
    """The account's runs (as ``GET /v1/runs`` lists them), searched over id,
    benchmark, subset and model."""
    runs = cur.table("runs")
    where = "account = ? AND deleted = 0"
    params: list[Any] = [account]
    if status:
        where += " AND status = ?"
        params.append(status)
    if search:
        where += " AND (" + " OR ".join(
            f"LOWER(COALESCE({c}, '')) LIKE ? ESCAPE '\\'"
            for c in ("run_id", "benchmark_name", "benchmark_id", "subset_slug", "model")
        ) + ")"  # fmt: skip
        params += [_like(search)] * 5
    cur.execute(f"SELECT COUNT(*) AS n FROM {runs} WHERE {where}", params)
    total = int((cur.fetchone() or {"n": 0})["n"])
    cur.execute(
        f"SELECT * FROM {runs} WHERE {where} ORDER BY {RUN_SORTS[sort]} LIMIT ? OFFSET ?",
        [*params, limit, offset],
    )
    return Page(cur.fetchall(), total, offset, limit)


def latest_version(cur: ViewCursor, run_id: str) -> int:
    """The run's latest Materialize invocation (the one its summary covers); 1 before any."""
    cur.execute(f"SELECT MAX(invocation) AS v FROM {cur.table('tasks')} WHERE run_id = ?", [run_id])
    found = cur.fetchone()
    return int(found["v"]) if found and found["v"] is not None else 1


def tasks_page(
    cur: ViewCursor,
    run_id: str,
    version: int,
    *,
    outcome: str | None,
    trial: int | None,
    search: str | None,
    sort: str,
    offset: int,
    limit: int,
) -> Page:
    """Task rows of one sweep, or with ``trial`` that trial's result of each task."""
    tasks = cur.table("tasks")
    if trial is None:
        source = f"{tasks} t"
        where = "t.run_id = ? AND t.invocation = ?"
        params: list[Any] = [run_id, version]
        columns = "t.*"
    else:
        trials = cur.table("trials")
        source = (
            f"{trials} r JOIN {tasks} t ON t.run_id = r.run_id "
            "AND t.invocation = r.invocation AND t.idx = r.idx"
        )
        where = "r.run_id = ? AND r.invocation = ? AND r.trial = ?"
        params = [run_id, version, trial]
        columns = (
            "r.idx, r.invocation, r.trial, t.task_id, r.score, r.outcome, r.output, "
            "r.error_type, r.error, r.duration_ms, r.cost_micros"
        )
    alias = "t" if trial is None else "r"
    if outcome == "running":
        where += f" AND {alias}.outcome IS NULL"
    elif outcome:
        where += f" AND {alias}.outcome = ?"
        params.append(outcome)
    if search:
        where += " AND LOWER(t.task_id) LIKE ? ESCAPE '\\'"
        params.append(_like(search))
    cur.execute(f"SELECT COUNT(*) AS n FROM {source} WHERE {where}", params)
    total = int((cur.fetchone() or {"n": 0})["n"])
    order = TASK_SORTS[sort].format(a=alias)
    cur.execute(
        f"SELECT {columns} FROM {source} WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?",
        [*params, limit, offset],
    )
    return Page(cur.fetchall(), total, offset, limit)


def outcome_vector(cur: ViewCursor, run_id: str, length: int | None) -> tuple[str, int]:
    """``(vector, version)``: one character per task of the latest sweep (``PENDING``
    for a task with no row yet), at least ``length`` long when the run knows its size."""
    version = latest_version(cur, run_id)
    cur.execute(
        f"SELECT idx, outcome, error_type FROM {cur.table('tasks')} "
        "WHERE run_id = ? AND invocation = ?",
        [run_id, version],
    )
    rows = cur.fetchvalues()
    size = max([length or 0, *(int(r[0]) + 1 for r in rows)])
    cells = [PENDING] * size
    for index, outcome, error_type in rows:
        cells[int(index)] = _code(outcome, error_type)
    return "".join(cells), version


def _code(outcome: str | None, error_type: str | None) -> str:
    if outcome is None:
        return RUNNING
    if outcome == "err":
        return INFRA if is_infra_error(error_type) else ERRORED
    return OUTCOME_CODES.get(outcome, ERRORED)


def vector_counts(vector: str) -> dict[str, Any]:
    """Counts of each code and the pass rate over passed + failed (as the summary counts)."""
    counts = {code: vector.count(code) for code in (PENDING, RUNNING, PASSED, FAILED)}
    errored = vector.count(ERRORED) + vector.count(INFRA)
    judged = counts[PASSED] + counts[FAILED]
    return {
        "total": len(vector),
        "pending": counts[PENDING],
        "running": counts[RUNNING],
        "passed": counts[PASSED],
        "failed": counts[FAILED],
        "errored": errored,
        "pass_rate": counts[PASSED] / judged if judged else None,
    }


def summary_of(row: dict[str, Any]) -> dict[str, Any]:
    return json.loads(row["summary"]) if row.get("summary") else {}


def compare_candidates(cur: ViewCursor, account: str, row: dict[str, Any]) -> list[dict[str, Any]]:
    """The account's other runs of the same subset, newest first: what to compare with."""
    runs = cur.table("runs")
    cur.execute(
        f"SELECT run_id, model, created_at, status FROM {runs} WHERE account = ? "
        "AND deleted = 0 AND subset_id = ? AND run_id <> ? ORDER BY created_at DESC LIMIT 20",
        [account, row.get("subset_id"), row["run_id"]],
    )
    return list(cur.fetchall())
