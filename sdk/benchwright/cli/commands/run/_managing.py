"""``run publish``, ``run halt`` / ``kill``, ``run pause`` / ``resume``, ``run review``
and ``run delete``: change what a run is or does."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ...._errors import APIStatusError
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
from ._group import RunId, Visibility, run_app

__all__ = ["delete", "halt", "kill", "pause", "publish", "resume", "review"]


@run_app.command("publish")
@handle_errors
def publish(
    run_id: RunId,
    visibility: Annotated[
        Visibility, typer.Option(help="public, unlisted (link only) or private.")
    ] = Visibility.public,
    output: OutputOption = None,
) -> None:
    """Make a run public; its benchmark becomes visible in the registry with it."""
    fmt = output_format(output)
    with get_client() as bw:
        target = resolve_run_id(bw, run_id)
        try:
            updated = bw.runs.publish(target, visibility=visibility.value)
        except APIStatusError as exc:
            if _visibility_unsupported(exc):
                fail(
                    "this server cannot change a run's visibility yet (PATCH /v1/runs/{id} "
                    "with 'visibility' is refused); a newer Benchwright server is needed"
                )
            raise

    def table() -> None:
        shown = getattr(updated, "visibility", None) or visibility.value
        typer.echo(f"run {updated.id} is {shown}")

    emit(dump(updated), fmt, table=table)


def _visibility_unsupported(exc: APIStatusError) -> bool:
    """Whether the server does not know the ``visibility`` field (or the route)."""
    if exc.status in (405, 501):
        return True
    if exc.status not in (400, 422):
        return False
    errors = exc.problem.get("errors")
    fields = (
        [e.get("field") for e in errors if isinstance(e, dict)] if isinstance(errors, list) else []
    )
    unknown = "unknown field" in (exc.detail or "") or "extra" in (exc.detail or "").lower()
    return "visibility" in fields or (exc.field == "visibility" and unknown)


Reason = Annotated[str | None, typer.Option(help="Why, for the run's log.", show_default=False)]


@run_app.command("halt")
@handle_errors
def halt(run_id: RunId, reason: Reason = None, output: OutputOption = None) -> None:
    """Stop a run. It stays readable: its log, tasks so far and cost remain."""
    fmt = output_format(output)
    with get_client() as bw:
        halted = bw.runs.halt(resolve_run_id(bw, run_id), reason)
    emit(dump(halted), fmt, table=lambda: typer.echo(f"stopping run {halted.id}"))


@run_app.command("kill")
@handle_errors
def kill(run_id: RunId, reason: Reason = None, output: OutputOption = None) -> None:
    """Stop a run (the same as `run halt`)."""
    halt(run_id, reason, output)


@run_app.command("pause")
@handle_errors
def pause(run_id: RunId, reason: Reason = None, output: OutputOption = None) -> None:
    """Park a run where it is; `benchwright run resume` carries it on."""
    fmt = output_format(output)
    with get_client() as bw:
        paused = bw.runs.halt(resolve_run_id(bw, run_id), reason, pause=True)
    emit(dump(paused), fmt, table=lambda: typer.echo(f"pausing run {paused.id}"))


@run_app.command("resume")
@handle_errors
def resume(run_id: RunId, output: OutputOption = None) -> None:
    """Carry on a paused run from where it stopped."""
    fmt = output_format(output)
    with get_client() as bw:
        resumed = bw.runs.resume(resolve_run_id(bw, run_id))
    emit(dump(resumed), fmt, table=lambda: typer.echo(f"resuming run {resumed.id}"))


@run_app.command("review")
@handle_errors
def review(
    run_id: RunId,
    answer: Annotated[
        str,
        typer.Argument(help="Your answer to the review the run waits on; it guides the Driver."),
    ],
    output: OutputOption = None,
) -> None:
    """Answer a run parked for review, and let it go on."""
    fmt = output_format(output)
    with get_client() as bw:
        updated = bw.runs.update(resolve_run_id(bw, run_id), review_resolution=answer)
    emit(dump(updated), fmt, table=lambda: typer.echo(f"answered the review of run {updated.id}"))


@run_app.command("delete")
@handle_errors
def delete(
    run_id: RunId,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    output: OutputOption = None,
) -> None:
    """DESTROY a run, irreversibly: stopped and removed from every listing.

    To stop a run but keep it, use `benchwright run kill`.
    """
    fmt = output_format(output)
    with get_client() as bw:
        target = resolve_run_id(bw, run_id)
        if not yes:
            if not sys.stdin.isatty():
                fail(f"deleting run {target} is irreversible: pass --yes", code=EXIT_USAGE)
            typer.confirm(f"Destroy run {target} for good?", abort=True)
        deleted = bw.runs.kill(target)
    emit(dump(deleted), fmt, table=lambda: typer.echo(f"deleted run {deleted.id}"))
