"""The ``labels`` table of the gateway's runs view: each person's latest label of each
task (and trial) of a run, from its ``TaskLabelled`` events.

The log keeps every label; the view keeps one row per (run, invocation, index, trial,
person), replaced only by a label of a higher ``seq``, so a redelivered or reordered
message leaves the latest in place.
"""

from typing import Any

from benchwright_shared.projection import ViewCursor

LABELS_TABLE = (
    "run_id TEXT NOT NULL, invocation INTEGER NOT NULL, idx INTEGER NOT NULL, "
    "trial INTEGER NOT NULL, labelled_by TEXT NOT NULL, seq INTEGER NOT NULL, "
    "label_id TEXT NOT NULL, task_id TEXT NOT NULL, scale TEXT NOT NULL, grade TEXT NOT NULL, "
    "note TEXT, labelled_at TEXT NOT NULL, "
    "PRIMARY KEY (run_id, invocation, idx, trial, labelled_by)"
)


def record_label(cur: ViewCursor, run_id: str, d: dict[str, Any], m: dict[str, Any]) -> None:
    """Upsert one ``TaskLabelled``: a later label (higher seq) by the same person wins."""
    cur.execute(
        f"INSERT INTO {cur.table('labels')} (run_id, invocation, idx, trial, labelled_by, "
        "seq, label_id, task_id, scale, grade, note, labelled_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (run_id, invocation, idx, trial, labelled_by) DO UPDATE SET "
        "seq = excluded.seq, label_id = excluded.label_id, task_id = excluded.task_id, "
        "scale = excluded.scale, grade = excluded.grade, note = excluded.note, "
        "labelled_at = excluded.labelled_at "
        f"WHERE excluded.seq > {cur.table('labels')}.seq",
        [
            run_id,
            d.get("invocation", 1),
            d["index"],
            d.get("trial", 0),
            d["labelled_by"],
            int(m.get("seq", 0)),
            d["label_id"],
            d["task_id"],
            d["scale"],
            d["grade"],
            d.get("note"),
            m["ts"],
        ],
    )


def run_labels(cur: ViewCursor, run_id: str, invocation: int | None = None) -> list[dict[str, Any]]:
    """The run's labels (each person's latest per task), oldest first; of one
    Materialize invocation, or of every one."""
    sql = f"SELECT * FROM {cur.table('labels')} WHERE run_id = ?"
    params: list[Any] = [run_id]
    if invocation is not None:
        sql += " AND invocation = ?"
        params.append(invocation)
    cur.execute(sql + " ORDER BY seq", params)
    return cur.fetchall()


def find_label(cur: ViewCursor, run_id: str, label_id: str) -> dict[str, Any] | None:
    """The label recorded by command ``label_id``, once the view holds it (and no
    later label of the same task by the same person replaced it)."""
    cur.execute(
        f"SELECT * FROM {cur.table('labels')} WHERE run_id = ? AND label_id = ?",
        [run_id, label_id],
    )
    return cur.fetchone()


def graded_rows(cur: ViewCursor, run_id: str, *, per_trial: bool) -> list[dict[str, Any]]:
    """What the grader said of each settled task of the run's latest sweep: one row per
    task (``trial`` 0), or per trial on a run of several (``per_trial``), in index and
    trial order, with ``invocation``, ``idx``, ``trial``, ``task_id``, ``outcome`` and
    ``score_meta`` (JSON text)."""
    tasks = cur.table("tasks")
    latest = f"(SELECT MAX(invocation) FROM {tasks} WHERE run_id = ?)"
    if per_trial:
        cur.execute(
            f"SELECT t.invocation, t.idx, t.trial, k.task_id, t.outcome, t.score_meta "
            f"FROM {cur.table('trials')} t JOIN {tasks} k ON k.run_id = t.run_id "
            "AND k.invocation = t.invocation AND k.idx = t.idx "
            f"WHERE t.run_id = ? AND t.outcome IS NOT NULL AND t.invocation = {latest} "
            "ORDER BY t.idx, t.trial",
            [run_id, run_id],
        )
    else:
        cur.execute(
            "SELECT invocation, idx, 0 AS trial, task_id, outcome, score_meta "
            f"FROM {tasks} WHERE run_id = ? AND outcome IS NOT NULL AND invocation = {latest} "
            "ORDER BY idx",
            [run_id, run_id],
        )
    return cur.fetchall()
