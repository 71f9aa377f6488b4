"""``benchwright admin``: operator commands for a self-hosted server."""

from __future__ import annotations

from typing import Annotated

import typer

from .._common import OutputOption, dump, emit, get_client, handle_errors, output_format
from . import MARKUP, SERVER

__all__ = ["ORDER", "admin_app", "register"]

ORDER = 90

admin_app = typer.Typer(
    rich_markup_mode=MARKUP,
    help="Operator commands for a self-hosted server.",
    no_args_is_help=True,
)


@admin_app.command("rebuild")
@handle_errors
def rebuild(
    projection: Annotated[str, typer.Argument(help="The projection to rebuild, e.g. runs.")],
    output: OutputOption = None,
) -> None:
    """Rebuild a projection from the event log and report whether it had drifted."""
    fmt = output_format(output)
    with get_client() as bw:
        result = bw.admin.rebuild(projection)

    def table() -> None:
        typer.echo(f"rebuilt {result.projection}: applied {result.applied} events")
        if result.unchanged:
            typer.echo(f"digest {result.digest} equals the digest before the rebuild")
        else:
            typer.echo(
                f"digest {result.digest} differs from the digest before the rebuild "
                f"({result.before_digest})"
            )

    emit(dump(result), fmt, table=table)


def register(app: typer.Typer) -> None:
    """Mount ``benchwright admin``."""
    app.add_typer(admin_app, name="admin", rich_help_panel=SERVER)
