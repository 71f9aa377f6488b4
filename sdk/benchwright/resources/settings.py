"""``bw.settings``: the account's defaults (a server-side allowlist, see ``schema()``).

A stored default fills a launch field the launch leaves out: ``default_driver``,
``default_compute``, ``default_limits``. Values are checked like the launch field
they stand in for, so a bad one is refused when set, not when a launch uses it.
"""

from __future__ import annotations

import builtins
from typing import Any

from .._async_http import AsyncHTTP
from .._http import SyncHTTP
from .._models import AttrDict
from ._common import parse_dict, path_id

__all__ = ["AsyncSettings", "Settings"]

ROOT = "/v1/settings"


def _key_path(key: str) -> str:
    return f"{ROOT}/{path_id(key)}"


class Settings:
    """Reach it as ``Benchwright().settings``."""

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http

    def list(self) -> builtins.list[AttrDict]:
        """Every setting the account has set, with when it was set."""
        return [parse_dict(s) for s in self._http.request("GET", ROOT)["data"]]

    def get(self, key: str) -> AttrDict:
        """One setting; a key that is not set answers 404."""
        return parse_dict(self._http.request("GET", _key_path(key)))

    def set(self, key: str, value: Any) -> AttrDict:
        """Set ``key``; the server checks ``value`` as a launch would."""
        return parse_dict(
            self._http.request("PUT", _key_path(key), json={"value": value}, retry_safe=True)
        )

    def delete(self, key: str) -> AttrDict:
        """Clear ``key``: launches go back to the platform's own default."""
        return parse_dict(self._http.request("DELETE", _key_path(key)))

    def schema(self) -> AttrDict:
        """The keys a setting may have, their types and what each does."""
        return parse_dict(self._http.request("GET", f"{ROOT}/schema"))


class AsyncSettings:
    """Reach it as ``AsyncBenchwright().settings``; see :class:`Settings`."""

    def __init__(self, http: AsyncHTTP) -> None:
        self._http = http

    async def list(self) -> builtins.list[AttrDict]:
        """Every setting the account has set, with when it was set."""
        return [parse_dict(s) for s in (await self._http.request("GET", ROOT))["data"]]

    async def get(self, key: str) -> AttrDict:
        """One setting; a key that is not set answers 404."""
        return parse_dict(await self._http.request("GET", _key_path(key)))

    async def set(self, key: str, value: Any) -> AttrDict:
        """Set ``key``; the server checks ``value`` as a launch would."""
        found = await self._http.request(
            "PUT", _key_path(key), json={"value": value}, retry_safe=True
        )
        return parse_dict(found)

    async def delete(self, key: str) -> AttrDict:
        """Clear ``key``: launches go back to the platform's own default."""
        return parse_dict(await self._http.request("DELETE", _key_path(key)))

    async def schema(self) -> AttrDict:
        """The keys a setting may have, their types and what each does."""
        return parse_dict(await self._http.request("GET", f"{ROOT}/schema"))
