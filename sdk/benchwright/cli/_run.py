"""``benchwright run``: launch a run and follow it, or inspect one."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console

from .._client import Benchwright
from .._errors import WaitTimeoutError
from .._models import Run, TaskSummary
from ._common import OutputFormat, dump, echo_json, fail, get_client, handle_errors
from ._render import RunProgress, run_table, tasks_table

__all__ = ["parse_model", "run_app"]

run_app = typer.Typer(
    help="Launch a benchmark run (streams it to completion), or inspect one.",
    invoke_without_command=True,
    no_args_is_help=False,
)

# The stream ends at PipelineFinished, but the run projection can trail the log by a
# moment; this bounds how long we wait for it to catch up.
_SETTLE_TIMEOUT = 60.0

OutputOption = Annotated[
    OutputFormat, typer.Option("--output", "-o", help="table, json or ndjson.")
]


def parse_model(value: str) -> dict[str, str]:
    """Split ``MODEL@PROVIDER`` on its last ``@`` (model names may contain ``@``)."""
    model, sep, provider = value.rpartition("@")
    if not sep or not model or not provider:
        fail(
            f"--model must be MODEL@PROVIDER, e.g. qwen/qwen3-32b@openrouter (got {value!r})",
            code=2,
        )
    return {"model": model, "provider": provider}


@run_app.callback()
@handle_errors
def run(
    ctx: typer.Context,
    request: Annotated[
        str | None,
        typer.Option(
            "--request", "-r", help='Natural language: "Run GSM8K on local/smollm2, first 20".'
        ),
    ] = None,
    benchmark: Annotated[
        str | None, typer.Option(help="Catalog benchmark to run (name or id).")
    ] = None,
    replay: Annotated[
        str | None, typer.Option(help="Replay this run's tasks and scorer (optionally --model).")
    ] = None,
    driver: Annotated[
        str | None,
        typer.Option(help="The Driver: builtin, litellm or PROVIDER://MODEL (never agent)."),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model under test as MODEL@PROVIDER.")] = None,
    subset: Annotated[str | None, typer.Option(help="Subset slug or id.")] = None,
    impl: Annotated[str | None, typer.Option(help="Pin a scorer impl id.")] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="Run only the first N tasks (metadata.limit).")
    ] = None,
    api_base: Annotated[
        str | None, typer.Option(help="Your own OpenAI-compatible endpoint for the model.")
    ] = None,
    idempotency_key: Annotated[
        str | None,
        typer.Option(help="Re-running with the same key re-attaches instead of relaunching."),
    ] = None,
    output: OutputOption = OutputFormat.table,
    no_wait: Annotated[
        bool, typer.Option("--no-wait", help="Print the run id and exit without streaming.")
    ] = False,
) -> None:
    """Launch a run (natural language, pinned or replay) and stream it until it finishes.

    Exits 0 when the run ends ok, 1 when it ends in error.
    """
    if ctx.invoked_subcommand is not None:
        return
    modes = [m for m in (request, benchmark, replay) if m is not None]
    if len(modes) != 1:
        fail("`benchwright run` needs one of --request, --benchmark or --replay", code=2)
    if benchmark is not None and model is None:
        fail("a pinned run needs --model MODEL@PROVIDER", code=2)
    sut = parse_model(model) if model else None
    if sut is not None and api_base:
        sut["api_base"] = api_base
    metadata = {"limit": limit} if limit is not None and replay is None else None
    with get_client() as bw:
        launched = bw.runs.launch(
            request=request,
            benchmark=benchmark,
            subset=subset,
            impl=impl,
            sut=sut,
            metadata=metadata,
            replay={"from_run": replay} if replay else None,
            driver=driver,
            idempotency_key=idempotency_key,
        )
        if no_wait:
            _print_launched(launched, output)
            return
        try:
            final, summary = _follow(bw, launched, output)
        except KeyboardInterrupt:
            typer.echo(f"interrupted; run {launched.id} carries on on the server", err=True)
            raise typer.Exit(130) from None
    _print_final(final, summary, output)
    raise typer.Exit(0 if final.status == "ok" else 1)


def _print_launched(run: Run, output: OutputFormat) -> None:
    if output is OutputFormat.table:
        typer.echo(f"launched run {run.id}")
        _echo_link(run)
    else:
        echo_json(dump(run), compact=output is OutputFormat.ndjson)


def _echo_link(run: Run) -> None:
    """The run's page when the server has a dashboard, else its API resource."""
    if run.links.dashboard:
        typer.echo(f"dashboard: {run.links.dashboard}")
    elif run.links.self_:
        typer.echo(f"url: {run.links.self_}")


def _follow(bw: Benchwright, launched: Run, output: OutputFormat) -> tuple[Run, TaskSummary]:
    """Stream the run to its end, drawing progress, and return its final state."""
    if output is OutputFormat.ndjson:
        for event in bw.runs.stream(launched.id):
            echo_json(dump(event), compact=True)
    else:
        # With --output json stdout carries one document, so progress goes to stderr.
        console = Console(stderr=output is OutputFormat.json, highlight=False)
        if output is OutputFormat.table:
            console.print(f"run [bold]{launched.id}[/] launched", highlight=False)
        with RunProgress(console) as progress:
            for event in bw.runs.stream(launched.id):
                progress.handle(event)
    try:
        final = bw.runs.wait(launched.id, timeout=_SETTLE_TIMEOUT, poll_interval=1.0)
    except WaitTimeoutError as exc:
        fail(f"the event stream ended but {exc}")
    return final, bw.runs.tasks(launched.id, limit=1).summary


def _print_final(run: Run, summary: TaskSummary, output: OutputFormat) -> None:
    if output is OutputFormat.table:
        Console(highlight=False).print(run_table(run, summary))
        _echo_link(run)
        return
    document: dict[str, Any] = {"run": dump(run), "summary": dump(summary)}
    echo_json(document, compact=output is OutputFormat.ndjson)


@run_app.command("show")
@handle_errors
def show(
    run_id: Annotated[str, typer.Argument(help="The run's id.")],
    output: OutputOption = OutputFormat.table,
) -> None:
    """Show one run."""
    with get_client() as bw:
        found = bw.runs.get(run_id)
    if output is OutputFormat.table:
        Console(highlight=False).print(run_table(found, _embedded_summary(found)))
        _echo_link(found)
    else:
        echo_json(dump(found), compact=output is OutputFormat.ndjson)


def _embedded_summary(run: Run) -> TaskSummary | None:
    """The task summary a run object embeds, if the server included one."""
    return None if run.summary is None else TaskSummary.model_validate(dict(run.summary))


@run_app.command("tasks")
@handle_errors
def tasks(
    run_id: Annotated[str, typer.Argument(help="The run's id.")],
    passed: Annotated[
        bool | None, typer.Option("--passed/--failed", help="Only passing / non-passing tasks.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="Rows per page.")] = 100,
    page_token: Annotated[str | None, typer.Option(help="Continue from a previous page.")] = None,
    output: OutputOption = OutputFormat.table,
) -> None:
    """List a run's task results with the run-wide summary."""
    with get_client() as bw:
        page = bw.runs.tasks(run_id, passed=passed, limit=limit, page_token=page_token)
    if output is OutputFormat.json:
        echo_json(dump(page))
    elif output is OutputFormat.ndjson:
        for row in page.data:
            echo_json(dump(row), compact=True)
        echo_json({"object": "task_summary", **dump(page.summary)}, compact=True)
    else:
        Console(highlight=False).print(tasks_table(page))
        if page.next_page_token:
            typer.echo(f"more rows: --page-token {page.next_page_token}")
