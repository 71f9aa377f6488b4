"""The phase-cache index: which run recorded the work for which phase fingerprint.

Built from the run logs like any other read model (and rebuilt the same way).
A cell is usable by runs of the same account; a run that is deleted takes its
cells with it.
"""

from typing import Any

from benchwright_shared.projection import Projection, ViewCursor


class PhaseCellsProjection(Projection):
    name = "phase_cells"
    tables = {
        "cell_runs": "run_id TEXT PRIMARY KEY, account TEXT NOT NULL",
        "phase_cells": (
            "phase TEXT NOT NULL, fingerprint TEXT NOT NULL, run_id TEXT NOT NULL, "
            "recorded_at TEXT NOT NULL, PRIMARY KEY (phase, fingerprint, run_id)"
        ),
    }
    indexes = ("phase_cells(phase, fingerprint)",)

    def apply(self, cur: ViewCursor, message: dict[str, Any]) -> None:
        kind, data, run_id = message.get("type"), message.get("data", {}), message["run_id"]
        if kind == "RunLaunched":
            cur.execute(
                f"INSERT INTO {cur.table('cell_runs')} VALUES (?, ?) ON CONFLICT DO NOTHING",
                [run_id, data.get("account", "")],
            )
        elif kind == "PhaseFingerprint" and not data.get("cache_hit"):
            cur.execute(
                f"INSERT INTO {cur.table('phase_cells')} VALUES (?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                [data["phase"], data["fingerprint"], run_id, str(message.get("ts", ""))],
            )
        elif kind == "RunDeleted":
            cur.execute(f"DELETE FROM {cur.table('phase_cells')} WHERE run_id = ?", [run_id])


def find_cell(cur: ViewCursor, phase: str, fingerprint: str, account: str) -> str | None:
    """The most recent run of ``account`` that did ``phase``'s work for ``fingerprint``."""
    cur.execute(
        f"SELECT c.run_id FROM {cur.table('phase_cells')} c JOIN {cur.table('cell_runs')} r "
        "ON r.run_id = c.run_id WHERE c.phase = ? AND c.fingerprint = ? AND r.account = ? "
        "ORDER BY c.recorded_at DESC LIMIT 1",
        [phase, fingerprint, account],
    )
    row = cur.fetchone()
    return str(row["run_id"]) if row else None
