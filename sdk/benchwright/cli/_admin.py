"""``benchwright admin``: operator commands for a self-hosted server."""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import OutputFormat, dump, echo_json, get_client, handle_errors

__all__ = ["admin_app"]

admin_app = typer.Typer(help="Operator commands for a self-hosted server.", no_args_is_help=True)


@admin_app.command("rebuild")
@handle_errors
def rebuild(
    projection: Annotated[str, typer.Argument(help="The projection to rebuild, e.g. runs.")],
    output: Annotated[
        OutputFormat, typer.Option("--output", "-o", help="table, json or ndjson.")
    ] = OutputFormat.table,
) -> None:
    """Rebuild a projection from the event log and report whether it had drifted."""
    with get_client() as bw:
        result = bw.admin.rebuild(projection)
    if output is not OutputFormat.table:
        echo_json(dump(result), compact=output is OutputFormat.ndjson)
        return
    typer.echo(f"rebuilt {result.projection}: applied {result.applied} events")
    if result.unchanged:
        typer.echo(f"digest {result.digest} equals the digest before the rebuild")
    else:
        typer.echo(
            f"digest {result.digest} differs from the digest before the rebuild "
            f"({result.before_digest})"
        )
