"""Plumbing shared by the CLI commands: global options, the client, output and errors."""

from __future__ import annotations

import contextlib
import functools
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, NoReturn

import typer
from pydantic import BaseModel

from .._client import Benchwright
from .._errors import APIConnectionError, APIStatusError, BenchwrightError, ConfigurationError
from . import _profiles
from ._output import OutputFormat
from ._profiles import LAST, Profile

__all__ = [
    "EXIT_ERROR",
    "EXIT_GATE",
    "EXIT_USAGE",
    "CLIState",
    "OutputFormat",
    "OutputOption",
    "client_factory",
    "dump",
    "echo_json",
    "emit",
    "fail",
    "get_client",
    "handle_errors",
    "output_format",
    "requires_endpoint",
    "resolve_run_id",
    "session_factory",
    "set_state",
    "state",
]

# Exit codes: 0 success; 1 an API error or a run that ended in error; 2 a usage or
# configuration error; 3 a --gate that did not hold.
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_GATE = 3


OutputOption = Annotated[
    OutputFormat | None,
    typer.Option(
        "--output",
        "-o",
        help="table, json, ndjson or yaml (default: table on a terminal, else ndjson).",
        show_default=False,
    ),
]


@dataclass
class CLIState:
    """The root's global options, which every command reads through :func:`state`."""

    profile: str | None = None
    output: OutputFormat | None = None
    debug: bool = False
    _resolved: Profile | None = None

    def resolved_profile(self) -> Profile:
        """The selected profile, read once."""
        if self._resolved is None:
            self._resolved = _profiles.resolve_profile(self.profile)
        return self._resolved


# The running invocation's global options; the root callback sets them first thing.
_current = CLIState()


def set_state(new: CLIState) -> None:
    """Install the global options of a new invocation."""
    global _current
    _current = new


def state() -> CLIState:
    """The global options of the running invocation."""
    return _current


# Commands build their clients through these hooks so tests can swap in a fake gateway.
# ``client_factory`` is called with ``api_key`` and ``base_url`` from the selected
# profile (or None); ``session_factory`` logs in: (username, password, base_url).
client_factory: Callable[..., Benchwright] = Benchwright
session_factory: Callable[..., Benchwright] = Benchwright.login


def get_client() -> Benchwright:
    """A client for the selected profile, else the environment / credentials file."""
    return client_factory(**state().resolved_profile().client_kwargs())


def output_format(option: OutputFormat | None = None) -> OutputFormat:
    """The format to print in: the command's ``-o``, the global ``--output``, else
    table on a terminal and ndjson when piped."""
    chosen = option or state().output
    if chosen is not None:
        return chosen
    return OutputFormat.table if sys.stdout.isatty() else OutputFormat.ndjson


def resolve_run_id(bw: Benchwright, run_id: str) -> str:
    """``@last`` is the run this CLI last launched or forked on this server."""
    return _profiles.recall_last(bw.base_url) if run_id == LAST else run_id


def fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
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


def _echo_yaml(document: Any) -> None:
    import yaml  # only the yaml output pays for the import

    # Through JSON first, so dates and models print as the server spelled them.
    plain = json.loads(json.dumps(document, default=str))
    typer.echo(yaml.safe_dump(plain, sort_keys=False, allow_unicode=True).rstrip("\n"))


def emit(
    document: Any,
    fmt: OutputFormat,
    *,
    table: Callable[[], None] | None = None,
    items: Iterable[Any] | None = None,
) -> None:
    """Print ``document`` in ``fmt``.

    ``table`` draws the human view (default: the JSON, indented); ``items``, when
    given, are what ndjson prints one per line instead of the whole document.
    """
    if fmt is OutputFormat.table:
        if table is not None:
            table()
        else:
            echo_json(document)
    elif fmt is OutputFormat.json:
        echo_json(document)
    elif fmt is OutputFormat.ndjson:
        for item in [document] if items is None else items:
            echo_json(item, compact=True)
    else:
        _echo_yaml(document)


@contextlib.contextmanager
def requires_endpoint(what: str) -> Iterator[None]:
    """Report a 404/405/501 as a server too old for ``what``, in one line.

    Only for calls where a 404 cannot mean a missing resource.
    """
    try:
        yield
    except APIStatusError as exc:
        if exc.status not in (404, 405, 501):
            raise
        typer.echo(
            f"error: this server does not offer {what} yet (it answered {exc.status}); "
            "a newer Benchwright server is needed",
            err=True,
        )
        _debug_problem(exc)
        raise typer.Exit(EXIT_ERROR) from None


def _debug_problem(exc: APIStatusError) -> None:
    if state().debug:
        typer.echo(json.dumps(exc.problem, indent=2, default=str), err=True)


def handle_errors[**P, R](func: Callable[P, R]) -> Callable[P, R]:
    """Turn SDK errors into one line on stderr and a non-zero exit, never a traceback.

    With ``--debug`` the server's whole problem+json body follows that line.
    """

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except ConfigurationError as exc:
            fail(str(exc), code=EXIT_USAGE)
        except APIConnectionError as exc:
            fail(f"{exc} (is the server running? `benchwright up` starts a local one)")
        except APIStatusError as exc:
            typer.echo(f"error: {' '.join(str(exc).split())}", err=True)
            _debug_problem(exc)
            raise typer.Exit(EXIT_ERROR) from None
        except BenchwrightError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(130) from None

    return wrapper
