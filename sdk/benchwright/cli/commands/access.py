"""``benchwright login`` and ``benchwright token``: credentials minted through a session.

A password opens a session (``POST /v1/sessions``); only a session mints personal
access tokens (``POST /v1/tokens``), so a leaked token cannot breed more of itself.
"""

from __future__ import annotations

import json
import socket
import sys
from typing import Annotated, Any

import typer

from ..._config import credentials_path
from ..._errors import ConfigurationError
from .. import _common, _profiles
from .._common import (
    EXIT_USAGE,
    OutputFormat,
    OutputOption,
    emit,
    fail,
    handle_errors,
    state,
)
from . import ACCOUNT, MARKUP

__all__ = ["ORDER", "register", "token_app"]

ORDER = 20

# What `login` asks for unless told otherwise: the guide's starter set, plus what the
# CLI's own write commands need. Top-ups (billing:write) and admin are opt-in.
LOGIN_SCOPES = (
    "runs:read",
    "runs:write",
    "runs:label",
    "artifacts:read",
    "secrets:read",
    "secrets:write",
    "billing:read",
    "registry:read",
    "registry:publish",
    "webhooks:read",
    "webhooks:write",
    "settings:read",
    "settings:write",
)

token_app = typer.Typer(
    rich_markup_mode=MARKUP,
    no_args_is_help=True,
    help="Personal access tokens, minted by a login (never by another token).",
)


def _scopes(value: str) -> list[str]:
    return [s for s in value.replace(",", " ").split() if s]


def _saved_login(base_url: str | None) -> tuple[str | None, str | None]:
    """The admin login `benchwright up` saved, when it is for this server."""
    path = credentials_path()
    try:
        saved: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, None
    if base_url is not None and saved.get("base_url", "").rstrip("/") != base_url.rstrip("/"):
        return None, None
    login = saved.get("login") or {}
    return login.get("username") or None, login.get("password") or None


def _credentials(
    username: str | None, password: str | None, base_url: str | None
) -> tuple[str, str]:
    """A username and password: given, saved by `benchwright up`, or asked for."""
    if username is None and password is None:
        saved_user, saved_password = _saved_login(base_url)
        if saved_user and saved_password:
            typer.echo(f"logging in as {saved_user} (saved in {credentials_path()})", err=True)
            return saved_user, saved_password
    interactive = sys.stdin.isatty()
    if username is None and interactive:
        username = typer.prompt("Username")
    if password is None and interactive:
        password = typer.prompt("Password", hide_input=True)
    if not username or not password:
        fail("no login: pass --username and --password (or set BW_PASSWORD)", code=EXIT_USAGE)
    return username, password


UsernameOption = Annotated[
    str | None,
    typer.Option(
        envvar="BW_USERNAME", help="Your login (asked for when missing).", show_default=False
    ),
]
PasswordOption = Annotated[
    str | None,
    typer.Option(
        envvar="BW_PASSWORD",
        help="Its password (asked for, hidden, when missing).",
        show_default=False,
    ),
]


@handle_errors
def login(
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="The server, e.g. https://benchwright.ai (default: the profile's, "
            "BW_BASE_URL, or the local `benchwright up` server).",
            show_default=False,
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            help="Save as this profile (default: --profile, else 'default').", show_default=False
        ),
    ] = None,
    username: UsernameOption = None,
    password: PasswordOption = None,
    scopes: Annotated[
        str,
        typer.Option(
            help="Scopes of the token, comma- or space-separated. Default: runs:read/write, "
            "artifacts:read, secrets:read/write, billing:read, registry:read/publish, "
            "webhooks:read/write, settings:read/write.",
            show_default=False,
        ),
    ] = ",".join(LOGIN_SCOPES),
    label: Annotated[
        str | None,
        typer.Option(help="What the token is for (default: this machine).", show_default=False),
    ] = None,
    output: OutputOption = None,
) -> None:
    """Log in and save a profile: the server and a fresh token for this CLI.

    The profile goes to ~/.config/benchwright/config.toml (BW_CONFIG names another
    file); the first one saved becomes the default. Select one with --profile.
    """
    name = profile or state().profile or "default"
    if url is None:
        existing = _existing_profile(name)
        url = existing.base_url if existing else None
    user, secret = _credentials(username, password, url)
    with _common.session_factory(user, secret, base_url=url) as session:
        minted = session.tokens.create(
            _scopes(scopes), label or f"benchwright CLI on {socket.gethostname()}"
        )
        server = session.base_url
    path = _profiles.save_profile(name, {"base_url": server, "token": str(minted.token)})
    document = {
        "object": "profile",
        "profile": name,
        "base_url": server,
        "username": user,
        "scopes": list(minted.scopes),
        "config": str(path),
    }
    emit(
        document,
        _common.output_format(output),
        table=lambda: typer.echo(
            f"logged in to {server} as {user}; profile {name!r} saved in {path}\n"
            f"scopes: {', '.join(minted.scopes)}"
        ),
    )


def _existing_profile(name: str) -> _profiles.Profile | None:
    try:
        found = _profiles.resolve_profile(name)
    except ConfigurationError:  # no such profile yet: the login creates it
        return None
    return found if found.name else None


@token_app.command("create")
@handle_errors
def create(
    scopes: Annotated[
        str, typer.Option(help="Scopes, comma- or space-separated, e.g. runs:read,runs:write.")
    ] = "runs:read,runs:write",
    label: Annotated[str, typer.Option(help="What the token is for.")] = "",
    username: UsernameOption = None,
    password: PasswordOption = None,
    output: OutputOption = None,
) -> None:
    """Mint a token with SCOPES through a login session; it is shown once.

    Prints the token alone, so `TOKEN=$(benchwright token create)` works, unless
    --output is given. Without --username it uses the local `benchwright up` login.
    """
    base_url = state().resolved_profile().client_kwargs()["base_url"]
    user, secret = _credentials(username, password, None)
    with _common.session_factory(user, secret, base_url=base_url) as session:
        minted = session.tokens.create(_scopes(scopes), label)
    fmt = output or state().output or OutputFormat.table
    if fmt is OutputFormat.table:
        typer.echo(minted.token)
        typer.echo(f"scopes: {', '.join(minted.scopes)}", err=True)
    else:
        emit(dict(minted), fmt)


def register(app: typer.Typer) -> None:
    """Mount ``benchwright login`` and ``benchwright token``."""
    app.command("login", rich_help_panel=ACCOUNT)(login)
    app.add_typer(token_app, name="token", rich_help_panel=ACCOUNT)
