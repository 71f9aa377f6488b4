"""Access tokens, idempotency records and the rules for showing a run. No I/O."""

import hashlib
import uuid
from typing import Any

from eventsourcing.domain import Aggregate, event

from benchwright_shared.hashing import canonical_json, sha256_hex
from benchwright_shared.ids import stable_uuid

ALL_SCOPES = (
    "runs:read",
    "runs:write",
    "artifacts:read",
    "secrets:read",
    "secrets:write",
    "billing:read",
    "billing:write",
    "registry:read",
    "registry:publish",
    "admin",
)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class AccessToken(Aggregate):
    """A personal access token, known only by its hash."""

    @staticmethod
    def create_id(hashed: str) -> uuid.UUID:
        return stable_uuid("pat", hashed)

    @event("Minted")
    def __init__(self, hashed: str, account: str, scopes: list[str], label: str) -> None:
        self.hashed = hashed
        self.account = account
        self.scopes = scopes
        self.label = label
        self.revoked = False

    @event("Revoked")
    def revoke(self) -> None:
        self.revoked = True

    def allows(self, scope: str) -> bool:
        return not self.revoked and (scope in self.scopes or "admin" in self.scopes)


class IdempotencyRecord(Aggregate):
    """The first launch made with a key; later launches with it get the same run."""

    @staticmethod
    def create_id(account: str, key: str) -> uuid.UUID:
        return stable_uuid("idempotency", account, key)

    @event("Recorded")
    def __init__(self, account: str, key: str, body_sha256: str, run_id: str) -> None:
        self.account = account
        self.key = key
        self.body_sha256 = body_sha256
        self.run_id = run_id


def body_fingerprint(body: dict[str, Any]) -> str:
    return sha256_hex(canonical_json(body))


def display_status(status: str, halted: bool, halt_reason: str | None) -> str:
    """One field that reads right for every state, pauses included."""
    if halted and halt_reason:
        if halt_reason.startswith(("agent_review", "restart_cap_exceeded")):
            return "waiting"
        if halt_reason.startswith("operator_pause"):
            return "paused"
        if halt_reason.startswith("operator_kill"):
            return "killed"
        return "halted"
    return status
