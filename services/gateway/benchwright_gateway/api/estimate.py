"""``POST /v1/runs/estimate``: what a launch would cost, from what it would run.

The launch body is checked and resolved exactly as a launch is (``launch.py``), and
nothing is started. The rows come from the registry (a sample of them), the scorer
from the registry or the parent run, and the prices from the proxy, which bills with
them; ``benchwright_gateway.estimation`` turns them into ranges.
"""

import json
from typing import Any

from benchwright_gateway import estimation
from benchwright_gateway import projections as views
from benchwright_gateway.api.auth import Principal
from benchwright_gateway.context import GatewayContext
from benchwright_gateway.render import money
from benchwright_shared.bus import ask
from benchwright_shared.contracts import GetImpl, GetSubsetRows, ImplCode, LaunchRun, SubsetRows
from benchwright_shared.contracts.queries import ModelCallPrices, PriceModelCalls
from benchwright_shared.contracts.run_events import SutRef
from benchwright_shared.refusal import Refused

QUERY_TIMEOUT_S = 10.0
# How many rows are read to size the prompts (in pages of PAGE).
SAMPLE_ROWS = 500
PAGE = 100


async def estimate(ctx: GatewayContext, caller: Principal, command: LaunchRun) -> dict[str, Any]:
    if command.mode == "natural_language":
        raise Refused(
            400,
            "a request is resolved only when it runs",
            "an estimate needs the benchmark pinned ('benchmark', maybe 'subset' and "
            "'impl') or a replay; the plain-English request is read by the run's Driver",
            field="request",
        )
    parent = await ctx.read(views.get_run, command.parent_run_id) if command.parent_run_id else None
    subset_id = command.subset_id or (parent or {}).get("subset_id")
    impl_id = command.impl_id or (parent or {}).get("impl_id")
    sut = command.sut or _parent_sut(parent)
    if sut is None or subset_id is None:
        raise Refused(400, "nothing to estimate", "the launch names no model or no tasks")
    total, rows = await _sample(ctx, subset_id)
    tasks = _task_count(command, parent, total)
    scorer = estimation.read_scorer(await _code(ctx, impl_id))
    trials = int((command.trials.get("plan") or {}).get("k") or 1)
    found = estimation.workload(tasks, trials, scorer, estimation.input_chars(rows))
    prices = await ask(
        ctx.bus(),
        PriceModelCalls(sut=sut, usages=found.usages()),
        ModelCallPrices,
        timeout=QUERY_TIMEOUT_S,
    )
    if prices.problem is not None:
        raise Refused.from_problem(prices.problem)
    low, expected, high = prices.micros
    return {
        "object": "run_estimate",
        "tasks": tasks,
        "trials": trials,
        "model": sut.model_dump(),
        "calls": found.calls.rounded(),
        "prompt_tokens": found.prompt_tokens.rounded(),
        "completion_tokens": found.completion_tokens.rounded(),
        "cost": {"low": money(low), "expected": money(expected), "high": money(high)},
        "priced_by": prices.source,
        "derivation": found.derivation,
        "excludes": "sandbox time and Driver work; model spend only",
    }


def _parent_sut(parent: dict[str, Any] | None) -> SutRef | None:
    if not parent or not parent.get("model"):
        return None
    return SutRef.model_validate(json.loads(parent["model"]))


def _task_count(command: LaunchRun, parent: dict[str, Any] | None, total: int) -> int:
    """How many tasks the run would sweep: a replay's slice or its parent's selection,
    else the subset's rows under the launch's cap."""
    replay = command.replay or {}
    if replay.get("indices") is not None:
        return len(replay["indices"])
    if parent is not None and parent.get("selected_tasks"):
        return int(parent["selected_tasks"])
    return min(total, command.limit) if command.limit else total


async def _sample(ctx: GatewayContext, subset_id: str) -> tuple[int, list[dict[str, Any]]]:
    rows: list[dict[str, Any]] = []
    total = 0
    for offset in range(0, SAMPLE_ROWS, PAGE):
        page = await ask(
            ctx.bus(),
            GetSubsetRows(subset_id=subset_id, offset=offset, limit=PAGE),
            SubsetRows,
            timeout=QUERY_TIMEOUT_S,
        )
        if page.problem is not None:
            raise Refused.from_problem(page.problem)
        total = page.total
        rows += page.rows
        if len(rows) >= total or not page.rows:
            break
    return total, rows


async def _code(ctx: GatewayContext, impl_id: str | None) -> str | None:
    if not impl_id:
        return None
    found = await ask(ctx.bus(), GetImpl(impl_id=impl_id), ImplCode, timeout=QUERY_TIMEOUT_S)
    return None if found.problem is not None else found.code
