"""``bw.secrets`` and ``bw.host_policy``: provider credentials and the outbound firewall.

A secret's value goes to a vault and is never shown again: a server-side proxy
attaches it to the pipeline's outbound HTTP, by hostname. Every answer carries a
masked ``preview`` and a ``version``, never the value. A rotation is a new
version; runs already going keep the version they started with.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from typing import Any

from .._http import SyncHTTP
from .._models import AttrDict, BlockedHost
from ._common import HostPolicyCalls, SecretCalls

__all__ = ["HostPolicy", "Secrets"]


class Secrets:
    """Provider credentials; reach it as ``Benchwright().secrets``.

    A secret is named by its ``name`` (``OPENROUTER_API_KEY``): that is the id the
    other methods take. Each rule says where to inject it:
    ``{"host_pattern": "openrouter.ai", "inject_kind": "bearer",
    "inject_target": "Authorization"}``, with ``inject_kind`` one of ``bearer``,
    ``header``, ``basic`` (value ``user:password``) or ``query``.
    """

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http

    def create(
        self,
        name: str,
        value: str,
        *,
        description: str = "",
        rules: Iterable[Mapping[str, Any]] = (),
        idempotency_key: str | None = None,
    ) -> AttrDict:
        """Store a secret; the answer shows its rules and a masked preview, never the value.

        The hosts its rules name are allowed by the host policy. A second secret of
        the same name is a :class:`~benchwright.ConflictError`. With an
        ``idempotency_key`` (sent as the ``Idempotency-Key`` header) the SDK retries
        a failed attempt with the same key.
        """
        call = SecretCalls.create(name, value, description, rules, idempotency_key)
        return self._http.send(call)

    def update(
        self,
        name: str,
        *,
        value: str | None = None,
        description: str | None = None,
        rules: Iterable[Mapping[str, Any]] | None = None,
        idempotency_key: str | None = None,
    ) -> AttrDict:
        """Rotate the value and/or change the description or rules (what is left out stays).
        ``name`` is the secret's name or its ``sec_…`` id.

        Running runs keep the value they started with; new runs get the new one.
        Setting the same thing twice is the same change, so this is retried safely.
        """
        call = SecretCalls.update(name, value, description, rules, idempotency_key)
        return self._http.send(call)

    rotate = update

    def list(self) -> builtins.list[AttrDict]:
        """Every secret of the account: names, rules, previews; never a value."""
        return self._http.send(SecretCalls.list())

    def get(self, name: str) -> AttrDict:
        """One secret by name or ``sec_…`` id: its rules and a masked preview, never the
        value."""
        return self._http.send(SecretCalls.get(name))

    def delete(self, name: str) -> AttrDict:
        """Remove a secret (by name or ``sec_…`` id); new runs can no longer use it."""
        return self._http.send(SecretCalls.delete(name))


class HostPolicy:
    """The account's outbound firewall; reach it as ``Benchwright().host_policy``.

    The policy is a default mode (``allow`` or ``block``) plus rules
    ``{"pattern": "api.example.com" | "*.example.com", "action": "allow" | "block"}``.
    A rule is keyed by its pattern: that is the ``entry_id`` :meth:`delete` takes.
    Hosts a run was refused are logged for trust-on-observation
    (:meth:`blocked_hosts`); allow the ones you trust with :meth:`add`. Every
    method answers the whole policy as it now is.
    """

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http

    def get(self) -> AttrDict:
        """The policy: ``default_mode`` and the ``rules``."""
        return self._http.send(HostPolicyCalls.get())

    def list(self) -> builtins.list[AttrDict]:
        """The policy's rules, ``{pattern, action}`` each (the default mode is in :meth:`get`)."""
        return self._http.send(HostPolicyCalls.rules())

    def add(
        self, host_pattern: str, mode: str = "allow", *, idempotency_key: str | None = None
    ) -> AttrDict:
        """Allow (or with ``mode="block"``, block) ``host_pattern``; a pattern that has a
        rule already gets this one instead."""
        return self._http.send(HostPolicyCalls.add(host_pattern, mode, idempotency_key))

    def delete(self, host_pattern: str) -> AttrDict:
        """Remove the rule for ``host_pattern``, or the rule whose ``hpr_…`` id it is (the
        guide's ``entry_id``); one with no rule is a :class:`~benchwright.NotFoundError`."""
        return self._http.send(HostPolicyCalls.update(remove=[host_pattern]))

    def default(self, mode: str) -> AttrDict:
        """Set the mode for hosts no rule names: ``allow`` or ``block``."""
        return self._http.send(HostPolicyCalls.update(default_mode=mode))

    def starter_pack(self) -> AttrDict:
        """Allow the common hosts (GitHub, PyPI, Hugging Face, model providers): the
        usual companion of ``default("block")``, so runs can still install and download."""
        return self._http.send(HostPolicyCalls.update(starter_pack=True))

    def update(
        self,
        *,
        default_mode: str | None = None,
        add: Iterable[Mapping[str, str]] = (),
        remove: Iterable[str] = (),
        starter_pack: bool = False,
        idempotency_key: str | None = None,
    ) -> AttrDict:
        """Several changes at once: flip the default mode, upsert ``{pattern, action}``
        rules, remove patterns, add the starter pack."""
        call = HostPolicyCalls.update(default_mode, add, remove, starter_pack, idempotency_key)
        return self._http.send(call)

    def allow(self, pattern: str) -> AttrDict:
        """``add(pattern, mode="allow")``."""
        return self.add(pattern, "allow")

    def block(self, pattern: str) -> AttrDict:
        """``add(pattern, mode="block")``."""
        return self.add(pattern, "block")

    def blocked_hosts(self) -> builtins.list[BlockedHost]:
        """Every host the account's sandboxes were refused, with counts: account-wide,
        where ``runs.blocked_hosts(run_id)`` is one run's."""
        return self._http.send(HostPolicyCalls.blocked_hosts())
