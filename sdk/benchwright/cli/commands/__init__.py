"""The CLI's commands, one module each, found by name.

Adding a command group is adding a module here that defines ``register(app)`` (it
adds its ``typer.Typer`` or commands to the root) and ``ORDER``, its place in
``benchwright --help``. Nothing else needs editing.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import Final

import typer

__all__ = ["ACCOUNT", "MARKUP", "SERVER", "examples", "register_all"]

# Help texts are Markdown: paragraphs reflow, `code` stands out.
MARKUP: Final = "markdown"

# Panels of `benchwright --help`; commands about runs stay in the first, default one.
ACCOUNT = "Account"
SERVER = "Self-hosted server"


def examples(*lines: str) -> str:
    """An epilog of example command lines."""
    return "Examples:\n\n```\n" + "\n".join(lines) + "\n```"


def _modules() -> list[ModuleType]:
    found = [
        importlib.import_module(f"{__name__}.{info.name}")
        for info in pkgutil.iter_modules(__path__)
        if not info.name.startswith("_")
    ]
    return sorted(found, key=lambda m: (getattr(m, "ORDER", 100), m.__name__))


def register_all(app: typer.Typer) -> None:
    """Mount every command module on the root ``app``, in ``ORDER``."""
    for module in _modules():
        module.register(app)
