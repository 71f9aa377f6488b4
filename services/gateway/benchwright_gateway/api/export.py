"""``GET /v1/runs/{id}/export?format=``: a run's results in the ecosystem's formats.

Streamed: task rows are read a page at a time (``PAGE``) in index order and written
as they come, so a 10,000-task run is never held in memory in one piece.

* ``jsonl``: one task per line (its latest sweep), with the whole output;
* ``csv``: the same as a table, one row per task;
* ``markdown``: a report: summary with intervals, cost, fingerprint, the SHA-256s of
  what the run was built from (its tasks, its scorer, its model configuration), and
  the per-task table;
* ``lm-eval``: lm-evaluation-harness's ``results_*.json`` shape (``results``,
  ``configs``, ``versions``, ``n-shot``, ``n-samples``, ``config``...);
* ``lm-eval-samples``: its ``samples_*.jsonl`` shape (``doc_id``, ``doc``, ``target``,
  ``resps``, ``filtered_resps``, the metric), the documents read from the registry;
* ``inspect``: an Inspect AI ``.eval`` log, one sample per task and trial
  (``benchwright_gateway.inspect_log``; needs the ``inspect`` extra); an agent
  run's samples carry the conversation (messages, model and tool events);
* ``atif``: an agent run's trajectories in Harbor's Agent Trajectory Interchange
  Format, JSON Lines, one per task and trial (``benchwright_gateway.trajectories``).
"""

import asyncio
import csv
import importlib
import io
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from benchwright_gateway import comparison
from benchwright_gateway import projections as views
from benchwright_gateway.api import agent_logs, lookup
from benchwright_gateway.api.deps import Caller, Ctx
from benchwright_gateway.context import GatewayContext
from benchwright_gateway.render import render_spend, with_interval
from benchwright_gateway.trajectories import TrialLog
from benchwright_shared.bus import ask
from benchwright_shared.contracts import GetRunEvents, GetSubsetRows, RunEventsPage, SubsetRows
from benchwright_shared.projection import ViewCursor
from benchwright_shared.refusal import Refused

Format = Literal["jsonl", "csv", "markdown", "lm-eval", "lm-eval-samples", "inspect", "atif"]
MEDIA = {
    "jsonl": ("application/x-ndjson", "jsonl"),
    "csv": ("text/csv; charset=utf-8", "csv"),
    "markdown": ("text/markdown; charset=utf-8", "md"),
    "lm-eval": ("application/json", "json"),
    "lm-eval-samples": ("application/x-ndjson", "jsonl"),
    "inspect": ("application/zip", "eval"),
    "atif": ("application/x-ndjson", "jsonl"),
}
PAGE = 500
DOCUMENTS = 200
QUERY_TIMEOUT_S = 10.0
CSV_COLUMNS = (
    "task_id",
    "index",
    "version",
    "outcome",
    "score",
    "error_type",
    "duration_ms",
    "cost_usd",
    "prompt_tokens",
    "completion_tokens",
    "output",
)


router = APIRouter(prefix="/v1/runs", tags=["runs"])


async def pages(ctx: GatewayContext, run_id: str) -> AsyncIterator[list[dict[str, Any]]]:
    """The run's settled task rows of its latest sweep, in index order, page by page."""
    after: tuple[Any, int] | None = None
    while True:
        page: list[dict[str, Any]] = await ctx.read(_page, run_id, after)
        if page:
            yield page
        if len(page) < PAGE:
            return
        after = views.task_key(page[-1], "index")


async def rows(ctx: GatewayContext, run_id: str) -> AsyncIterator[dict[str, Any]]:
    async for page in pages(ctx, run_id):
        for row in page:
            yield row


@dataclass(frozen=True)
class RunReads:
    """What a writer reads beside the task rows, bound to the gateway's context."""

    ctx: GatewayContext

    async def trials(
        self, run_id: str, page: list[dict[str, Any]]
    ) -> dict[int, list[dict[str, Any]]]:
        """index -> each trial's own row, for a page of a run with several trials a task."""
        invocation = int(page[0]["invocation"])
        indexes = [int(r["idx"]) for r in page]
        found: dict[int, list[dict[str, Any]]]
        found = await self.ctx.read(views.task_trials, run_id, invocation, indexes)
        return found

    async def documents(self, subset_id: str, offset: int, limit: int) -> list[dict[str, Any]]:
        page = await ask(
            self.ctx.bus(),
            GetSubsetRows(subset_id=subset_id, offset=offset, limit=limit),
            SubsetRows,
            timeout=QUERY_TIMEOUT_S,
        )
        return [] if page.problem is not None else page.rows

    async def parts(self, run_id: str, run: dict[str, Any]) -> dict[str, Any]:
        query = GetRunEvents(run_id=run_id, types=sorted(comparison.PART_EVENTS), limit=500)
        page = await ask(self.ctx.bus(), query, RunEventsPage, timeout=QUERY_TIMEOUT_S)
        return comparison.run_parts(run, [(e.type, e.data) for e in page.events])


