"""``benchwright token``: mint personal access tokens from an account login."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from .._client import Benchwright
from .._config import credentials_path
from ._common import OutputFormat, echo_json, fail, handle_errors

__all__ = ["token_app"]

token_app = typer.Typer(help="Personal access tokens (minted by a login, never by a token).")


@token_app.command("create")
@handle_errors
def create(
    scopes: Annotated[
        str, typer.Option(help="Comma-separated scopes, e.g. runs:read,runs:write.")
    ] = "runs:read,runs:write",
    label: Annotated[str, typer.Option(help="What the token is for.")] = "",
    username: Annotated[
        str | None, typer.Option(help="Log in as this user (default: the local admin login).")
    ] = None,
    password: Annotated[
        str | None, typer.Option(envvar="BW_PASSWORD", help="The login's password.")
    ] = None,
    output: Annotated[
        OutputFormat, typer.Option("--output", "-o", help="table, json or ndjson.")
    ] = OutputFormat.table,
) -> None:
    """Open a session with a login and mint a token with SCOPES; the token is shown once."""
    if username is None or password is None:
        saved = json.loads(credentials_path().read_text()) if credentials_path().exists() else {}
        login = saved.get("login") or {}
        username = username or login.get("username")
        password = password or login.get("password")
    if not username or not password:
        fail("no login: pass --username and --password (or run `benchwright up` first)", code=2)
    with Benchwright.login(username, password) as session:
        minted = session.tokens.create([s.strip() for s in scopes.split(",") if s.strip()], label)
    if output is OutputFormat.table:
        typer.echo(minted.token)
        typer.echo(f"scopes: {', '.join(minted.scopes)}", err=True)
    else:
        echo_json(dict(minted), compact=output is OutputFormat.ndjson)
