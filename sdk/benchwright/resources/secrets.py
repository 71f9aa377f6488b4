"""``bw.secrets`` and ``bw.host_policy``: provider credentials and the outbound firewall.

Secrets are write-only: every answer carries a masked ``preview`` and a
``version``, never the value. A rotation is a new version; runs already going
keep the version they started with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .._http import SyncHTTP
from .._models import AttrDict
from ._common import parse_dict, path_id

__all__ = ["HostPolicy", "Secrets"]


def _rules(rules: Iterable[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    return [dict(r) for r in rules] if rules is not None else None


class Secrets:
    """Reach it as ``Benchwright().secrets``."""

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http

    def create(
        self,
        name: str,
        value: str,
        *,
        description: str = "",
        rules: Iterable[Mapping[str, Any]] = (),
    ) -> AttrDict:
        """Store a secret; each rule is ``{host_pattern, inject_kind, inject_target}``.

        Its hosts are added to the host policy as allowed.
        """
        body = {"name": name, "value": value, "description": description, "rules": _rules(rules)}
        return parse_dict(self._http.request("POST", "/v1/secrets", json=body))

    def update(
        self,
        name: str,
        *,
        value: str | None = None,
        description: str | None = None,
        rules: Iterable[Mapping[str, Any]] | None = None,
    ) -> AttrDict:
        """Rotate the value and/or change the description or rules."""
        body = {"value": value, "description": description, "rules": _rules(rules)}
        body = {k: v for k, v in body.items() if v is not None}
        return parse_dict(
            self._http.request("PATCH", f"/v1/secrets/{path_id(name)}", json=body, retry_safe=True)
        )

    rotate = update

    def list(self) -> list[AttrDict]:
        return [parse_dict(s) for s in self._http.request("GET", "/v1/secrets")["data"]]

    def get(self, name: str) -> AttrDict:
        return parse_dict(self._http.request("GET", f"/v1/secrets/{path_id(name)}"))

    def delete(self, name: str) -> AttrDict:
        return parse_dict(self._http.request("DELETE", f"/v1/secrets/{path_id(name)}"))


class HostPolicy:
    """Reach it as ``Benchwright().host_policy``."""

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http

    def get(self) -> AttrDict:
        """The default mode (``allow`` or ``block``) and the allow/block patterns."""
        return parse_dict(self._http.request("GET", "/v1/host-policy"))

    def update(
        self,
        *,
        default_mode: str | None = None,
        add: Iterable[Mapping[str, str]] = (),
        remove: Iterable[str] = (),
        starter_pack: bool = False,
    ) -> AttrDict:
        """Flip the default mode, upsert ``{pattern, action}`` rules, remove patterns."""
        body: dict[str, Any] = {
            "add": [dict(r) for r in add],
            "remove": list(remove),
            "starter_pack": starter_pack,
        }
        if default_mode is not None:
            body["default_mode"] = default_mode
        return parse_dict(
            self._http.request("PATCH", "/v1/host-policy", json=body, retry_safe=True)
        )

    def allow(self, pattern: str) -> AttrDict:
        return self.update(add=[{"pattern": pattern, "action": "allow"}])

    def block(self, pattern: str) -> AttrDict:
        return self.update(add=[{"pattern": pattern, "action": "block"}])

    def blocked_hosts(self) -> list[AttrDict]:
        """Every host the account's sandboxes were refused, most frequent first."""
        return [parse_dict(b) for b in self._http.request("GET", "/v1/blocked-hosts")["data"]]