@router.get(
    "/{run_id}/export",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "The run's results in the asked format, streamed.",
            "content": {media: {"schema": {"type": "string"}} for media, _ in MEDIA.values()},
        }
    },
)
async def export(
    run_id: str, ctx: Ctx, caller: Caller, format: Annotated[Format, Query()] = "jsonl"
) -> StreamingResponse:
    """A finished (or running) run's task results as ``jsonl``, ``csv``, a
    ``markdown`` report, lm-evaluation-harness's ``lm-eval`` results and
    ``lm-eval-samples``, an Inspect AI ``inspect`` log (``.eval``), or an agent run's
    trajectories as ``atif`` (Harbor's Agent Trajectory Interchange Format, JSON
    Lines, one per task and trial; refused for a run no agent ran); streamed, a
    page of tasks at a time.

    A run still running exports what its log holds: its settled tasks; ``atif``
    also the trials under way, up to their last recorded step (no end in
    ``extra.benchwright``, ``final_metrics`` summing the turns so far), and an
    agent run's ``inspect`` samples carry the conversations so far."""
    caller.require("runs:read")
    row = await lookup.load_run(ctx, caller, run_id, reading=True)
    run = await lookup.show(ctx, row)
    reads = RunReads(ctx)
    writers = {
        "jsonl": lambda: _jsonl(rows(ctx, run_id)),
        "csv": lambda: _csv(rows(ctx, run_id)),
        "markdown": lambda: _markdown(run, rows(ctx, run_id), reads.parts(run_id, run)),
        "lm-eval": lambda: _lm_eval(run, reads.parts(run_id, run)),
        "lm-eval-samples": lambda: _lm_eval_samples(run, rows(ctx, run_id), reads.documents),
        "atif": lambda: agent_logs.atif_lines(agent_logs.trial_logs(ctx, run_id), run_id),
    }
    media, extension = MEDIA[format]
    name = f"{run_id}.{format}.{extension}"
    if format == "atif":
        await agent_logs.require_agent_run(ctx, run)
    if format == "inspect":
        log = await _inspect_log()
        name = log.file_name(run)
        talks = partial(agent_logs.conversations, ctx, run_id) if _is_agent_run(run) else None
        sources = _inspect_sources(run, pages(ctx, run_id), reads.trials, reads.documents, talks)
        writers["inspect"] = lambda: log.write_eval_log(run, sources)
    disposition = f'attachment; filename="{name}"'
    return StreamingResponse(
        writers[format](), media_type=media, headers={"content-disposition": disposition}
    )


async def _inspect_log() -> Any:
    """``benchwright_gateway.inspect_log``, imported (seconds: Inspect is big) off the loop."""
    try:
        return await asyncio.to_thread(importlib.import_module, "benchwright_gateway.inspect_log")
    except ImportError as exc:
        raise Refused(
            501,
            "inspect export unavailable",
            f"this deployment lacks Inspect AI ({exc.name}): install benchwright[inspect]",
            field="format",
        ) from exc


def _is_agent_run(run: dict[str, Any]) -> bool:
    return agent_logs.AGENT_HARNESS_METADATA in (run.get("metadata") or {})


def _page(cur: ViewCursor, run_id: str, after: tuple[Any, int] | None) -> list[dict[str, Any]]:
    return views.list_tasks(cur, run_id, after=after, limit=PAGE)


def _task(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "task_id": row["task_id"],
        "index": row["idx"],
        "version": row["invocation"],
        "outcome": row.get("outcome"),
        "score": row.get("score"),
        "error_type": row.get("error_type"),
        "error": row.get("error"),
        "duration_ms": row.get("duration_ms"),
        "score_meta": json.loads(row["score_meta"]) if row.get("score_meta") else {},
        "trial_scores": json.loads(row["trial_scores"]) if row.get("trial_scores") else [],
        "cost": render_spend(row),
        "output": row.get("output"),
    }


async def _jsonl(tasks: AsyncIterator[dict[str, Any]]) -> AsyncIterator[bytes]:
    async for row in tasks:
        yield (json.dumps(_task(row), ensure_ascii=False) + "\n").encode()


