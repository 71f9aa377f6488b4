"""``run show``, ``run tasks`` and ``run ls``: read runs back."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ...._models import TaskSummary
from ..._common import (
    EXIT_USAGE,
    OutputOption,
    dump,
    emit,
    fail,
    get_client,
    handle_errors,
    output_format,
    resolve_run_id,
)
from ..._render import comparison_table, run_table, runs_table, tasks_table
from ._group import RunId, Status, TruthValue, echo_link, run_app

__all__ = ["diff", "export", "ls", "show", "tasks"]


@run_app.command("show")
@handle_errors
def show(run_id: RunId, output: OutputOption = None) -> None:
    """Show one run: status, benchmark, model, summary and cost."""
    fmt = output_format(output)
    with get_client() as bw:
        found = bw.runs.get(resolve_run_id(bw, run_id))

    def table() -> None:
        summary = None if found.summary is None else TaskSummary.model_validate(dict(found.summary))
        Console(highlight=False).print(run_table(found, summary))
        echo_link(found)

    emit(dump(found), fmt, table=table)


@run_app.command("tasks")
@handle_errors
def tasks(
    run_id: RunId,
    passed: Annotated[
        TruthValue | None,
        typer.Option(
            "--passed", help="Only passing (true) or non-passing (false) tasks.", show_default=False
        ),
    ] = None,
    failed: Annotated[bool, typer.Option("--failed", help="Short for --passed=false.")] = False,
    limit: Annotated[int, typer.Option(min=1, help="Rows per page.")] = 100,
    page_token: Annotated[
        str | None, typer.Option(help="Continue from a previous page.", show_default=False)
    ] = None,
    output: OutputOption = None,
) -> None:
    """List a run's task results, with the summary over all of its tasks.

    ndjson prints one task per line, then the summary as an object "task_summary".
    """
    if failed and passed is TruthValue.true:
        fail("--failed and --passed=true contradict each other", code=EXIT_USAGE)
    wanted = False if failed else None if passed is None else passed is TruthValue.true
    fmt = output_format(output)
    with get_client() as bw:
        page = bw.runs.tasks(
            resolve_run_id(bw, run_id), passed=wanted, limit=limit, page_token=page_token
        )

    def table() -> None:
        Console(highlight=False).print(tasks_table(page))
        if page.next_page_token:
            typer.echo(f"more rows: --page-token {page.next_page_token}")

    rows = [dump(row) for row in page.data]
    summary = {"object": "task_summary", **dump(page.summary)}
    emit(dump(page), fmt, table=table, items=[*rows, summary])


@run_app.command("ls")
@handle_errors
def ls(
    status: Annotated[
        Status | None, typer.Option(help="Only runs in this status.", show_default=False)
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=200, help="Runs per page.")] = 20,
    page_token: Annotated[
        str | None, typer.Option(help="Continue from a previous page.", show_default=False)
    ] = None,
    output: OutputOption = None,
) -> None:
    """List your runs, newest first."""
    fmt = output_format(output)
    with get_client() as bw:
        page = bw.runs.list(
            limit=limit, status=status.value if status else None, page_token=page_token
        )

    def table() -> None:
        Console(highlight=False).print(runs_table(page))
        if page.next_page_token:
            typer.echo(f"more runs: --page-token {page.next_page_token}")

    emit(dump(page), fmt, table=table, items=[dump(r) for r in page.data])


@run_app.command("diff")
@handle_errors
def diff(
    run_a: Annotated[str, typer.Argument(metavar="A", help="The reference run (id or 'last').")],
    run_b: Annotated[str, typer.Argument(metavar="B", help="The run compared with A.")],
    alpha: Annotated[
        float, typer.Option(min=0.0001, max=0.5, help="Significance level of the verdict.")
    ] = 0.05,
    output: OutputOption = None,
) -> None:
    """Compare run B with run A task by task: flips, McNemar's p, the mean difference
    with its interval, a verdict, and what differs between the runs."""
    fmt = output_format(output)
    with get_client() as bw:
        found = bw.runs.compare(resolve_run_id(bw, run_a), resolve_run_id(bw, run_b), alpha=alpha)

    def table() -> None:
        Console(highlight=False).print(comparison_table(found))
        typer.echo(found.verdict.text)

    emit(dump(found), fmt, table=table, items=[dump(m) for m in (*found.changes, found.verdict)])


class ExportFormat(StrEnum):
    """What ``run export`` writes."""

    jsonl = "jsonl"
    csv = "csv"
    markdown = "markdown"
    lm_eval = "lm-eval"
    lm_eval_samples = "lm-eval-samples"
    inspect = "inspect"
    atif = "atif"


@run_app.command("export")
@handle_errors
def export(
    run_id: RunId,
    format: Annotated[ExportFormat, typer.Option(help="What to write.")] = ExportFormat.jsonl,
    to: Annotated[
        Path | None,
        typer.Option(help="Write to this file instead of stdout.", show_default=False),
    ] = None,
) -> None:
    """Export a run's task results: jsonl, csv, a markdown report,
    lm-evaluation-harness's results (lm-eval) and samples (lm-eval-samples), an
    Inspect AI log (inspect: a .eval file that inspect view opens), or an agent
    run's trajectories (atif: Harbor's format, one JSON line per task and trial)."""
    with get_client() as bw:
        content = bw.runs.export(resolve_run_id(bw, run_id), format.value)
    if to is None:
        sys.stdout.buffer.write(content)
        sys.stdout.flush()
        return
    to.write_bytes(content)
    typer.echo(f"wrote {len(content):,} bytes to {to}", err=True)
