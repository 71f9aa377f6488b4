"""The ``benchwright`` command line.

Every command lives in a module of :mod:`benchwright.cli.commands`; this module
builds the root with the global options and mounts them all. ``app`` is built on
first use, and ``benchwright up`` / ``serve`` mount only the server's commands: a
server that starts in under three seconds cannot spend half a second importing the
client and building ninety commands it will not run.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .._version import __version__
from ._output import OutputFormat
from .commands import MARKUP, register_all

if TYPE_CHECKING:
    app: typer.Typer

__all__ = ["app", "build_app", "main"]

# The commands that run a server rather than talk to one.
SERVER_COMMANDS = ("up", "serve")


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"benchwright {__version__}")
        raise typer.Exit()


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
    from ._common import CLIState, set_state

    set_state(CLIState(profile=profile, output=output, debug=debug))


def build_app(*, server_only: bool = False) -> typer.Typer:
    """The root command with every command mounted (or only ``up`` and ``serve``)."""
    # Locals in a pretty traceback would include the client and thus the API token.
    root = typer.Typer(
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
    root.callback()(_root)
    if server_only:
        from .commands import server

        server.register(root)
    else:
        register_all(root)
    return root


def _full_app() -> typer.Typer:
    built = globals().get("app")
    if built is None:
        built = globals()["app"] = build_app()
    return built


def __getattr__(name: str) -> Any:
    if name == "app":
        return _full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Console-script entry point."""
    if sys.argv[1:2] and sys.argv[1] in SERVER_COMMANDS:
        build_app(server_only=True)()
    else:
        _full_app()()