async def _csv(tasks: AsyncIterator[dict[str, Any]]) -> AsyncIterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    async for row in tasks:
        task = _task(row)
        cost = task["cost"] or {}
        task |= {
            "cost_usd": cost.get("amount_usd"),
            "prompt_tokens": cost.get("prompt_tokens"),
            "completion_tokens": cost.get("completion_tokens"),
        }
        writer.writerow(["" if task[c] is None else task[c] for c in CSV_COLUMNS])
        if buffer.tell() > 64 * 1024:
            yield buffer.getvalue().encode()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode()


def _cell(value: Any) -> str:
    """A value for a markdown table cell: one line, pipes escaped, long text folded."""
    text = "" if value is None else str(value)
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= 80 else text[:77] + "..."


async def _markdown(
    run: dict[str, Any], tasks: AsyncIterator[dict[str, Any]], setup: Awaitable[dict[str, Any]]
) -> AsyncIterator[bytes]:
    summary = run.get("summary") or {}
    cost = run.get("cost") or {}
    model = run.get("model") or {}
    found = await setup
    lines = [
        f"# Benchwright run {run['id']}",
        "",
        f"- status: {run.get('display_status') or run.get('status')}",
        f"- benchmark: {(run.get('benchmark') or {}).get('name')} "
        f"(subset {(run.get('subset') or {}).get('slug')})",
        f"- model: {model.get('provider')}/{model.get('model')}",
        f"- tasks: {summary.get('passed', 0)} passed, {summary.get('failed', 0)} failed, "
        f"{summary.get('errored', 0)} errored of {summary.get('total', 0)}",
        f"- pass rate: {with_interval(summary, 'pass_rate', '{:.1%}')}",
        f"- mean score: {with_interval(summary, 'mean_score', '{:.3f}')}",
        f"- cost: model ${(cost.get('model') or {}).get('amount_usd', 0):.4f}, "
        f"incurred ${(cost.get('incurred') or {}).get('amount_usd', 0):.4f}",
        f"- fingerprint: `{run.get('fingerprint')}`",
        "",
        "## Built from",
        "",
        "| part | value |",
        "|---|---|",
        *(
            f"| {name} | `{_cell(found.get(name))}` |"
            for name in sorted(found)
            if name.endswith("sha256") or name.startswith("fingerprint")
        ),
        "",
        "## Tasks",
        "",
        "| # | task | outcome | score | error | ms | cost $ | output |",
        "|---:|---|---|---:|---|---:|---:|---|",
    ]
    yield ("\n".join(lines) + "\n").encode()
    async for row in tasks:
        task = _task(row)
        spent = (task["cost"] or {}).get("amount_usd")
        cells = (
            task["index"],
            task["task_id"],
            task["outcome"],
            task["score"],
            task["error_type"],
            task["duration_ms"],
            spent,
            task["output"],
        )
        yield ("| " + " | ".join(_cell(c) for c in cells) + " |\n").encode()


def _task_name(run: dict[str, Any]) -> str:
    """A task name as lm-eval spells them: lower case, underscores."""
    name = (run.get("benchmark") or {}).get("name") or "benchmark"
    slug = (run.get("subset") or {}).get("slug") or ""
    return re.sub(r"[^a-z0-9]+", "_", f"{name} {slug}".lower()).strip("_")


async def _lm_eval(run: dict[str, Any], setup: Awaitable[dict[str, Any]]) -> AsyncIterator[bytes]:
    summary = run.get("summary") or {}
    model = run.get("model") or {}
    task = _task_name(run)
    judged = int(summary.get("passed", 0)) + int(summary.get("failed", 0))
    rate = summary.get("pass_rate")
    # lm-eval reports a metric's standard error beside it: sqrt(p(1-p)/(n-1)).
    stderr = (rate * (1 - rate) / (judged - 1)) ** 0.5 if rate is not None and judged > 1 else None
    found = await setup
    document: dict[str, Any] = {
        "results": {
            task: {
                "alias": task,
                "acc,none": rate,
                "acc_stderr,none": stderr if stderr is not None else "N/A",
                "mean_score,none": summary.get("mean_score"),
            }
        },
        "group_subtasks": {task: []},
        "configs": {
            task: {
                "task": task,
                "dataset_path": f"benchwright:{(run.get('subset') or {}).get('id')}",
                "output_type": "generate_until",
                "metric_list": [
                    {"metric": "acc", "aggregation": "mean", "higher_is_better": True},
                    {"metric": "mean_score", "aggregation": "mean", "higher_is_better": True},
                ],
                "metadata": {
                    "benchwright_run": run["id"],
                    "impl_id": run.get("impl_id"),
                    "fingerprint": run.get("fingerprint"),
                    **{k: v for k, v in found.items() if k.endswith("sha256")},
                },
            }
        },
        "versions": {task: run.get("impl_id") or "benchwright"},
        "n-shot": {task: 0},
        "higher_is_better": {task: {"acc": True, "mean_score": True}},
        "n-samples": {task: {"original": summary.get("total", 0), "effective": judged}},
        "config": {
            "model": "openai-chat-completions",
            "model_args": f"model={model.get('model')},provider={model.get('provider')}",
            "batch_size": 1,
            "limit": run.get("selected_tasks"),
        },
        "git_hash": None,
        "date": time.time(),
        "model_name": model.get("model"),
        "benchwright": {"run_id": run["id"], "summary": summary, "cost": run.get("cost")},
    }
    yield json.dumps(document, indent=2, ensure_ascii=False).encode()


