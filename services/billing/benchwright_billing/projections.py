"""The ledger: one row per cost-bearing event, summed per run on read.

Rows are keyed by the event's own id (a model call's ``call_id``, a sandbox's
id), so even a duplicate that reached the stream twice is counted once.
"""

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from benchwright_billing.domain import SOURCES, CostLine, validate
from benchwright_shared import subjects
from benchwright_shared.projection import Projection, ViewCursor

LEDGER_SUBJECTS = (
    subjects.MODEL_USAGE_RECORDED,
    subjects.SANDBOX_KILLED,
    subjects.DRIVER_USAGE_RECORDED,
)


class LedgerProjection(Projection):
    name = "ledger"
    version = 2
    tables = {
        "ledger": (
            "entry_id TEXT PRIMARY KEY, account TEXT NOT NULL, run_id TEXT NOT NULL, "
            "source TEXT NOT NULL, micros BIGINT NOT NULL, prompt_tokens BIGINT NOT NULL, "
            "completion_tokens BIGINT NOT NULL, calls BIGINT NOT NULL, "
            # When the cost arose, from the event itself (ISO 8601, UTC): a rebuild
            # lands every line on the same day it did the first time.
            "recorded_at TEXT NOT NULL"
        ),
    }
    indexes = ("ledger(run_id)", "ledger(account, recorded_at)")

    def __init__(self, on_line: Callable[[str], None] | None = None) -> None:
        # Told the account of every cost line applied (billing's watch looks at it).
        self.on_line = on_line

    def apply(self, cur: ViewCursor, message: dict[str, Any]) -> None:
        entry = _cost_line(message)
        if entry is None:
            return
        entry_id, line, recorded_at = entry
        if self.on_line is not None:
            self.on_line(line.account)
        cur.execute(
            f"INSERT INTO {cur.table('ledger')} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
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
                recorded_at,
            ],
        )


# Events from before costs carried their time sort first: they are the oldest.
UNDATED = "1970-01-01T00:00:00+00:00"


def _cost_line(message: dict[str, Any]) -> tuple[str, CostLine, str] | None:
    if "usage_id" in message:
        when = message.get("window_end") or message.get("recorded_at") or UNDATED
        return (
            f"usage:{message['usage_id']}",
            validate(
                CostLine(
                    account=message["account"],
                    run_id=message["run_id"],
                    # The proxy's windows are the SUT's spend (``proxy_linger`` for calls
                    # that finished after the run's key was revoked) or its judges'
                    # (``role`` judge, lingering or not); the orchestrator's, the Driver's.
                    source=(
                        "judge"
                        if message.get("role") == "judge"
                        else message.get("source") or "model"
                    ),
                    micros=int(message.get("cost_micros", 0)),
                    prompt_tokens=int(message.get("prompt_tokens", 0)),
                    completion_tokens=int(message.get("completion_tokens", 0)),
                    calls=int(message.get("calls", 0)),
                )
            ),
            _utc(when),
        )
    # Only a kill carries a sandbox's whole lifetime (and a reason); other sandbox
    # events with a duration (an exec's) are not cost lines.
    if {"sandbox_id", "duration_ms", "reason", "role"} <= message.keys():
        return (
            f"sandbox:{message['sandbox_id']}",
            validate(
                CostLine(
                    account=message.get("metadata", {}).get("account", ""),
                    run_id=message["run_id"],
                    source="sandbox",
                    micros=int(message.get("cost_micros", 0)),
                )
            ),
            _utc(message.get("killed_at") or UNDATED),
        )
    return None


def _utc(value: str) -> str:
    """An event's ISO time as UTC, so text order is time order."""
    return datetime.fromisoformat(value).astimezone(UTC).isoformat()


def account_runs(cur: ViewCursor, account: str) -> list[dict[str, Any]]:
    """Each of the account's runs: its spend by source and when its last cost arose."""
    cur.execute(
        f"SELECT run_id, source, SUM(micros) AS micros, MAX(recorded_at) AS at "
        f"FROM {cur.table('ledger')} WHERE account = ? GROUP BY run_id, source",
        [account],
    )
    runs: dict[str, dict[str, Any]] = {}
    for row in cur.fetchall():
        run = runs.setdefault(
            row["run_id"],
            {
                "run_id": row["run_id"],
                **dict.fromkeys(SOURCES, 0),
                "at": row["at"],
            },
        )
        run[row["source"]] = int(row["micros"] or 0)
        run["at"] = max(run["at"], row["at"])
    return sorted(runs.values(), key=lambda r: (r["at"], r["run_id"]))


def accounts(cur: ViewCursor) -> list[str]:
    """Every account with a cost line."""
    cur.execute(f"SELECT DISTINCT account FROM {cur.table('ledger')}")
    return [str(row["account"]) for row in cur.fetchall()]


def account_days(cur: ViewCursor, account: str, since: str) -> list[dict[str, Any]]:
    """The account's spend by day (UTC) and source since ``since`` (an ISO date)."""
    cur.execute(
        f"SELECT SUBSTR(recorded_at, 1, 10) AS day, source, SUM(micros) AS micros, "
        f"COUNT(DISTINCT run_id) AS runs FROM {cur.table('ledger')} "
        "WHERE account = ? AND recorded_at >= ? GROUP BY SUBSTR(recorded_at, 1, 10), source",
        [account, since],
    )
    return [dict(row) for row in cur.fetchall()]


# The LLM sources counted in calls and tokens, and the prefix of their keys in
# ``RunCost`` (the model's keep their historical, unprefixed names).
COUNTED = {
    "model": "",
    "judge": "judge_",
    "narration": "narration_",
    "proxy_linger": "proxy_linger_",
}


def run_cost(cur: ViewCursor, run_id: str) -> dict[str, int]:
    """A run's spend by source (micro-dollars), with calls and tokens for the LLM ones."""
    cur.execute(
        f"SELECT source, SUM(micros) AS micros, SUM(calls) AS n, SUM(prompt_tokens) AS pt, "
        f"SUM(completion_tokens) AS ct FROM {cur.table('ledger')} WHERE run_id = ? GROUP BY source",
        [run_id],
    )
    out = {f"{source}_micros": 0 for source in SOURCES}
    for prefix in COUNTED.values():
        out |= {f"{prefix or 'model_'}calls": 0, f"{prefix}prompt_tokens": 0}
        out[f"{prefix}completion_tokens"] = 0
    for row in cur.fetchall():
        source = row["source"]
        out[f"{source}_micros"] = int(row["micros"] or 0)
        if source in COUNTED:
            prefix = COUNTED[source]
            out[f"{prefix or 'model_'}calls"] = int(row["n"] or 0)
            out[f"{prefix}prompt_tokens"] = int(row["pt"] or 0)
            out[f"{prefix}completion_tokens"] = int(row["ct"] or 0)
    return out
