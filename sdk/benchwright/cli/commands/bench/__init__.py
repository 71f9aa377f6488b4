"""``benchwright bench``: author benchmarks, subsets and scorers, and fix BUILT ones.

``bench_app`` is the typer group; ``register(app)`` mounts it as ``bench``. Task
rows come from JSON Lines files, one ``{"task_id", "input", "expected"}`` object a
line. Publishing is run-derived: ``benchwright run publish <run_id>``.
"""

from __future__ import annotations

import typer

# The command modules register themselves on the group's apps when imported.
from . import _authoring, _built
from ._group import bench_app

__all__ = ["ORDER", "bench_app", "register"]

ORDER = 20

_COMMANDS = (_authoring, _built)


def register(app: typer.Typer) -> None:
    """Mount ``benchwright bench``."""
    app.add_typer(bench_app, name="bench")
