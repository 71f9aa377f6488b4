"""``benchwright secrets``: provider credentials, injected by the proxy, never shown."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.console import Console

from .._common import EXIT_USAGE, OutputOption, emit, fail, get_client, handle_errors, output_format
from .._render import secrets_table
from . import ACCOUNT, MARKUP, examples

__all__ = ["ORDER", "register", "secrets_app"]

ORDER = 30

secrets_app = typer.Typer(
    rich_markup_mode=MARKUP,
    no_args_is_help=True,
    help=(
        "Provider credentials. Values are write-only: the proxy attaches them to "
        "outbound requests by host; every answer shows a masked preview."
    ),
    epilog=examples(
        "benchwright secrets add OPENROUTER_API_KEY --rule openrouter.ai:bearer:Authorization",
        "pass show openrouter | benchwright secrets rotate OPENROUTER_API_KEY -",
    ),
)

Name = Annotated[str, typer.Argument(help="The secret's name, e.g. OPENROUTER_API_KEY.")]
Value = Annotated[
    str | None,
    typer.Argument(
        help="The value; '-' or nothing reads it from stdin (or asks, hidden, on a "
        "terminal) so it stays out of your shell history.",
        show_default=False,
    ),
]
_KINDS = ("bearer", "header", "basic", "query")


def _value(given: str | None) -> str:
    if given is not None and given != "-":
        return given
    if sys.stdin.isatty():
        value: str = typer.prompt("Value", hide_input=True)
        return value
    value = sys.stdin.readline().rstrip("\r\n")
    if not value:
        fail("no value on stdin", code=EXIT_USAGE)
    return value


def parse_rule(value: str) -> dict[str, str]:
    """``HOST[:KIND[:TARGET]]``, e.g. ``openrouter.ai:bearer:Authorization``."""
    host, _, rest = value.partition(":")
    kind, _, target = rest.partition(":")
    kind = kind or "bearer"
    if not host or kind not in _KINDS:
        fail(
            f"--rule takes HOST[:KIND[:TARGET]] with KIND one of {', '.join(_KINDS)} "
            f"(got {value!r})",
            code=EXIT_USAGE,
        )
    rule = {"host_pattern": host, "inject_kind": kind}
    if target:
        rule["inject_target"] = target
    return rule


def _show(secret: dict[str, Any], verb: str) -> None:
    typer.echo(
        f"{verb} {secret.get('name')} (version {secret.get('version')}, {secret.get('preview')})"
    )


@secrets_app.command("add")
@handle_errors
def add(
    name: Name,
    value: Value = None,
    rule: Annotated[
        list[str] | None,
        typer.Option(
            "--rule",
            metavar="HOST[:KIND[:TARGET]]",
            help="Attach the value to requests to HOST: KIND bearer (default), header, "
            "basic or query; TARGET the header or parameter. Repeatable.",
            show_default=False,
        ),
    ] = None,
    description: Annotated[str, typer.Option(help="A note for you.")] = "",
    output: OutputOption = None,
) -> None:
    """Store a new secret; its rules' hosts become allowed in the host policy."""
    rules = [parse_rule(r) for r in rule or []]
    secret_value = _value(value)
    fmt = output_format(output)
    with get_client() as bw:
        created = bw.secrets.create(name, secret_value, description=description, rules=rules)
    emit(dict(created), fmt, table=lambda: _show(created, "added"))


@secrets_app.command("rotate")
@handle_errors
def rotate(name: Name, value: Value = None, output: OutputOption = None) -> None:
    """Replace a secret's value. New runs use it; running runs keep the old one."""
    secret_value = _value(value)
    fmt = output_format(output)
    with get_client() as bw:
        updated = bw.secrets.rotate(name, value=secret_value)
    emit(dict(updated), fmt, table=lambda: _show(updated, "rotated"))


@secrets_app.command("ls")
@handle_errors
def ls(output: OutputOption = None) -> None:
    """List your secrets: names, previews, versions and rules, never values."""
    fmt = output_format(output)
    with get_client() as bw:
        found = [dict(s) for s in bw.secrets.list()]
    emit(
        {"object": "list", "data": found},
        fmt,
        table=lambda: Console(highlight=False).print(secrets_table(found)),
        items=found,
    )


def register(app: typer.Typer) -> None:
    """Mount ``benchwright secrets``."""
    app.add_typer(secrets_app, name="secrets", rich_help_panel=ACCOUNT)
