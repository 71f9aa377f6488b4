"""Access tokens, idempotency records and the rules for showing a run. No I/O."""

import hashlib
import hmac
import uuid
from typing import Any

from eventsourcing.domain import Aggregate, event

from benchwright_shared.hashing import canonical_json, sha256_hex
from benchwright_shared.ids import stable_uuid

ALL_SCOPES = (
    "runs:read",
    "runs:write",
    # Grading a run's tasks by hand (``POST /v1/runs/{id}/labels``), and nothing else.
    "runs:label",
    "artifacts:read",
    "secrets:read",
    "secrets:write",
    "billing:read",
    "billing:write",
    "registry:read",
    "registry:publish",
    "webhooks:read",
    "webhooks:write",
    "settings:read",
    "settings:write",
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


# A session is an account's login, good for minting tokens; it does not last.
SESSION_TTL_S = 12 * 3600
SESSION_PREFIX = "bw_session_"


def hash_password(password: str, salt: bytes) -> str:
    """scrypt (RFC 7914) with parameters fit for an interactive login."""
    digest = hashlib.scrypt(password.encode(), salt=salt, n=2**14, r=8, p=1, dklen=32)
    return f"scrypt${salt.hex()}${digest.hex()}"


def password_matches(password: str, stored: str) -> bool:
    _, salt, _ = stored.split("$", 2)
    return hmac.compare_digest(hash_password(password, bytes.fromhex(salt)), stored)


class Login(Aggregate):
    """A username and password that open sessions for one account."""

    @staticmethod
    def create_id(username: str) -> uuid.UUID:
        return stable_uuid("login", username.lower())

    @event("LoginCreated")
    def __init__(self, username: str, account: str, password_hash: str, admin: bool) -> None:
        self.username = username
        self.account = account
        self.password_hash = password_hash
        self.admin = admin


class Session(Aggregate):
    """An open login, known only by its hash, expiring."""

    @staticmethod
    def create_id(hashed: str) -> uuid.UUID:
        return stable_uuid("session", hashed)

    @event("SessionOpened")
    def __init__(
        self, hashed: str, account: str, username: str, admin: bool, expires_at: float
    ) -> None:
        self.hashed = hashed
        self.account = account
        self.username = username
        self.admin = admin
        self.expires_at = expires_at
        self.closed = False

    @event("SessionClosed")
    def close(self) -> None:
        self.closed = True

    def valid(self, now: float) -> bool:
        return not self.closed and now < self.expires_at


# A sign-in link (``benchwright up`` prints one for the local admin): one use, minutes.
SIGN_IN_LINK_TTL_S = 15 * 60
SIGN_IN_LINK_PREFIX = "bw_signin_"


class SignInLink(Aggregate):
    """A one-time link that opens a session for a login, known only by its hash."""

    @staticmethod
    def create_id(hashed: str) -> uuid.UUID:
        return stable_uuid("sign-in-link", hashed)

    @event("SignInLinkIssued")
    def __init__(self, hashed: str, username: str, expires_at: float) -> None:
        self.hashed = hashed
        self.username = username
        self.expires_at = expires_at
        self.used = False

    @event("SignInLinkUsed")
    def use(self) -> None:
        self.used = True

    def usable(self, now: float) -> bool:
        return not self.used and now < self.expires_at


class TokenIndex(Aggregate):
    """An account's tokens by id (a prefix of the hash), with labels and scopes."""

    @staticmethod
    def create_id(account: str) -> uuid.UUID:
        return stable_uuid("tokens", account)

    @event("TokenIndexOpened")
    def __init__(self, account: str) -> None:
        self.account = account
        self.tokens: dict[str, dict[str, Any]] = {}

    @event("TokenListed")
    def add(
        self, token_id: str, hashed: str, label: str, scopes: list[str], created_at: str
    ) -> None:
        self.tokens[token_id] = {
            "id": token_id,
            "hashed": hashed,
            "label": label,
            "scopes": scopes,
            "created_at": created_at,
            "revoked": False,
        }

    @event("TokenUnlisted")
    def revoke(self, token_id: str) -> None:
        self.tokens[token_id]["revoked"] = True


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


class IdempotentAnswer(Aggregate):
    """The answer to the first request an account made with a key for one operation
    (creating a secret, changing the host policy): a repeat gets it again."""

    @staticmethod
    def create_id(account: str, operation: str, key: str) -> uuid.UUID:
        return stable_uuid("idempotent-answer", account, operation, key)

    @event("Answered")
    def __init__(
        self, account: str, operation: str, key: str, body_sha256: str, answer: dict[str, Any]
    ) -> None:
        self.account = account
        self.operation = operation
        self.key = key
        self.body_sha256 = body_sha256
        self.answer = answer


class AccountSettings(Aggregate):
    """An account's settings: values the API has checked against its schema."""

    @staticmethod
    def create_id(account: str) -> uuid.UUID:
        return stable_uuid("settings", account)

    @event("SettingsOpened")
    def __init__(self, account: str) -> None:
        self.account = account
        self.values: dict[str, Any] = {}
        self.updated: dict[str, str] = {}

    @event("SettingSet")
    def set(self, key: str, value: Any, at: str) -> None:
        self.values[key] = value
        self.updated[key] = at

    @event("SettingCleared")
    def clear(self, key: str, at: str) -> None:
        self.values.pop(key, None)
        self.updated.pop(key, None)


def body_fingerprint(body: dict[str, Any]) -> str:
    return sha256_hex(canonical_json(body))


def display_status(
    status: str, halted: bool, halt_reason: str | None, infra_errored: int = 0
) -> str:
    """One field that reads right for every state, pauses included.

    A run that finished ``ok`` with tasks the platform failed (``infra_errored``
    in its summary) shows ``degraded``: its numbers cover fewer tasks than asked.
    """
    if halted and halt_reason:
        if halt_reason.startswith(("agent_review", "restart_cap_exceeded")):
            return "waiting"
        if halt_reason.startswith("operator_pause"):
            return "paused"
        if halt_reason.startswith("operator_kill"):
            return "killed"
        return "halted"
    if status == "ok" and infra_errored:
        return "degraded"
    return status
