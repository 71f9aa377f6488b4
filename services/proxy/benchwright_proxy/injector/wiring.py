"""The injector's ports from the proxy's own stores: run bindings and the vault.

The vault is blocking SQLite; every call goes through its ``BlockingStore`` so
vault reads are serialized with the vault's writes, off the event loop. Host
decisions and injections are remembered for ``cache_ttl`` seconds: without that
every proxied request costs two vault reads (~0.4 ms each, one at a time on the
vault's thread), which caps the whole platform's egress at about a thousand
requests a second. A policy or rule change therefore reaches running runs within
``cache_ttl``; pinned versions are unaffected (they are part of the key).
"""

import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Protocol

from benchwright_proxy.domain import InvalidProxyKeyError
from benchwright_proxy.injector.ports import InjectionRule
from benchwright_proxy.injector.rules import normalize_host
from benchwright_proxy.providers.auth import upstream_host
from benchwright_proxy.vault.application import VaultApplication
from benchwright_shared.contracts import SutRef
from benchwright_shared.store import BlockingStore

CACHE_TTL_S = 1.0
# Entries kept at most; past it the cache starts over (a spray of random hosts).
CACHE_MAX = 10_000


class _Binding(Protocol):
    @property
    def run_id(self) -> str: ...

    @property
    def account(self) -> str: ...

    @property
    def sut(self) -> dict[str, Any]: ...


class _TTLCache[V]:
    def __init__(self, ttl: float, max_entries: int = CACHE_MAX) -> None:
        self.ttl = ttl
        self._max = max_entries
        self._entries: dict[Hashable, tuple[float, V]] = {}

    def get(self, key: Hashable) -> V | None:
        found = self._entries.get(key)
        if found is None or found[0] < time.monotonic():
            return None
        return found[1]

    def put(self, key: Hashable, value: V) -> V:
        if self.ttl > 0:
            if len(self._entries) >= self._max:
                self._entries.clear()
            self._entries[key] = (time.monotonic() + self.ttl, value)
        return value


class ServicePorts:
    """``authenticate``, ``decide``, ``injections``, ``pin`` and ``record_refusals`` for
    :class:`~benchwright_proxy.injector.EgressInjector`, from the proxy service's parts.

    ``check_key`` is the proxy's egress key check (``ProxyRuntime.authenticate_egress``): it returns
    the run's binding or raises ``InvalidProxyKeyError``.
    """

    def __init__(
        self,
        check_key: Callable[[str], Awaitable[_Binding]],
        vault: VaultApplication,
        vault_store: BlockingStore,
        cache_ttl: float = CACHE_TTL_S,
    ) -> None:
        self._check_key = check_key
        self._vault = vault
        self._store = vault_store
        self._decisions: _TTLCache[str] = _TTLCache(cache_ttl)
        self._injections: _TTLCache[list[tuple[InjectionRule, str]]] = _TTLCache(cache_ttl)
        # Each run's model host: reachable through the model proxy only, never egress.
        self._model_hosts: dict[str, str | None] = {}

    async def authenticate(self, key: str) -> tuple[str, str] | None:
        try:
            binding = await self._check_key(key)
        except InvalidProxyKeyError:
            return None
        if binding.run_id not in self._model_hosts:
            if len(self._model_hosts) >= CACHE_MAX:
                self._model_hosts.clear()
            host = upstream_host(SutRef.model_validate(binding.sut))
            self._model_hosts[binding.run_id] = normalize_host(host) if host else None
        return binding.run_id, binding.account

    async def decide(self, account: str, host: str, run_id: str | None = None) -> str:
        """The account's policy for ``host``; a run's own model host is always refused,
        so the provider is reached through the model proxy (metered, its key unseen)."""
        if run_id is not None and self._model_hosts.get(run_id) == host:
            return "block"
        key = (account, host)
        found = self._decisions.get(key)
        if found is None:
            found = self._decisions.put(
                key, await self._store.run(self._vault.decide, account, host)
            )
        return found

    async def injections(
        self, account: str, host: str, pinned: dict[str, int]
    ) -> list[tuple[InjectionRule, str]]:
        key = (account, host, tuple(sorted(pinned.items())))
        found = self._injections.get(key)
        if found is None:
            pairs = await self._store.run(self._vault.injections, account, host, pinned)
            found = self._injections.put(key, list(pairs))
        return found

    async def pin(self, account: str) -> dict[str, int]:
        return await self._store.run(self._vault.current_versions, account)

    async def record_refusals(
        self, account: str, refusals: dict[tuple[str | None, str], int]
    ) -> None:
        await self._store.run(self._vault.record_refusals, account, refusals)
