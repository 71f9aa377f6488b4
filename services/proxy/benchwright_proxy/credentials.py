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
        # By run and upstream host: a run's judges may live elsewhere than its model.
        self._by_run: dict[tuple[str, str | None], UpstreamAuth | None] = {}

    async def pin(self, binding: ModelBinding, pin_versions: PinVersions) -> None:
        """Pin the account's current secret versions for the run (first attach only)."""
        current = await self._store.run(self._vault.current_versions, binding.account)
        pinned = await pin_versions(binding.run_id, current)
        self.forget(binding.run_id)  # what was opened before the pins
        sut = SutRef.model_validate(binding.sut)
        self._by_run[(binding.run_id, upstream_host(sut))] = await self._open(binding, sut, pinned)

    async def for_binding(
        self, binding: ModelBinding, sut: SutRef | None = None
    ) -> UpstreamAuth | None:
        """What the run's calls to ``sut`` (its model under test unless another is
        named: a judge) carry; rebuilt from the pins after a restart."""
        sut = sut or SutRef.model_validate(binding.sut)
        where = (binding.run_id, upstream_host(sut))
        if where not in self._by_run:
            pinned = binding.pinned_versions or {}
            self._by_run[where] = await self._open(binding, sut, pinned)
        return self._by_run[where]

    async def account_has_key(self, account: str, sut: SutRef) -> bool:
        """Whether one of the account's live secrets is for ``sut``'s upstream host."""
        host = upstream_host(sut)
        if host is None:
            return False
        current = await self._store.run(self._vault.current_versions, account)
        pairs = await self._store.run(self._vault.injections, account, host, current)
        return bool(pairs)

    def forget(self, run_id: str) -> None:
        for where in [k for k in self._by_run if k[0] == run_id]:
            del self._by_run[where]

    async def _open(
        self, binding: ModelBinding, sut: SutRef, pinned: dict[str, int]
    ) -> UpstreamAuth | None:
        host = upstream_host(sut)
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
