"""Each run's provider credentials: vault secrets for the upstream's host, pinned at attach.

The model proxy is "outbound HTTP from the pipeline" like any other: the account's
secret rules matching the provider's host say what to attach. Versions are pinned
on the run's binding when it first attaches, so a rotation reaches new runs and
never a running one; values are opened from the vault and kept in memory only.
"""

import logging
from collections.abc import Awaitable, Callable

from benchwright_proxy.domain import ModelBinding
from benchwright_proxy.injector.rules import InjectionRuleError, place
from benchwright_proxy.providers.auth import UpstreamAuth, upstream_host
from benchwright_proxy.vault.application import VaultApplication
from benchwright_shared.contracts import SutRef
from benchwright_shared.store import BlockingStore

log = logging.getLogger(__name__)

# ``pin(run_id, versions)``: record the versions unless the run has them; the pins.
PinVersions = Callable[[str, dict[str, int]], Awaitable[dict[str, int]]]


class RunCredentials:
    def __init__(self, vault: VaultApplication, vault_store: BlockingStore) -> None:
        self._vault = vault
        self._store = vault_store
        self._by_run: dict[str, UpstreamAuth | None] = {}

    async def pin(self, binding: ModelBinding, pin_versions: PinVersions) -> None:
        """Pin the account's current secret versions for the run (first attach only)."""
        current = await self._store.run(self._vault.current_versions, binding.account)
        pinned = await pin_versions(binding.run_id, current)
        self._by_run[binding.run_id] = await self._open(binding, pinned)

    async def for_binding(self, binding: ModelBinding) -> UpstreamAuth | None:
        """What the run's provider calls carry; rebuilt from the pins after a restart."""
        if binding.run_id not in self._by_run:
            pinned = binding.pinned_versions or {}
            self._by_run[binding.run_id] = await self._open(binding, pinned)
        return self._by_run[binding.run_id]

    def forget(self, run_id: str) -> None:
        self._by_run.pop(run_id, None)

    async def _open(self, binding: ModelBinding, pinned: dict[str, int]) -> UpstreamAuth | None:
        host = upstream_host(SutRef.model_validate(binding.sut))
        if host is None or not pinned:
            return None
        pairs = await self._store.run(self._vault.injections, binding.account, host, pinned)
        auth = UpstreamAuth()
        for rule, value in pairs:
            try:
                placement = place(rule, value)
            except InjectionRuleError as exc:
                # The message names the rule's flaw, never the value.
                log.warning(
                    "run %s: a secret rule for %s was skipped: %s", binding.run_id, host, exc
                )
                continue
            target = auth.headers if placement.where == "header" else auth.params
            target[placement.name] = placement.value
        return auth if auth.headers or auth.params else None
