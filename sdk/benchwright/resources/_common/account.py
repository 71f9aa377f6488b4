"""The requests of ``bw.secrets``, ``bw.host_policy``, ``bw.tokens``, ``me`` and login."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from typing import Any

from ..._config import ClientConfig, resolve_config
from ..._errors import APIResponseError
from ..._http import Call
from ..._models import AttrDict, BlockedHost
from .base import blocked_host_rows, key_header, parse_dict, parse_list, path_id, present

__all__ = ["AccountCalls", "HostPolicyCalls", "SecretCalls", "TokenCalls"]


SECRETS = "/v1/secrets"
HOST_POLICY = "/v1/host-policy"


def _rules(rules: Iterable[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    return [dict(r) for r in rules] if rules is not None else None


class SecretCalls:
    """The requests of ``bw.secrets``. A secret is named by its ``name``."""

    @staticmethod
    def create(
        name: str,
        value: str,
        description: str,
        rules: Iterable[Mapping[str, Any]],
        idempotency_key: str | None,
    ) -> Call[AttrDict]:
        body = {"name": name, "value": value, "description": description, "rules": _rules(rules)}
        return Call("POST", SECRETS, parse_dict, json=body, headers=key_header(idempotency_key))

    @staticmethod
    def update(
        name: str,
        value: str | None,
        description: str | None,
        rules: Iterable[Mapping[str, Any]] | None,
        idempotency_key: str | None,
    ) -> Call[AttrDict]:
        # Setting the same value, description or rules twice is the same change.
        body = present(value=value, description=description, rules=_rules(rules))
        return Call(
            "PATCH",
            f"{SECRETS}/{path_id(name)}",
            parse_dict,
            json=body,
            headers=key_header(idempotency_key),
            retry_safe=True,
        )

    @staticmethod
    def list() -> Call[builtins.list[AttrDict]]:
        return Call("GET", SECRETS, parse_list)

    @staticmethod
    def get(name: str) -> Call[AttrDict]:
        return Call("GET", f"{SECRETS}/{path_id(name)}", parse_dict)

    @staticmethod
    def delete(name: str) -> Call[AttrDict]:
        return Call("DELETE", f"{SECRETS}/{path_id(name)}", parse_dict)


def _policy_rules(data: Any) -> list[AttrDict]:
    return [parse_dict(rule) for rule in parse_dict(data).get("rules") or []]


class HostPolicyCalls:
    """The requests of ``bw.host_policy``: one policy per account, patched in place."""

    @staticmethod
    def get() -> Call[AttrDict]:
        return Call("GET", HOST_POLICY, parse_dict)

    @staticmethod
    def rules() -> Call[builtins.list[AttrDict]]:
        return Call("GET", HOST_POLICY, _policy_rules)

    @staticmethod
    def update(
        default_mode: str | None = None,
        add: Iterable[Mapping[str, str]] = (),
        remove: Iterable[str] = (),
        starter_pack: bool = False,
        idempotency_key: str | None = None,
    ) -> Call[AttrDict]:
        # Upserts and removals by pattern: the same patch twice is the same policy.
        body: dict[str, Any] = {
            "add": [dict(r) for r in add],
            "remove": list(remove),
            "starter_pack": starter_pack,
            **present(default_mode=default_mode),
        }
        headers = key_header(idempotency_key)
        return Call("PATCH", HOST_POLICY, parse_dict, json=body, headers=headers, retry_safe=True)

    @staticmethod
    def add(host_pattern: str, mode: str, idempotency_key: str | None) -> Call[AttrDict]:
        rule = {"pattern": host_pattern, "action": mode}
        return HostPolicyCalls.update(add=[rule], idempotency_key=idempotency_key)

    @staticmethod
    def blocked_hosts() -> Call[builtins.list[BlockedHost]]:
        return Call("GET", "/v1/blocked-hosts", blocked_host_rows)


class TokenCalls:
    """The requests of ``bw.tokens``; only a session (a login) may send them."""

    @staticmethod
    def create(scopes: Iterable[str], label: str) -> Call[AttrDict]:
        body = {"scopes": list(scopes), "label": label}
        return Call("POST", "/v1/tokens", parse_dict, json=body)

    @staticmethod
    def list() -> Call[builtins.list[AttrDict]]:
        return Call("GET", "/v1/tokens", parse_list)

    @staticmethod
    def revoke(token_id: str) -> Call[AttrDict]:
        return Call("DELETE", f"/v1/tokens/{path_id(token_id)}", parse_dict)


def _session_token(data: Any) -> str:
    token = parse_dict(data).get("token")
    if not isinstance(token, str) or not token:
        raise APIResponseError("the server opened a session without a token")
    return token


class AccountCalls:
    """``bw.me()`` and the login the clients' ``login`` classmethods send."""

    @staticmethod
    def me() -> Call[AttrDict]:
        return Call("GET", "/v1/me", parse_dict)

    @staticmethod
    def login_config(base_url: str | None) -> ClientConfig:
        """The server to log in to, found as a client finds it, and no token yet."""
        # Only the address is wanted: no token exists before the login.
        url = resolve_config(api_key="-", base_url=base_url).base_url
        return ClientConfig(api_key="", base_url=url)

    @staticmethod
    def session(username: str, password: str) -> Call[str]:
        """``POST /v1/sessions``, answering the session token. Never retried past a
        429: a login is not idempotent."""
        body = {"username": username, "password": password}
        return Call("POST", "/v1/sessions", _session_token, json=body)
