"""Pure rules of the injector: reading a proxy key, naming a host, placing a secret.

No mitmproxy here, so these are cheap to test and to reason about.
"""

import base64
import binascii
import json
import re
from typing import Literal, NamedTuple

from benchwright_proxy.injector.ports import InjectionRule

# RFC 9110 token characters: what a header name may be made of.
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
# A value must not end a header line early (request smuggling) or carry NULs.
_UNSAFE = re.compile(r"[\r\n\x00]")
# The only headers a rule may not set: they belong to the hop, not to the request.
_RESERVED = frozenset({"proxy-authorization", "host", "content-length", "transfer-encoding"})


class InjectionRuleError(Exception):
    """A rule that cannot be applied as written; the message never holds the value."""


class Placement(NamedTuple):
    """Where one secret goes: a header (replacing any the client sent) or a query parameter."""

    where: Literal["header", "query"]
    name: str
    value: str


def proxy_key(header: str | None) -> str | None:
    """The key in a ``Proxy-Authorization: Basic`` header: the password, else the user name."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic" or not token:
        return None
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, _, password = decoded.partition(":")
    return password or user or None


def normalize_host(host: str) -> str:
    """The host as rules see it: lower case, no trailing dot."""
    return host.lower().rstrip(".")


def place(rule: InjectionRule, value: str) -> Placement:
    """Where ``value`` goes for ``rule``; ``InjectionRuleError`` for a rule it cannot apply."""
    kind, target = rule.inject_kind, rule.inject_target
    if _UNSAFE.search(value):
        raise InjectionRuleError("the secret's value holds a line break or NUL")
    if kind == "bearer":
        return Placement("header", "Authorization", f"Bearer {value}")
    if kind == "basic":
        user = target or ""
        if ":" in user or _UNSAFE.search(user):
            raise InjectionRuleError("a basic rule's user name may not hold ':' or line breaks")
        token = base64.b64encode(f"{user}:{value}".encode()).decode("ascii")
        return Placement("header", "Authorization", f"Basic {token}")
    if kind == "header":
        if not target or not _TOKEN.match(target) or target.lower() in _RESERVED:
            raise InjectionRuleError(f"a header rule needs a valid header name, not {target!r}")
        return Placement("header", target, value)
    if kind == "query":
        if not target or _UNSAFE.search(target):
            raise InjectionRuleError("a query rule needs a parameter name")
        return Placement("query", target, value)
    raise InjectionRuleError(f"unknown inject_kind {kind!r}")


def refusal_body(host: str) -> str:
    """The 403 body: which host, and how the account can allow it."""
    change = json.dumps({"add": [{"pattern": host, "action": "allow"}]})
    return (
        f"Benchwright egress: {host} is blocked by this account's host policy.\n"
        f"To allow it: PATCH /v1/host-policy with {change}\n"
        f"(GET /v1/runs/<run_id>/blocked-hosts lists what a run was refused.)\n"
    )
