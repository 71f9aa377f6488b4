"""Plumbing shared by the CLI commands: the client, output formats and error handling."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from enum import StrEnum
from typing import Any, NoReturn

import typer
from pydantic import BaseModel

from .._client import Benchwright
from .._errors import APIConnectionError, BenchwrightError, ConfigurationError

__all__ = [
    "OutputFormat",
    "client_factory",
    "dump",
    "echo_json",
    "fail",
    "get_client",
    "handle_errors",
]

# Commands build their client through this hook so tests can swap in a fake gateway.
client_factory: Callable[[], Benchwright] = Benchwright


class OutputFormat(StrEnum):
    """How a command prints its result."""

    table = "table"
    json = "json"
    ndjson = "ndjson"


def get_client() -> Benchwright:
    """A client configured from the environment (via :data:`client_factory`)."""
    return client_factory()


def fail(message: str, code: int = 1) -> NoReturn:
    """Print a one-line error on stderr and exit with ``code``."""
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    raise typer.Exit(code)


def dump(model: BaseModel) -> dict[str, Any]:
    """A response model as JSON-ready data, close to what the server sent."""
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def echo_json(document: Any, *, compact: bool = False) -> None:
    """Print a JSON document on stdout (one line when ``compact``, for ndjson)."""
    if compact:
        typer.echo(json.dumps(document, separators=(",", ":"), default=str))
    else:
        typer.echo(json.dumps(document, indent=2, default=str))


def handle_errors[**P, R](func: Callable[P, R]) -> Callable[P, R]:
    """Turn SDK errors into one line on stderr and a non-zero exit, never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except ConfigurationError as exc:
            fail(str(exc), code=2)
        except APIConnectionError as exc:
            fail(f"{exc} (is the server running? `benchwright up` starts a local one)")
        except BenchwrightError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(130) from None

    return wrapper
