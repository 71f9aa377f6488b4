"""Where the client finds its token and server.

Each setting is resolved on its own, first match wins: the explicit argument, then the
environment (``BW_PAT``, ``BW_BASE_URL``), then the credentials file ``benchwright up``
writes (``$BW_DATA_DIR/credentials.json``, else ``~/.benchwright/credentials.json``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._errors import ConfigurationError

__all__ = ["DEFAULT_BASE_URL", "ClientConfig", "credentials_path", "resolve_config"]

# Matches the gateway's default bind address for a local `benchwright up`.
DEFAULT_BASE_URL = "http://127.0.0.1:8765"

ENV_TOKEN = "BW_PAT"
ENV_BASE_URL = "BW_BASE_URL"
ENV_DATA_DIR = "BW_DATA_DIR"


@dataclass(frozen=True)
class ClientConfig:
    """A resolved client configuration."""

    api_key: str
    base_url: str

    def __repr__(self) -> str:
        # Keep the token out of logs and tracebacks that print the config.
        return f"ClientConfig(api_key='{self.api_key[:12]}…', base_url={self.base_url!r})"


def credentials_path() -> Path:
    """The credentials file ``benchwright up`` writes for the current environment."""
    data_dir = os.environ.get(ENV_DATA_DIR)
    base = Path(data_dir).expanduser() if data_dir else Path.home() / ".benchwright"
    return base / "credentials.json"


def _read_credentials(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigurationError(f"cannot read credentials file {path}: {exc}") from exc
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"credentials file {path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigurationError(f"credentials file {path} must hold a JSON object")
    return data


def _first(*candidates: object) -> str | None:
    for candidate in candidates:
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()
    return None


def resolve_config(api_key: str | None = None, base_url: str | None = None) -> ClientConfig:
    """Resolve the token and base URL, raising :class:`ConfigurationError` without a token."""
    # Only touch the file when an argument or variable leaves a gap, so a broken file
    # never gets in the way of an explicitly configured client.
    token = _first(api_key, os.environ.get(ENV_TOKEN))
    url = _first(base_url, os.environ.get(ENV_BASE_URL))
    if token is None or url is None:
        path = credentials_path()
        stored = _read_credentials(path)
        token = token or _first(stored.get("token"))
        url = url or _first(stored.get("base_url"))
        if token is None:
            raise ConfigurationError(
                f"no Benchwright API token: pass api_key=, set {ENV_TOKEN}, or run "
                f"`benchwright up` to start a local server (it writes {path})"
            )
    return ClientConfig(api_key=token, base_url=(url or DEFAULT_BASE_URL).rstrip("/"))
