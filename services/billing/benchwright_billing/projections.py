"""The ledger: one row per cost-bearing event, summed per run on read.

Rows are keyed by the event's own id (a model call's ``call_id``, a sandbox's
id), so even a duplicate that reached the stream twice is counted once.
"""

from typing import Any

from benchwright_billing.domain import CostLine, validate
from benchwright_shared import subjects
from benchwright_shared.projection import Projection, ViewCursor

LEDGER_SUBJECTS = (
    subjects.MODEL_USAGE_RECORDED,
    subjects.SANDBOX_KILLED,
    subjects.DRIVER_USAGE_RECORDED,
)


class LedgerProjection(Projection):
    name = "ledger"
    tables = {
        "ledger": (
            "entry_id TEXT PRIMARY KEY, account TEXT NOT NULL, run_id TEXT NOT NULL, "
            "source TEXT NOT NULL, micros BIGINT NOT NULL, prompt_tokens BIGINT NOT NULL, "
            "completion_tokens BIGINT NOT NULL, calls BIGINT NOT NULL"
        ),
    }
    indexes = ("ledger(run_id)", "ledger(account)")

    def apply(self, cur: ViewCursor, message: dict[str, Any]) -> None:
        entry = _cost_line(message)
        if entry is None:
            return
        entry_id, line = entry
        cur.execute(
            f"INSERT INTO {cur.table('ledger')} VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (entry_id) DO NOTHING",
            [
                entry_id,
                line.account,
                line.run_id,
                line.source,
                line.micros,
                line.prompt_tokens,
                line.completion_tokens,
                line.calls,
            ],
        )


def _cost_line(message: dict[str, Any]) -> tuple[str, CostLine] | None:
    if "usage_id" in message:
        return f"usage:{message['usage_id']}", validate(
            CostLine(
                account=message["account"],
                run_id=message["run_id"],
                # The proxy's windows are the SUT's spend; the orchestrator's, the Driver's.
                source=message.get("source") or "model",
                micros=int(message.get("cost_micros", 0)),
                prompt_tokens=int(message.get("prompt_tokens", 0)),
                completion_tokens=int(message.get("completion_tokens", 0)),
                calls=int(message.get("calls", 0)),
            )
        )
    # Only a kill carries a sandbox's whole lifetime (and a reason); other sandbox
    # events with a duration (an exec's) are not cost lines.
    if {"sandbox_id", "duration_ms", "reason", "role"} <= message.keys():
        return f"sandbox:{message['sandbox_id']}", validate(
            CostLine(
                account=message.get("metadata", {}).get("account", ""),
                run_id=message["run_id"],
                source="sandbox",
                micros=int(message.get("cost_micros", 0)),
            )
        )
    return None


def run_cost(cur: ViewCursor, run_id: str) -> dict[str, int]:
    cur.execute(
        f"SELECT source, SUM(micros) AS micros, SUM(calls) AS n, SUM(prompt_tokens) AS pt, "
        f"SUM(completion_tokens) AS ct FROM {cur.table('ledger')} WHERE run_id = ? GROUP BY source",
        [run_id],
    )
    out = {
        "model_micros": 0,
        "sandbox_micros": 0,
        "driver_micros": 0,
        "model_calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
    }
    for row in cur.fetchall():
        out[f"{row['source']}_micros"] = int(row["micros"] or 0)
        if row["source"] == "model":
            out["model_calls"] = int(row["n"] or 0)
            out["prompt_tokens"] = int(row["pt"] or 0)
            out["completion_tokens"] = int(row["ct"] or 0)
    return out
