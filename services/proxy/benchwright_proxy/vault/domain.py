"""Secrets, host policy and refusals: aggregates and rules, no I/O.

A secret's value is held only as ciphertext; every version is kept, so a run
that started with version 2 keeps injecting version 2 after a rotation.
"""

import fnmatch
import uuid
from datetime import datetime
from typing import Any

from eventsourcing.domain import Aggregate, event

from benchwright_shared.ids import stable_uuid

# Hosts a scorer commonly needs: package indexes, code hosts, datasets, providers.
STARTER_PACK = (
    "pypi.org",
    "files.pythonhosted.org",
    "github.com",
    "raw.githubusercontent.com",
    "objects.githubusercontent.com",
    "huggingface.co",
    "*.huggingface.co",
    "openrouter.ai",
    "api.together.xyz",
    "api.openai.com",
    "api.anthropic.com",
)


def host_matches(pattern: str, host: str) -> bool:
    """``api.x.com`` matches itself; ``*.x.com`` matches any subdomain (not ``x.com``)."""
    host = host.lower().rstrip(".")
    if pattern.startswith("*."):
        return host.endswith(pattern[1:]) and fnmatch.fnmatchcase(host, pattern)
    return host == pattern


def preview(value: str) -> str:
    """Enough to recognise a key, never enough to use it."""
    return "••••" + value[-4:] if len(value) >= 12 else "••••"


class Secret(Aggregate):
    @staticmethod
    def create_id(account: str, name: str) -> uuid.UUID:
        return stable_uuid("secret", account, name)

    @event("SecretCreated")
    def __init__(self, account: str, name: str) -> None:
        self.account = account
        self.name = name
        self.versions: dict[int, str] = {}
        # Not ``version``: that name is the aggregate's own event count.
        self.latest = 0
        self.description = ""
        self.rules: list[dict[str, Any]] = []
        self.preview = ""
        self.deleted = False
        self.updated_at: datetime | None = None

    @event("SecretStored")
    def store(
        self,
        ciphertext: str | None,
        preview: str | None,
        description: str | None,
        rules: list[dict[str, Any]] | None,
        at: datetime,
    ) -> None:
        if ciphertext is not None:
            self.latest += 1
            self.versions[self.latest] = ciphertext
            self.preview = preview or ""
        if description is not None:
            self.description = description
        if rules is not None:
            self.rules = rules
        self.deleted = False
        self.updated_at = at

    @event("SecretDeleted")
    def delete(self, at: datetime) -> None:
        self.deleted = True
        self.updated_at = at


class SecretIndex(Aggregate):
    """The names of an account's secrets, for listing."""

    @staticmethod
    def create_id(account: str) -> uuid.UUID:
        return stable_uuid("secret-index", account)

    @event("SecretIndexOpened")
    def __init__(self, account: str) -> None:
        self.account = account
        self.names: list[str] = []

    @event("SecretNamed")
    def add(self, name: str) -> None:
        if name not in self.names:
            self.names.append(name)


class HostPolicy(Aggregate):
    """Allow and block patterns, and what happens to anything else."""

    @staticmethod
    def create_id(account: str) -> uuid.UUID:
        return stable_uuid("host-policy", account)

    @event("HostPolicyOpened")
    def __init__(self, account: str) -> None:
        self.account = account
        # A fresh account allows by default: first runs just work, and the
        # blocked-host log shows what to pin down before flipping to block.
        self.default_mode = "allow"
        self.rules: dict[str, str] = {}

    @event("HostPolicyChanged")
    def change(self, default_mode: str | None, upsert: dict[str, str], remove: list[str]) -> None:
        if default_mode is not None:
            self.default_mode = default_mode
        for pattern in remove:
            self.rules.pop(pattern, None)
        self.rules.update(upsert)

    def decide(self, host: str) -> str:
        """``allow`` or ``block`` for ``host``; a matching block rule always wins."""
        matched = {action for pattern, action in self.rules.items() if host_matches(pattern, host)}
        if "block" in matched:
            return "block"
        if "allow" in matched:
            return "allow"
        return self.default_mode


class BlockedHostLog(Aggregate):
    """Every refused host, per run, with how often and when."""

    @staticmethod
    def create_id(account: str) -> uuid.UUID:
        return stable_uuid("blocked-hosts", account)

    @event("BlockedHostLogOpened")
    def __init__(self, account: str) -> None:
        self.account = account
        self.entries: dict[str, dict[str, Any]] = {}

    @event("HostRefused")
    def refused(self, run_id: str | None, host: str, count: int, at: datetime) -> None:
        key = f"{run_id or ''}|{host}"
        entry = self.entries.setdefault(
            key, {"host": host, "run_id": run_id, "seen_count": 0, "first_seen": at}
        )
        entry["seen_count"] += count
        entry["last_seen"] = at
