"""How runs and task rows look at the API."""

import base64
import binascii
import json
from typing import Any

from benchwright_gateway.domain import display_status
from benchwright_gateway.projections import preview
from benchwright_shared.contracts import RunCost
from benchwright_shared.money import micros_to_cents


def money(micros: int) -> dict[str, Any]:
    """An amount as the API shows money: cents, dollars and the currency."""
    return {"amount_cents": micros_to_cents(micros), "currency": "USD", "amount_usd": micros / 1e6}


def render_cost(cost: RunCost | None) -> dict[str, Any] | None:
    """``run.cost`` (concepts §9): each source on its own key; ``incurred`` is their sum,
    ``billed`` the platform's part (sandbox, Driver, narration) with the markup.
    ``proxy_linger`` (model calls finished after the run's key was revoked) is in
    neither: add it at the read site for an all-in figure."""
    if cost is None:
        return None
    incurred = (
        cost.model_micros
        + cost.judge_micros
        + cost.sandbox_micros
        + cost.driver_micros
        + cost.narration_micros
    )
    # Billed is the platform's share; model spend is the user's own key. Billing says
    # it with the markup; an older billing did not, and the share is shown unmarked.
    billed = cost.billed_micros
    if billed is None:
        billed = cost.sandbox_micros + cost.driver_micros + cost.narration_micros
    return {
        "model": {
            **money(cost.model_micros),
            "calls": cost.model_calls,
            "prompt_tokens": cost.prompt_tokens,
            "completion_tokens": cost.completion_tokens,
        },
        "judge": {
            **money(cost.judge_micros),
            "calls": cost.judge_calls,
            "prompt_tokens": cost.judge_prompt_tokens,
            "completion_tokens": cost.judge_completion_tokens,
        },
        "sandbox": money(cost.sandbox_micros),
        "driver": money(cost.driver_micros),
        # The run-summary LLM: narration asks no model today, so 0 and 0 calls.
        "narration": {
            **money(cost.narration_micros),
            "calls": cost.narration_calls,
            "prompt_tokens": cost.narration_prompt_tokens,
            "completion_tokens": cost.narration_completion_tokens,
        },
        "incurred": money(incurred),
        "billed": money(billed),
        # Routinely sub-cent: ``amount_usd`` is exact, the cents rounded.
        "proxy_linger": {
            **money(cost.proxy_linger_micros),
            "calls": cost.proxy_linger_calls,
            "prompt_tokens": cost.proxy_linger_prompt_tokens,
            "completion_tokens": cost.proxy_linger_completion_tokens,
        },
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
        "judges": json.loads(row["judges"]) if row.get("judges") else None,
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
        "benchmark": {
            "id": row["benchmark_id"],
            "name": row["benchmark_name"],
            "substituted_for": row.get("substituted_for"),
        },
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
            # The page for people: the dashboard's live run page (sign-in first).
            "dashboard": f"{base_url}/runs/{run_id}",
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


def task_page_token(sort: str, version: int, after: tuple[Any, int]) -> str:
    """An opaque cursor: the listing it belongs to and where its last row stood."""
    raw = json.dumps([sort, version, after[0], after[1]], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def parse_task_page_token(token: str) -> tuple[str, int, tuple[Any, int]] | None:
    """``(sort, version, after)`` of a token ``task_page_token`` made; None if it is not one."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        sort, version, key, index = json.loads(raw)
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        return None
    valid = (
        isinstance(sort, str)
        and type(version) is int
        and type(index) is int
        and isinstance(key, int | float | str)
        and not isinstance(key, bool)
    )
    return (sort, version, (key, index)) if valid else None


def run_etag(row: dict[str, Any]) -> str:
    return f"{row['run_id']}.{row.get('last_seq') or 0}"


def render_spend(row: dict[str, Any]) -> dict[str, Any] | None:
    """A task's (or trial's) model spend, shaped as ``run.cost.model``; None when the
    proxy metered none of its calls (a streamed answer, or a result from before)."""
    if row.get("cost_micros") is None:
        return None
    return {
        **money(int(row["cost_micros"])),
        "calls": int(row.get("calls") or 0),
        "prompt_tokens": int(row.get("prompt_tokens") or 0),
        "completion_tokens": int(row.get("completion_tokens") or 0),
    }


def render_task(row: dict[str, Any], trials: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A slim task row; ``trials`` (each trial's own result) when the run has several."""
    rendered = {
        "id": task_row_id(row["invocation"], row["idx"]),
        "object": "task",
        "task_id": row["task_id"],
        "index": row["idx"],
        "invocation": row["invocation"],
        "version": row["invocation"],
        "score": row.get("score"),
        # A task with some trials in and others still out is running.
        "outcome": row.get("outcome") or "running",
        "output_preview": preview(row.get("output")),
        "error_type": row.get("error_type"),
        "duration_ms": row.get("duration_ms"),
        "cost": render_spend(row),
    }
    if trials is not None:
        rendered["trials"] = [render_trial(t, full=False) for t in trials]
    return rendered


def render_trial(row: dict[str, Any], *, full: bool) -> dict[str, Any]:
    """One trial's result: slim in a task list, with output and scoring detail in a payload."""
    trial: dict[str, Any] = {
        "trial": row["trial"],
        "score": row.get("score"),
        "outcome": row.get("outcome"),
        "error_type": row.get("error_type"),
        "duration_ms": row.get("duration_ms"),
        "cost": render_spend(row),
    }
    if not full:
        trial["output_preview"] = preview(row.get("output"))
        return trial
    trial["output"] = row.get("output")
    trial["score_meta"] = json.loads(row["score_meta"]) if row.get("score_meta") else {}
    trial["error"] = render_task_error(row)
    return trial


def render_task_error(row: dict[str, Any]) -> dict[str, Any] | None:
    if not row.get("error_type"):
        return None
    return {"type": row["error_type"], "message": row.get("error")}


def with_interval(summary: dict[str, Any], name: str, pattern: str) -> str:
    """``82.0% (95% CI 76.1% to 86.8%, wilson)``, or ``-`` when the run has no such figure."""
    value = summary.get(name)
    if value is None:
        return "-"
    intervals = summary.get("intervals") or {}
    interval = intervals.get(name)
    if not interval:
        return pattern.format(value)
    level = f"{float(intervals.get('level') or 0.95):.0%}"
    low, high = pattern.format(interval["low"]), pattern.format(interval["high"])
    return f"{pattern.format(value)} ({level} CI {low} to {high}, {interval['method']})"
