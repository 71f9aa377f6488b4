"""``benchwright settings``: the account's defaults for launches, and
``benchwright host-policy``: which hosts sandboxes may reach."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from .._common import EXIT_USAGE, OutputOption, emit, fail, get_client, handle_errors, output_format
from . import ACCOUNT, MARKUP, examples

__all__ = ["ORDER", "host_policy_app", "register", "settings_app"]

ORDER = 35

settings_app = typer.Typer(
    rich_markup_mode=MARKUP,
    no_args_is_help=True,
    help="The account's defaults: what a launch that leaves a field out takes.",
    epilog=examples(
        "benchwright settings ls",
        "benchwright settings set default_driver llm",
        'benchwright settings set default_limits \'{"run": {"cost": 5}}\'',
        "benchwright settings unset default_limits",
    ),
)

host_policy_app = typer.Typer(
    rich_markup_mode=MARKUP,
    no_args_is_help=True,
    help="Which hosts sandboxes may reach: a default mode and allow/block rules.",
    epilog=examples(
        "benchwright host-policy show",
        "benchwright host-policy default block",
        "benchwright host-policy starter-pack",
        "benchwright host-policy allow '*.huggingface.co'",
        "benchwright host-policy remove '*.huggingface.co'",
    ),
)

Key = Annotated[str, typer.Argument(help="The setting, e.g. default_limits (see `schema`).")]
Pattern = Annotated[str, typer.Argument(help="A host or a wildcard, e.g. api.x.com or *.x.com.")]


def _value(text: str) -> Any:
    """JSON when it parses (numbers, objects, true), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _lines(rows: list[dict[str, Any]], *fields: str) -> None:
    for row in rows:
        typer.echo("  ".join(str(row.get(f, "")) for f in fields))


@settings_app.command("ls")
@handle_errors
def list_settings(output: OutputOption = None) -> None:
    """Every setting the account has set."""
    fmt = output_format(output)
    with get_client() as bw:
        rows = [dict(s) for s in bw.settings.list()]
    emit(rows, fmt, table=lambda: _lines(rows, "key", "value", "updated_at"))


@settings_app.command("get")
@handle_errors
def get_setting(key: Key, output: OutputOption = None) -> None:
    """One setting (404 when it is not set)."""
    fmt = output_format(output)
    with get_client() as bw:
        row = dict(bw.settings.get(key))
    emit(row, fmt, table=lambda: typer.echo(json.dumps(row.get("value"))))


@settings_app.command("set")
@handle_errors
def set_setting(
    key: Key,
    value: Annotated[str, typer.Argument(help="The value, as JSON (a bare word is a string).")],
    output: OutputOption = None,
) -> None:
    """Set a default; the server checks it as a launch would."""
    fmt = output_format(output)
    with get_client() as bw:
        row = dict(bw.settings.set(key, _value(value)))
    emit(row, fmt, table=lambda: typer.echo(f"{key} = {json.dumps(row.get('value'))}"))


@settings_app.command("unset")
@handle_errors
def unset_setting(key: Key, output: OutputOption = None) -> None:
    """Clear a default: launches go back to the platform's own."""
    fmt = output_format(output)
    with get_client() as bw:
        row = dict(bw.settings.delete(key))
    emit(row, fmt, table=lambda: typer.echo(f"{key} cleared"))


@settings_app.command("schema")
@handle_errors
def settings_schema(output: OutputOption = None) -> None:
    """The keys a setting may have, and what each does."""
    fmt = output_format(output)
    with get_client() as bw:
        schema = dict(bw.settings.schema())
    emit(schema, fmt, table=lambda: typer.echo(json.dumps(schema, indent=2)))


def _show_policy(policy: dict[str, Any]) -> None:
    typer.echo(f"default: {policy.get('default_mode')}")
    _lines([dict(r) for r in policy.get("rules") or []], "action", "pattern")


@host_policy_app.command("show")
@handle_errors
def show_policy(output: OutputOption = None) -> None:
    """The default mode and the rules."""
    fmt = output_format(output)
    with get_client() as bw:
        policy = dict(bw.host_policy.get())
    emit(policy, fmt, table=lambda: _show_policy(policy))


def _change(fmt: Any, change: Any) -> None:
    with get_client() as bw:
        policy = dict(change(bw.host_policy))
    emit(policy, fmt, table=lambda: _show_policy(policy))


@host_policy_app.command("allow")
@handle_errors
def allow(pattern: Pattern, output: OutputOption = None) -> None:
    """Let sandboxes reach a host (a rule for the pattern replaces the one it had)."""
    _change(output_format(output), lambda hp: hp.add(pattern, "allow"))


@host_policy_app.command("block")
@handle_errors
def block(pattern: Pattern, output: OutputOption = None) -> None:
    """Refuse a host to sandboxes (a block wins over an allow that also matches)."""
    _change(output_format(output), lambda hp: hp.add(pattern, "block"))


@host_policy_app.command("remove")
@handle_errors
def remove(pattern: Pattern, output: OutputOption = None) -> None:
    """Drop the rule for a pattern."""
    _change(output_format(output), lambda hp: hp.delete(pattern))


@host_policy_app.command("default")
@handle_errors
def default(
    mode: Annotated[str, typer.Argument(help="allow or block: for hosts no rule names.")],
    output: OutputOption = None,
) -> None:
    """Set the mode for hosts no rule names."""
    if mode not in ("allow", "block"):
        fail(f"the default mode is allow or block, not {mode!r}", code=EXIT_USAGE)
    _change(output_format(output), lambda hp: hp.default(mode))


@host_policy_app.command("starter-pack")
@handle_errors
def starter_pack(output: OutputOption = None) -> None:
    """Allow the common hosts (package indexes, model hubs, providers)."""
    _change(output_format(output), lambda hp: hp.starter_pack())


def register(app: typer.Typer) -> None:
    """Mount ``benchwright settings`` and ``benchwright host-policy``."""
    app.add_typer(settings_app, name="settings", rich_help_panel=ACCOUNT)
    app.add_typer(host_policy_app, name="host-policy", rich_help_panel=ACCOUNT)
