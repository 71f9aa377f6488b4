"""The ``benchwright`` command line.

Every command lives in a module of :mod:`benchwright.cli.commands`; this module
builds the root with the global options and mounts them all.
"""

from __future__ import annotations

from typing import Annotated

import typer

from .._version import __version__
from ._common import CLIState, OutputFormat, set_state
from .commands import MARKUP, register_all

__all__ = ["app", "main"]

# Locals in a pretty traceback would include the client and thus the API token.
app = typer.Typer(
    name="benchwright",
    rich_markup_mode=MARKUP,
    help="Run LLM benchmarks honestly: reproducible, comparable, costed.",
    epilog=(
        "Start with `benchwright login` (or `benchwright up` for a local server), then "
        "`benchwright doctor`. Profiles live in ~/.config/benchwright/config.toml."
    ),
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
register_all(app)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"benchwright {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    profile: Annotated[
        str | None,
        typer.Option(
            envvar="BW_PROFILE",
            help="Use this profile from ~/.config/benchwright/config.toml.",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        OutputFormat | None,
        typer.Option(
            "--output",
            "-o",
            envvar="BW_OUTPUT",
            help="table, json, ndjson or yaml (default: table on a terminal, else ndjson).",
            show_default=False,
        ),
    ] = None,
    debug: Annotated[
        bool, typer.Option("--debug", help="On an API error, also print its problem+json body.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Show version."),
    ] = False,
) -> None:
    """Run LLM benchmarks honestly: reproducible, comparable, costed."""
    set_state(CLIState(profile=profile, output=output, debug=debug))


def main() -> None:
    """Console-script entry point."""
    app()
