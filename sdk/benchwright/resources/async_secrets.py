"""``AsyncBenchwright().secrets`` and ``.host_policy``: the async twins of
:mod:`benchwright.resources.secrets`, sending the same requests."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from typing import Any

from .._async_http import AsyncHTTP
from .._models import AttrDict, BlockedHost
from ._common import HostPolicyCalls, SecretCalls

__all__ = ["AsyncHostPolicy", "AsyncSecrets"]


class AsyncSecrets:
    """Provider credentials, write-only; each method is a coroutine behaving as its
    namesake on :class:`~benchwright.resources.secrets.Secrets`."""

    def __init__(self, http: AsyncHTTP) -> None:
        self._http = http

    async def create(
        self,
        name: str,
        value: str,
        *,
        description: str = "",
        rules: Iterable[Mapping[str, Any]] = (),
        idempotency_key: str | None = None,
    ) -> AttrDict:
        """Store a secret and allow the hosts its rules name; the value is never shown."""
        call = SecretCalls.create(name, value, description, rules, idempotency_key)
        return await self._http.send(call)

    async def update(
        self,
        name: str,
        *,
        value: str | None = None,
        description: str | None = None,
        rules: Iterable[Mapping[str, Any]] | None = None,
        idempotency_key: str | None = None,
    ) -> AttrDict:
        """Rotate the value and/or change the description or rules (``name``: a name or
        a ``sec_…`` id); new runs get it."""
        call = SecretCalls.update(name, value, description, rules, idempotency_key)
        return await self._http.send(call)

    rotate = update

    async def list(self) -> builtins.list[AttrDict]:
        """Every secret of the account: names, rules, previews; never a value."""
        return await self._http.send(SecretCalls.list())

    async def get(self, name: str) -> AttrDict:
        """One secret by name or ``sec_…`` id: its rules and a masked preview."""
        return await self._http.send(SecretCalls.get(name))

    async def delete(self, name: str) -> AttrDict:
        """Remove a secret (by name or ``sec_…`` id); new runs can no longer use it."""
        return await self._http.send(SecretCalls.delete(name))


class AsyncHostPolicy:
    """The account's outbound firewall; each method is a coroutine behaving as its
    namesake on :class:`~benchwright.resources.secrets.HostPolicy`."""

    def __init__(self, http: AsyncHTTP) -> None:
        self._http = http

    async def get(self) -> AttrDict:
        """The policy: ``default_mode`` and the ``rules``."""
        return await self._http.send(HostPolicyCalls.get())

    async def list(self) -> builtins.list[AttrDict]:
        """The policy's rules, ``{pattern, action}`` each."""
        return await self._http.send(HostPolicyCalls.rules())

    async def add(
        self, host_pattern: str, mode: str = "allow", *, idempotency_key: str | None = None
    ) -> AttrDict:
        """Allow (or with ``mode="block"``, block) ``host_pattern``."""
        return await self._http.send(HostPolicyCalls.add(host_pattern, mode, idempotency_key))

    async def delete(self, host_pattern: str) -> AttrDict:
        """Remove the rule for ``host_pattern`` or ``hpr_…`` id (404 when it has none)."""
        return await self._http.send(HostPolicyCalls.update(remove=[host_pattern]))

    async def default(self, mode: str) -> AttrDict:
        """Set the mode for hosts no rule names: ``allow`` or ``block``."""
        return await self._http.send(HostPolicyCalls.update(default_mode=mode))

    async def starter_pack(self) -> AttrDict:
        """Allow the common hosts (GitHub, PyPI, Hugging Face, model providers)."""
        return await self._http.send(HostPolicyCalls.update(starter_pack=True))

    async def update(
        self,
        *,
        default_mode: str | None = None,
        add: Iterable[Mapping[str, str]] = (),
        remove: Iterable[str] = (),
        starter_pack: bool = False,
        idempotency_key: str | None = None,
    ) -> AttrDict:
        """Several changes at once; see ``HostPolicy.update``."""
        call = HostPolicyCalls.update(default_mode, add, remove, starter_pack, idempotency_key)
        return await self._http.send(call)

    async def allow(self, pattern: str) -> AttrDict:
        """``add(pattern, mode="allow")``."""
        return await self.add(pattern, "allow")

    async def block(self, pattern: str) -> AttrDict:
        """``add(pattern, mode="block")``."""
        return await self.add(pattern, "block")

    async def blocked_hosts(self) -> builtins.list[BlockedHost]:
        """Every host the account's sandboxes were refused, with counts (account-wide)."""
        return await self._http.send(HostPolicyCalls.blocked_hosts())
