"""``benchwright run``: launch a run and follow it, fork one, or inspect and manage runs.

``benchwright run ARGS`` is ``benchwright run launch ARGS`` unless ARGS start with
one of the group's subcommands.
"""

from __future__ import annotations

import typer

# The command modules register themselves on ``run_app`` when imported.
from . import _labelling, _launching, _managing, _reading
from ._group import run_app

__all__ = ["ORDER", "register", "run_app"]

ORDER = 10

_COMMANDS = (_launching, _reading, _managing, _labelling)


def register(app: typer.Typer) -> None:
    """Mount ``benchwright run``."""
    # The default panel, listed first: running benchmarks is what the CLI is for.
    app.add_typer(run_app, name="run")
