"""The ``benchwright`` command line."""

from __future__ import annotations

from typing import Annotated

import typer

from .._version import __version__
from ._admin import admin_app
from ._run import run_app
from ._server import serve, up
from ._token import token_app

__all__ = ["app", "main"]

# Locals in a pretty traceback would include the client and thus the API token.
app = typer.Typer(
    name="benchwright",
    help="Run LLM benchmarks honestly: reproducible, comparable, costed.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
app.add_typer(run_app, name="run")
app.add_typer(admin_app, name="admin")
app.add_typer(token_app, name="token")
app.command("up")(up)
app.command("serve")(serve)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"benchwright {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Show version."),
    ] = False,
) -> None:
    """Run LLM benchmarks honestly: reproducible, comparable, costed."""


def main() -> None:
    """Console-script entry point."""
    app()
