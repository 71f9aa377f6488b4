"""The vault's application: store and rotate secrets, keep host policy, log refusals."""

import uuid
from datetime import UTC, datetime
from typing import Any

from eventsourcing.application import AggregateNotFoundError, Application

from benchwright_proxy.vault.crypto import Sealer
from benchwright_proxy.vault.domain import (
    STARTER_PACK,
    BlockedHostLog,
    HostPolicy,
    Secret,
    SecretIndex,
    host_matches,
    preview,
)
from benchwright_shared.contracts.vault import (
    BlockedHost,
    HostPolicyView,
    HostRule,
    PutSecret,
    SecretRule,
    SecretView,
    UpdateHostPolicy,
)
from benchwright_shared.refusal import Refused


class VaultApplication(Application[uuid.UUID]):
    name = "vault"

    def __init__(self, sealer: Sealer, env: dict[str, str]) -> None:
        super().__init__(env=env)
        self.sealer = sealer

    def _get[A](self, cls: type[A], aggregate_id: uuid.UUID) -> A | None:
        try:
            found: A = self.repository.get(aggregate_id)
        except AggregateNotFoundError:
            return None
        return found

    # -- secrets ------------------------------------------------------------------------
    def put(self, command: PutSecret) -> SecretView:
        now = datetime.now(UTC)
        secret = self._get(Secret, Secret.create_id(command.account, command.name))
        exists = secret is not None and not secret.deleted
        if command.create_only and exists:
            raise Refused(
                409, "secret exists", f"a secret named {command.name!r} exists", field="name"
            )
        if not exists and command.value is None:
            raise Refused(
                404, "secret not found", f"no secret named {command.name!r}", field="name"
            )
        if secret is None:
            secret = Secret(command.account, command.name)
        secret.store(
            ciphertext=self.sealer.seal(command.value) if command.value is not None else None,
            preview=preview(command.value) if command.value is not None else None,
            description=command.description,
            rules=[r.model_dump() for r in command.rules] if command.rules is not None else None,
            at=now,
        )
        index = self._get(SecretIndex, SecretIndex.create_id(command.account)) or SecretIndex(
            command.account
        )
        index.add(command.name)
        # A secret's hosts are hosts the account means to reach: allow them.
        policy = self._policy(command.account)
        allowed = {r.host_pattern: "allow" for r in command.rules or []}
        pending = [index, secret]
        if allowed:
            policy.change(default_mode=None, upsert=allowed, remove=[])
            pending.append(policy)
        self.save(*pending)
        return self._view(secret)

    def read(self, account: str, name: str | None) -> list[SecretView]:
        if name is not None:
            secret = self._get(Secret, Secret.create_id(account, name))
            if secret is None or secret.deleted:
                raise Refused(404, "secret not found", f"no secret named {name!r}", field="name")
            return [self._view(secret)]
        index = self._get(SecretIndex, SecretIndex.create_id(account))
        views = []
        for each in index.names if index else []:
            secret = self._get(Secret, Secret.create_id(account, each))
            if secret is not None and not secret.deleted:
                views.append(self._view(secret))
        return views

    def delete(self, account: str, name: str) -> None:
        secret = self._get(Secret, Secret.create_id(account, name))
        if secret is None or secret.deleted:
            raise Refused(404, "secret not found", f"no secret named {name!r}", field="name")
        secret.delete(at=datetime.now(UTC))
        self.save(secret)

    def current_versions(self, account: str) -> dict[str, int]:
        """What a run starting now pins: each live secret's latest version."""
        index = self._get(SecretIndex, SecretIndex.create_id(account))
        pins = {}
        for name in index.names if index else []:
            secret = self._get(Secret, Secret.create_id(account, name))
            if secret is not None and not secret.deleted:
                pins[name] = secret.latest
        return pins

    def injections(
        self, account: str, host: str, pinned: dict[str, int]
    ) -> list[tuple[SecretRule, str]]:
        """The (rule, value) pairs to apply to a request for ``host``, at the pinned versions."""
        found = []
        for name, version in sorted(pinned.items()):
            secret = self._get(Secret, Secret.create_id(account, name))
            if secret is None or version not in secret.versions:
                continue
            for rule in secret.rules:
                if host_matches(rule["host_pattern"], host):
                    value = self.sealer.open(secret.versions[version])
                    found.append((SecretRule.model_validate(rule), value))
        return found

    def _view(self, secret: Secret) -> SecretView:
        assert secret.updated_at is not None
        return SecretView(
            name=secret.name,
            description=secret.description,
            rules=[SecretRule.model_validate(r) for r in secret.rules],
            preview=secret.preview,
            version=secret.latest,
            created_at=secret.created_on,
            updated_at=secret.updated_at,
        )

    # -- host policy --------------------------------------------------------------------
    def _policy(self, account: str) -> HostPolicy:
        return self._get(HostPolicy, HostPolicy.create_id(account)) or HostPolicy(account)

    def host_policy(self, account: str) -> HostPolicyView:
        policy = self._policy(account)
        rules = [
            HostRule.model_validate({"pattern": p, "action": a})
            for p, a in sorted(policy.rules.items())
        ]
        return HostPolicyView.model_validate({"default_mode": policy.default_mode, "rules": rules})

    def update_host_policy(self, command: UpdateHostPolicy) -> HostPolicyView:
        policy = self._policy(command.account)
        unknown = [p for p in command.remove if p not in policy.rules]
        if unknown:
            raise Refused(
                404, "no such rule", f"no host rule for {', '.join(unknown)}", field="remove"
            )
        upsert: dict[str, str] = {r.pattern: str(r.action) for r in command.upsert}
        if command.starter_pack:
            upsert = {p: "allow" for p in STARTER_PACK} | upsert
        policy.change(default_mode=command.default_mode, upsert=upsert, remove=command.remove)
        self.save(policy)
        return self.host_policy(command.account)

    def decide(self, account: str, host: str) -> str:
        return self._policy(account).decide(host)

    # -- refusals -----------------------------------------------------------------------
    def record_refusals(self, account: str, refusals: dict[tuple[str | None, str], int]) -> None:
        """Add refusals seen since the last call (batched: a loop of requests is one event)."""
        log = self._get(BlockedHostLog, BlockedHostLog.create_id(account)) or BlockedHostLog(
            account
        )
        now = datetime.now(UTC)
        for (run_id, host), count in refusals.items():
            log.refused(run_id=run_id, host=host, count=count, at=now)
        self.save(log)

    def blocked_hosts(self, account: str, run_id: str | None) -> list[BlockedHost]:
        log = self._get(BlockedHostLog, BlockedHostLog.create_id(account))
        entries: list[dict[str, Any]] = list(log.entries.values()) if log else []
        if run_id is not None:
            entries = [e for e in entries if e["run_id"] == run_id]
        entries.sort(key=lambda e: (-int(e["seen_count"]), e["host"]))
        return [BlockedHost.model_validate(e) for e in entries]
