"""The CLI's own files: profiles in ``config.toml`` and what it remembers in ``state.json``.

``~/.config/benchwright/config.toml`` (``$XDG_CONFIG_HOME`` is honoured, ``BW_CONFIG``
names another file) holds named profiles, each a server and a token::

    default_profile = "work"

    [profiles.work]
    base_url = "https://benchwright.ai"
    token = "bw_live_pat_..."

``state.json`` beside it remembers the last run this CLI launched or forked on each
server (``@last``) and which run each launch invocation started (re-attaching).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._config import ENV_BASE_URL, ENV_TOKEN
from .._errors import ConfigurationError

__all__ = [
    "LAST",
    "Profile",
    "config_path",
    "load_config",
    "recall_last",
    "recalled_launch",
    "remember_last",
    "remember_launch",
    "resolve_profile",
    "save_profile",
    "state_path",
]

ENV_CONFIG = "BW_CONFIG"
ENV_PROFILE = "BW_PROFILE"
# The name the CLI accepts anywhere a run id goes.
LAST = "@last"
# Launch keys remembered for the "re-attached" notice; older ones are forgotten.
_MAX_LAUNCHES = 200
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class Profile:
    """One ``[profiles.NAME]`` table (or none: ``name`` is ``None``)."""

    name: str | None
    base_url: str | None = None
    token: str | None = None
    # Whether it was asked for (``--profile``/``BW_PROFILE``) rather than a default.
    explicit: bool = False

    def client_kwargs(self) -> dict[str, str | None]:
        """``api_key``/``base_url`` for the client.

        A profile asked for by name beats ``BW_PAT``/``BW_BASE_URL``; a default one
        only fills what the environment leaves unset.
        """
        token, url = self.token, self.base_url
        if not self.explicit:
            token = None if os.environ.get(ENV_TOKEN) else token
            url = None if os.environ.get(ENV_BASE_URL) else url
        return {"api_key": token, "base_url": url}

    def __repr__(self) -> str:
        # The token stays out of reprs, logs and tracebacks.
        return f"Profile(name={self.name!r}, base_url={self.base_url!r})"


def config_path() -> Path:
    """Where profiles live: ``$BW_CONFIG``, else the XDG config dir."""
    explicit = os.environ.get(ENV_CONFIG)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return base / "benchwright" / "config.toml"


def state_path() -> Path:
    """The CLI's memory, beside the config file."""
    return config_path().with_name("state.json")


def load_config(path: Path | None = None) -> dict[str, Any]:
    """The parsed config file (empty when there is none)."""
    path = path or config_path()
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"{path} is not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc}") from exc


def resolve_profile(name: str | None) -> Profile:
    """The profile ``name`` (or ``BW_PROFILE``, or the file's default) selects."""
    path = config_path()
    config = load_config(path)
    profiles = config.get("profiles") or {}
    if not isinstance(profiles, dict):
        raise ConfigurationError(f"{path}: 'profiles' must be a table of [profiles.NAME]")
    wanted = name or os.environ.get(ENV_PROFILE)
    explicit = wanted is not None
    if wanted is None:
        default = config.get("default_profile")
        wanted = default if isinstance(default, str) else "default"
        if wanted not in profiles:
            return Profile(name=None)
    if wanted not in profiles:
        known = ", ".join(sorted(profiles)) or "none yet; `benchwright login` writes one"
        raise ConfigurationError(f"no profile {wanted!r} in {path} (profiles: {known})")
    table = profiles[wanted]
    if not isinstance(table, dict):
        raise ConfigurationError(f"{path}: [profiles.{wanted}] must be a table")
    return Profile(
        name=wanted,
        base_url=_str(table.get("base_url")),
        token=_str(table.get("token")),
        explicit=explicit,
    )


def _str(value: object) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def save_profile(name: str, values: Mapping[str, str]) -> Path:
    """Create or replace ``[profiles.NAME]``; the first profile becomes the default."""
    path = config_path()
    config = load_config(path)
    profiles = config.setdefault("profiles", {})
    profiles[name] = dict(values)
    config.setdefault("default_profile", name)
    _write_private(path, _to_toml(config))
    return path


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        # A JSON string is a valid TOML basic string when non-ASCII is left as is.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise ConfigurationError(f"cannot write {type(value).__name__} to the config file")


def _to_toml(document: Mapping[str, Any], prefix: str = "") -> str:
    """The small TOML subset the config uses: scalars, lists and nested tables."""
    lines: list[str] = []
    tables: list[tuple[str, Mapping[str, Any]]] = []
    for key, value in document.items():
        if isinstance(value, Mapping):
            tables.append((f"{prefix}{_toml_key(key)}", value))
        else:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    out = "\n".join(lines) + ("\n" if lines else "")
    for name, table in tables:
        scalars = any(not isinstance(v, Mapping) for v in table.values())
        header = f"\n[{name}]\n" if scalars else ""
        out += header + _to_toml(table, prefix=f"{name}.")
    return out


def _write_private(path: Path, text: str) -> None:
    """Write atomically, readable by the owner only (the file may hold tokens)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _load_state() -> dict[str, Any]:
    try:
        data = json.loads(state_path().read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_state(state: dict[str, Any]) -> None:
    _write_private(state_path(), json.dumps(state, indent=2) + "\n")


def remember_last(server: str, run_id: str) -> None:
    """Record ``run_id`` as ``@last`` on ``server``."""
    state = _load_state()
    state.setdefault("last", {})[server] = run_id
    _save_state(state)


def recall_last(server: str) -> str:
    """The run ``@last`` names on ``server``."""
    run_id = (_load_state().get("last") or {}).get(server)
    if not isinstance(run_id, str):
        raise ConfigurationError(
            f"{LAST} names nothing yet: this CLI has not launched or forked a run on {server}"
        )
    return run_id


def recalled_launch(key: str) -> str | None:
    """The run an earlier launch with idempotency ``key`` started, if remembered."""
    run_id = (_load_state().get("launches") or {}).get(key)
    return run_id if isinstance(run_id, str) else None


def remember_launch(key: str, run_id: str) -> None:
    """Remember which run the launch keyed ``key`` started."""
    state = _load_state()
    launches: dict[str, str] = state.setdefault("launches", {})
    launches.pop(key, None)
    launches[key] = run_id
    for stale in list(launches)[:-_MAX_LAUNCHES]:
        del launches[stale]
    _save_state(state)
