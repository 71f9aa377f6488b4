"""``benchwright up`` / ``serve``: thin launchers for the optional server package.

The server lives in ``benchwright_runtime`` (the ``server`` extra). It is imported only
when one of these commands runs, so the SDK stays installable without it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Annotated

import typer

from . import SERVER

__all__ = ["ORDER", "register", "serve", "up"]

ORDER = 80

_RUNTIME_MODULE = "benchwright_runtime.cli"
_INSTALL_HINT = "install the server: pip install 'benchwright[server]'"


def _runtime() -> ModuleType:
    try:
        return importlib.import_module(_RUNTIME_MODULE)
    except ImportError:
        typer.echo(_INSTALL_HINT, err=True)
        raise typer.Exit(2) from None


def up(
    data_dir: Annotated[
        Path | None,
        typer.Option(help="Where the server keeps its state (default ~/.benchwright)."),
    ] = None,
    port: Annotated[int | None, typer.Option(help="The gateway's port.")] = None,
    proxy_port: Annotated[
        int | None,
        typer.Option(help="The model proxy's port (default 8766, or a free one if taken)."),
    ] = None,
) -> None:
    """Start a local Benchwright server and write credentials for this CLI and the SDK."""
    _runtime().up(data_dir=data_dir, port=port, proxy_port=proxy_port)


def serve(
    service: Annotated[str, typer.Argument(help="The service to run, e.g. gateway.")],
) -> None:
    """Run one Benchwright service in the foreground."""
    _runtime().serve(service)


def register(app: typer.Typer) -> None:
    """Mount ``benchwright up`` and ``benchwright serve``."""
    app.command("up", rich_help_panel=SERVER)(up)
    app.command("serve", rich_help_panel=SERVER)(serve)
