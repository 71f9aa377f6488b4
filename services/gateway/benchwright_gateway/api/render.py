"""How runs and task rows look at the API."""

import json
from typing import Any

from benchwright_gateway.domain import display_status
from benchwright_gateway.projections import preview
from benchwright_shared.contracts import RunCost
from benchwright_shared.money import micros_to_cents


def _money(micros: int) -> dict[str, Any]:
    return {"amount_cents": micros_to_cents(micros), "currency": "USD", "amount_usd": micros / 1e6}


def render_cost(cost: RunCost | None) -> dict[str, Any] | None:
    if cost is None:
        return None
    incurred = cost.model_micros + cost.sandbox_micros + cost.driver_micros
    # Billed is the platform's share (sandbox + driver); model spend is the user's own key.
    billed = cost.sandbox_micros + cost.driver_micros
    return {
        "model": {
            **_money(cost.model_micros),
            "calls": cost.model_calls,
            "prompt_tokens": cost.prompt_tokens,
            "completion_tokens": cost.completion_tokens,
        },
        "sandbox": _money(cost.sandbox_micros),
        "driver": _money(cost.driver_micros),
        "incurred": _money(incurred),
        "billed": _money(billed),
    }


def render_run(row: dict[str, Any], cost: RunCost | None, base_url: str) -> dict[str, Any]:
    run_id = row["run_id"]
    halted = bool(row.get("halted"))
    summary = json.loads(row["summary"]) if row.get("summary") else None
    api = f"{base_url}/v1/runs/{run_id}"
    return {
        "id": run_id,
        "object": "run",
        "status": row["status"],
        "display_status": display_status(
            row["status"],
            halted,
            row.get("halt_reason"),
            int((summary or {}).get("infra_errored") or 0),
        ),
        "halted": halted,
        "halt_reason": row.get("halt_reason"),
        "phase": row.get("phase"),
        "model": json.loads(row["model"]) if row.get("model") else None,
        "mode": row.get("mode") or "pinned",
        "request": row.get("request"),
        "driver": row.get("driver"),
        "visibility": row.get("visibility") or "private",
        # For If-Match on PATCH: changes whenever the run's log grows.
        "etag": run_etag(row),
        "compute": row.get("compute") or "default",
        "backend": row.get("backend") or "local",
        "derived_from": row.get("parent_run_id"),
        "trials": json.loads(row["trials"]) if row.get("trials") else None,
        "limits": json.loads(row["limits"]) if row.get("limits") else {},
        "benchmark": {"id": row["benchmark_id"], "name": row["benchmark_name"]},
        "subset": {"id": row["subset_id"], "slug": row["subset_slug"]},
        "impl_id": row.get("impl_id"),
        "fingerprint": row.get("fingerprint"),
        "metadata": json.loads(row["metadata"]) if row.get("metadata") else {},
        "selected_tasks": row.get("selected_tasks"),
        "created_at": row.get("created_at"),
        "finished_at": row.get("finished_at"),
        "last_seq": row.get("last_seq"),
        "error": (
            {"type": row["error_type"], "detail": row.get("detail")}
            if row.get("error_type")
            else None
        ),
        "summary": summary,
        "cost": render_cost(cost),
        "links": {
            "self": api,
            "tasks": f"{api}/tasks",
            "events": f"{api}/events",
            "stream": f"{api}/stream",
            "report": f"{api}/report",
            # The page for people: the run's HTML report (no web app is served).
            "dashboard": f"{api}/report",
        },
    }


# The top-level fields of a rendered run: what ``GET /v1/runs/{id}?fields=`` may name.
RUN_FIELDS = (
    "id",
    "object",
    "status",
    "display_status",
    "halted",
    "halt_reason",
    "phase",
    "model",
    "mode",
    "request",
    "driver",
    "visibility",
    "etag",
    "compute",
    "backend",
    "derived_from",
    "trials",
    "limits",
    "benchmark",
    "subset",
    "impl_id",
    "fingerprint",
    "metadata",
    "selected_tasks",
    "created_at",
    "finished_at",
    "last_seq",
    "error",
    "summary",
    "cost",
    "links",
)
# Always answered, whatever ``fields`` names: what the run is.
IDENTITY_FIELDS = ("id", "object")


def select_fields(run: dict[str, Any], fields: list[str] | None) -> dict[str, Any]:
    """Only ``fields`` of a rendered run (plus its identity); all of it for ``None``."""
    if fields is None:
        return run
    return {k: v for k, v in run.items() if k in IDENTITY_FIELDS or k in fields}


def task_row_id(invocation: int, index: int) -> str:
    return f"t{invocation}_{index}"


def parse_task_row_id(row_id: str) -> tuple[int, int] | None:
    try:
        invocation, index = row_id.removeprefix("t").split("_", 1)
        return int(invocation), int(index)
    except ValueError:
        return None


def run_etag(row: dict[str, Any]) -> str:
    return f"{row['run_id']}.{row.get('last_seq') or 0}"


def render_task(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": task_row_id(row["invocation"], row["idx"]),
        "object": "task",
        "task_id": row["task_id"],
        "index": row["idx"],
        "invocation": row["invocation"],
        "score": row.get("score"),
        # A task with some trials in and others still out is running.
        "outcome": row.get("outcome") or "running",
        "output_preview": preview(row.get("output")),
        "error_type": row.get("error_type"),
        "duration_ms": row.get("duration_ms"),
    }
