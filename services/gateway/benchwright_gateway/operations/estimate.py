"""What a launch would cost, from what it would run; nothing is launched.

The launch body is checked and resolved exactly as a launch is. The rows come
from the registry (a sample of them), the scorer from the registry or the parent
run, and the prices from the proxy, which bills with them;
``benchwright_gateway.estimation`` turns them into ranges.
"""

import json
from typing import Any

from benchwright_gateway import estimation
from benchwright_gateway.operations import raise_for
from benchwright_gateway.operations.launch import estimate_command
from benchwright_gateway.ports import LaunchPorts, Registry, RunRow
from benchwright_gateway.render import money
from benchwright_gateway.requests import LaunchRequest
from benchwright_shared.api.estimate import RunEstimate
from benchwright_shared.contracts import GetImpl, GetSubsetRows, LaunchRun
from benchwright_shared.contracts.queries import PriceModelCalls
from benchwright_shared.contracts.run_events import SutRef
from benchwright_shared.refusal import Refused

# How many rows are read to size the prompts (in pages of PAGE).
SAMPLE_ROWS = 500
PAGE = 100


async def estimate(ports: LaunchPorts, account: str, body: LaunchRequest) -> RunEstimate:
    """The model calls, tokens and spend ``body`` would take, as ranges.

    A natural-language request is refused (its benchmark is found only when it
    runs), and so is an agentic (Harbor) run once its dataset is checked: its
    calls are as many as its agents' turns; a replay is estimated from its
    parent's rows, scorer and model.
    """
    command = await estimate_command(ports, account, body)
    if (command.harness or {}).get("name") == "harbor":
        raise Refused(
            400,
            "an agentic run cannot be estimated",
            "its dataset is valid, but an agent's model calls are as many as the turns it "
            "takes; bound its spend with limits (run.cost, task.cost) or "
            "metadata.harbor_harness.agent_args.max_turns instead",
            field="harness",
            code="not_estimable",
        )
    if command.mode == "natural_language":
        raise Refused(
            400,
            "a request is resolved only when it runs",
            "an estimate needs the benchmark pinned ('benchmark', maybe 'subset' and "
            "'impl') or a replay; the plain-English request is read by the run's Driver",
            field="request",
        )
    parent = await ports.run(command.parent_run_id) if command.parent_run_id else None
    subset_id = command.subset_id or (parent or {}).get("subset_id")
    impl_id = command.impl_id or (parent or {}).get("impl_id")
    sut = command.sut or _parent_sut(parent)
    if sut is None or subset_id is None:
        raise Refused(400, "nothing to estimate", "the launch names no model or no tasks")
    total, rows = await _sample(ports, subset_id)
    tasks = _task_count(command, parent, total)
    code = await _code(ports, impl_id)
    scorer = estimation.read_scorer(code)
    trials = int((command.trials.get("plan") or {}).get("k") or 1)
    found = estimation.workload(tasks, trials, scorer, estimation.input_chars(rows))
    prices = await ports.price(PriceModelCalls(sut=sut, usages=found.usages()))
    raise_for(prices.problem)
    low, expected, high = prices.micros
    judges = command.judges or _parent_judges(parent)
    judging = estimation.read_judging(code)
    return RunEstimate.model_validate(
        {
            "tasks": tasks,
            "trials": trials,
            "model": sut,
            "calls": found.calls.rounded(),
            "prompt_tokens": found.prompt_tokens.rounded(),
            "completion_tokens": found.completion_tokens.rounded(),
            "cost": {"low": money(low), "expected": money(expected), "high": money(high)},
            "priced_by": prices.source,
            "derivation": found.derivation,
            "excludes": "sandbox time and Driver work; model and judge spend only",
            "judge": (
                await _judge_estimate(ports, found, judging, judges, rows)
                if judging is not None and judges
                else None
            ),
        }
    )


async def _judge_estimate(
    ports: LaunchPorts,
    model: estimation.Workload,
    judging: estimation.Judging,
    judges: list[SutRef],
    rows: list[dict[str, Any]],
) -> dict[str, Any]:
    """The judges' share of the estimate: calls split evenly over a panel's judges (the
    first judge alone when the scorer grades with one), each priced at its own rates."""
    found = estimation.judge_workload(model, judging, len(judges), estimation.input_chars(rows))
    asked = judges if judging.panel else judges[:1]
    totals = [0, 0, 0]
    sources = set()
    for judge in asked:
        usages = [{k: round(v / len(asked)) for k, v in usage.items()} for usage in found.usages()]
        prices = await ports.price(PriceModelCalls(sut=judge, usages=usages))
        raise_for(prices.problem)
        totals = [t + m for t, m in zip(totals, prices.micros, strict=True)]
        sources.add(prices.source)
    low, expected, high = totals
    return {
        "judges": judges,
        "calls": found.calls.rounded(),
        "prompt_tokens": found.prompt_tokens.rounded(),
        "completion_tokens": found.completion_tokens.rounded(),
        "cost": {"low": money(low), "expected": money(expected), "high": money(high)},
        "priced_by": sources.pop() if len(sources) == 1 else "mixed",
        "derivation": found.derivation,
    }


def _parent_judges(parent: RunRow | None) -> list[SutRef] | None:
    if not parent or not parent.get("judges"):
        return None
    return [SutRef.model_validate(j) for j in json.loads(parent["judges"])]


def _parent_sut(parent: RunRow | None) -> SutRef | None:
    if not parent or not parent.get("model"):
        return None
    return SutRef.model_validate(json.loads(parent["model"]))


def _task_count(command: LaunchRun, parent: RunRow | None, total: int) -> int:
    """How many tasks the run would sweep: a replay's slice or its parent's selection,
    else the subset's rows under the launch's cap."""
    replay = command.replay or {}
    if replay.get("indices") is not None:
        return len(replay["indices"])
    if parent is not None and parent.get("selected_tasks"):
        return int(parent["selected_tasks"])
    return min(total, command.limit) if command.limit else total


async def _sample(registry: Registry, subset_id: str) -> tuple[int, list[dict[str, Any]]]:
    """The subset's row count, and its first rows (up to ``SAMPLE_ROWS``)."""
    rows: list[dict[str, Any]] = []
    total = 0
    for offset in range(0, SAMPLE_ROWS, PAGE):
        page = await registry.subset_rows(
            GetSubsetRows(subset_id=subset_id, offset=offset, limit=PAGE)
        )
        raise_for(page.problem)
        total = page.total
        rows += page.rows
        if len(rows) >= total or not page.rows:
            break
    return total, rows


async def _code(registry: Registry, impl_id: str | None) -> str | None:
    """The scorer's source, when the registry has it (the estimate reads its calls)."""
    if not impl_id:
        return None
    found = await registry.impl(GetImpl(impl_id=impl_id))
    return None if found.problem is not None else found.code