Documents = Callable[[str, int, int], Awaitable[list[dict[str, Any]]]]


class DocumentWindow:
    """The registry rows (documents) of the tasks a sweep in index order reaches,
    read ``DOCUMENTS`` at a time as it reaches them."""

    def __init__(self, subset_id: str | None, documents: Documents) -> None:
        self.subset_id = subset_id
        self.documents = documents
        self.window: dict[int, dict[str, Any]] = {}

    async def get(self, index: int) -> dict[str, Any]:
        if self.subset_id and index not in self.window:
            docs = await self.documents(self.subset_id, index, DOCUMENTS)
            self.window = {index + i: doc for i, doc in enumerate(docs)}
        return self.window.get(index, {})


Trials = Callable[[str, list[dict[str, Any]]], Awaitable[dict[int, list[dict[str, Any]]]]]


async def _inspect_sources(
    run: dict[str, Any],
    pages: AsyncIterator[list[dict[str, Any]]],
    trials: Trials,
    documents: Documents,
    conversations: Callable[[], Awaitable[dict[tuple[int, int], TrialLog]]] | None = None,
) -> AsyncIterator[list[Any]]:
    """Pages of ``inspect_log.SampleSource``: one per task, or one per trial of it,
    with the trial's conversation when an agent ran it."""
    from benchwright_gateway.inspect_log import SampleSource  # imported by the caller already

    several = int(((run.get("trials") or {}).get("plan") or {}).get("k") or 1) > 1
    window = DocumentWindow((run.get("subset") or {}).get("id"), documents)
    talks = await conversations() if conversations is not None else {}
    async for page in pages:
        per_trial = await trials(run["id"], page) if several else {}
        sources = []
        for row in page:
            doc = await window.get(int(row["idx"]))
            for trial in per_trial.get(int(row["idx"])) or [row | {"trial": 0}]:
                sources.append(
                    SampleSource(
                        task_id=str(row["task_id"]),
                        index=int(row["idx"]),
                        trial=int(trial["trial"]),
                        outcome=trial.get("outcome"),
                        score=trial.get("score"),
                        output=trial.get("output"),
                        error_type=trial.get("error_type"),
                        error=trial.get("error"),
                        duration_ms=trial.get("duration_ms"),
                        score_meta=json.loads(trial["score_meta"])
                        if trial.get("score_meta")
                        else {},
                        cost=render_spend(trial),
                        input=doc.get("input"),
                        expected=doc.get("expected"),
                        conversation=talks.get((int(row["idx"]), int(trial["trial"]))),
                    )
                )
        yield sources


async def _lm_eval_samples(
    run: dict[str, Any], tasks: AsyncIterator[dict[str, Any]], documents: Documents
) -> AsyncIterator[bytes]:
    window = DocumentWindow((run.get("subset") or {}).get("id"), documents)
    async for row in tasks:
        index = int(row["idx"])
        doc = await window.get(index)
        output = row.get("output") or ""
        sample = {
            "doc_id": index,
            "doc": doc.get("input"),
            "target": doc.get("expected"),
            "arguments": None,
            "resps": [[output]],
            "filtered_resps": [output],
            "filter": "none",
            "metrics": ["acc"],
            "acc": 1.0 if row.get("outcome") == "pass" else 0.0,
            "score": row.get("score"),
            "task_id": row["task_id"],
            "outcome": row.get("outcome"),
        }
        yield (json.dumps(sample, ensure_ascii=False) + "\n").encode()
