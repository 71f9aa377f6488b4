"""Webhooks: endpoints, deliveries and the rules for signing and retrying. No I/O.

An *endpoint* (``whk_…``) is a URL an account registered for some event types.
When a run settles, or billing raises an alert about the account's money, one
*event* (``evt_…``) describes it, and one *delivery* (``whd_…``) per endpoint
that wants it carries that event there: attempted, retried with exponential
backoff, every attempt recorded. The *outbox* is what is still to do: run
outcomes and account events waiting to be fanned out, deliveries due.
"""

import hashlib
import hmac
import ipaddress
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from eventsourcing.domain import Aggregate, event

from benchwright_shared.ids import stable_uuid
from benchwright_shared.refusal import Refused

# What an endpoint can subscribe to; ``ping`` is only ever sent by a test delivery.
# ``billing.alert``: the account's spend reached an alert threshold of its monthly
# cap, or an auto-refill was declined (docs/decisions/0030).
BILLING_ALERT = "billing.alert"
RUN_EVENT_TYPES = ("run.finished", "run.failed", "run.halted")
EVENT_TYPES = (*RUN_EVENT_TYPES, BILLING_ALERT)
PING = "ping"
TEST_EVENT_TYPES = (PING, *EVENT_TYPES)

ENDPOINT_PREFIX = "whk_"
DELIVERY_PREFIX = "whd_"
EVENT_PREFIX = "evt_"
SECRET_PREFIX = "whsec_"

SIGNATURE_HEADER = "X-Benchwright-Signature"
DELIVERY_HEADER = "X-Benchwright-Delivery-Id"
EVENT_HEADER = "X-Benchwright-Event"
EVENT_ID_HEADER = "X-Benchwright-Event-Id"

PENDING, SUCCEEDED, FAILED = "pending", "succeeded", "failed"
DELIVERY_STATUSES = (PENDING, SUCCEEDED, FAILED)

MAX_URL_LENGTH = 2048
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


# -- rules ------------------------------------------------------------------------------
def event_type_for(status: str, error_type: str | None) -> str:
    """The webhook event a settled run raises, from its ``PipelineFinished``.

    A halted run (an operator's kill, a breached ceiling) finishes with
    ``error_type == "halted"``: that is ``run.halted``, not a failure of the run.
    """
    if error_type == "halted":
        return "run.halted"
    return "run.finished" if status == "ok" else "run.failed"


def url_problem(url: str, *, allow_insecure: bool) -> str | None:
    """Why ``url`` cannot be a webhook endpoint, or None when it can.

    HTTPS to a public host only; with ``allow_insecure`` (development, tests) also
    plain HTTP to loopback, and HTTPS to private addresses. A URL never carries
    credentials: it is stored and shown in clear.
    """
    if len(url) > MAX_URL_LENGTH:
        return f"a URL is at most {MAX_URL_LENGTH} characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError as exc:
        return f"not a valid URL: {exc}"
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("https", "http") or not host:
        return "the URL must be absolute, https://host/path"
    if parts.username is not None or parts.password is not None:
        return "the URL must not carry credentials; authenticate with the signature"
    if parts.fragment:
        return "the URL must not have a fragment"
    if parts.scheme == "http":
        if allow_insecure and is_loopback(host):
            return None
        return (
            "the URL must use https (plain http only to localhost where the deployment allows it)"
        )
    if not allow_insecure and not is_public_host(host):
        return f"{host} is not a public address"
    return None


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_public_host(host: str) -> bool:
    """False for loopback names and non-global IP literals; a name is judged when resolved."""
    if host == "localhost" or host.endswith((".localhost", ".local", ".internal")):
        return False
    try:
        return ipaddress.ip_address(host).is_global
    except ValueError:
        return True


def is_public_address(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.split("%", 1)[0]).is_global
    except ValueError:
        return False


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """Hex HMAC-SHA256 of ``f"{timestamp}.{body}"`` under ``secret``."""
    message = f"{timestamp}.".encode() + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signature_header(secrets: list[str], timestamp: int, body: bytes) -> str:
    """``t=<unix>,v1=<hex>``, one ``v1`` per live secret (two while a rotation overlaps)."""
    return ",".join([f"t={timestamp}", *(f"v1={sign(s, timestamp, body)}" for s in secrets)])


def event_id_for(run_id: str, event_type: str) -> str:
    """One event per run and type, whichever process sees the outcome and however often."""
    return EVENT_PREFIX + stable_uuid("webhook-event", run_id, event_type).hex[:24]


def delivery_id_for(endpoint_id: str, event_id: str) -> str:
    """One delivery per endpoint and event: a redelivered run event is not sent twice."""
    return DELIVERY_PREFIX + stable_uuid("webhook-delivery", endpoint_id, event_id).hex[:24]


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff from ``initial_s``, doubling, capped at ``max_s``;
    ``max_attempts`` attempts in all, the first included."""

    max_attempts: int = 12
    initial_s: float = 10.0
    max_s: float = 3600.0

    def delay(self, attempts_made: int, jitter: float = 1.0) -> float:
        """Seconds before the next attempt, after ``attempts_made`` failed ones (from 1)."""
        base = min(self.max_s, self.initial_s * 2.0 ** max(0, attempts_made - 1))
        return base * jitter


# -- aggregates -------------------------------------------------------------------------
class Endpoint(Aggregate):
    """A URL that receives an account's events; its signing secret only ever sealed."""

    @staticmethod
    def create_id(endpoint_id: str) -> uuid.UUID:
        return stable_uuid("webhook", endpoint_id)

    @event("WebhookRegistered")
    def __init__(
        self,
        endpoint_id: str,
        account: str,
        url: str,
        events: list[str],
        description: str,
        sealed_secret: str,
        created_at: float,
    ) -> None:
        self.endpoint_id = endpoint_id
        self.account = account
        self.url = url
        self.events = events
        self.description = description
        self.sealed_secret = sealed_secret
        self.created_at = created_at
        self.updated_at = created_at
        self.secret_rotated_at = created_at
        self.previous_sealed_secret: str | None = None
        self.previous_expires_at = 0.0
        self.enabled = True
        self.removed = False

    @event("WebhookUpdated")
    def update(
        self, url: str, events: list[str], description: str, enabled: bool, updated_at: float
    ) -> None:
        self.url = url
        self.events = events
        self.description = description
        self.enabled = enabled
        self.updated_at = updated_at

    @event("WebhookSecretRotated")
    def rotate_secret(
        self, sealed_secret: str, previous_expires_at: float, rotated_at: float
    ) -> None:
        # The old secret keeps signing beside the new one until it expires, so a
        # receiver can switch without dropping a delivery.
        keep = previous_expires_at > rotated_at
        self.previous_sealed_secret = self.sealed_secret if keep else None
        self.previous_expires_at = previous_expires_at if keep else 0.0
        self.sealed_secret = sealed_secret
        self.secret_rotated_at = rotated_at
        self.updated_at = rotated_at

    @event("WebhookRemoved")
    def remove(self, removed_at: float) -> None:
        self.removed = True
        self.updated_at = removed_at

    def wants(self, event_type: str, occurred_at: float) -> bool:
        """Whether this endpoint receives ``event_type`` that happened at ``occurred_at``.

        An endpoint hears of what happens after it was registered, never of the past
        (a consumer replaying the run log must not flood a new endpoint).
        """
        return (
            not self.removed
            and self.enabled
            and event_type in self.events
            and occurred_at >= self.created_at
        )

    def sealed_secrets(self, now: float) -> list[str]:
        """The secrets a delivery is signed with now: the current one, and the previous
        one while its overlap lasts."""
        if self.previous_sealed_secret and now < self.previous_expires_at:
            return [self.sealed_secret, self.previous_sealed_secret]
        return [self.sealed_secret]


class EndpointIndex(Aggregate):
    """An account's endpoints in registration order, and the keys they were made with."""

    @staticmethod
    def create_id(account: str) -> uuid.UUID:
        return stable_uuid("webhook-index", account)

    @event("WebhookIndexOpened")
    def __init__(self, account: str) -> None:
        self.account = account
        self.endpoints: list[str] = []
        # idempotency key -> [endpoint id, body fingerprint]
        self.keys: dict[str, list[str]] = {}

    @event("WebhookListed")
    def add(self, endpoint_id: str, idempotency_key: str | None, fingerprint: str) -> None:
        self.endpoints.append(endpoint_id)
        if idempotency_key:
            self.keys[idempotency_key] = [endpoint_id, fingerprint]

    @event("WebhookUnlisted")
    def drop(self, endpoint_id: str) -> None:
        self.endpoints = [e for e in self.endpoints if e != endpoint_id]


class Delivery(Aggregate):
    """One event on its way to one endpoint: the exact body, and every attempt."""

    @staticmethod
    def create_id(delivery_id: str) -> uuid.UUID:
        return stable_uuid("webhook-delivery", delivery_id)

    @event("DeliveryScheduled")
    def __init__(
        self,
        delivery_id: str,
        endpoint_id: str,
        account: str,
        event_id: str,
        event_type: str,
        run_id: str | None,
        body: str,
        created_at: float,
        test: bool,
    ) -> None:
        self.delivery_id = delivery_id
        self.endpoint_id = endpoint_id
        self.account = account
        self.event_id = event_id
        self.event_type = event_type
        self.run_id = run_id
        self.body = body
        self.created_at = created_at
        self.test = test
        self.status = PENDING
        self.attempts: list[dict[str, Any]] = []
        # Attempts before the latest manual retry do not count against its budget.
        self.series_start = 0
        self.next_attempt_at: float | None = created_at
        self.lease_owner = ""
        self.lease_until = 0.0

    def claimable(self, owner: str, now: float) -> bool:
        return (
            self.status == PENDING
            and self.next_attempt_at is not None
            and self.next_attempt_at <= now
            and (self.lease_until <= now or self.lease_owner == owner)
        )

    @event("DeliveryAttemptClaimed")
    def claim(self, owner: str, until: float) -> None:
        """One worker at a time: a claim is saved before the request goes out."""
        self.lease_owner = owner
        self.lease_until = until

    def finish_attempt(
        self,
        *,
        at: float,
        status_code: int | None,
        duration_ms: int,
        error: str | None,
        policy: RetryPolicy,
        jitter: float = 1.0,
    ) -> None:
        """Record an attempt and decide what follows: done, another try later, or given up."""
        ok = error is None and status_code is not None and 200 <= status_code < 300
        number = len(self.attempts) + 1
        tried = number - self.series_start
        if ok:
            status, next_at = SUCCEEDED, None
        elif tried >= policy.max_attempts:
            status, next_at = FAILED, None
        else:
            status, next_at = PENDING, at + policy.delay(tried, jitter)
        self._attempted(
            attempt={
                "attempt": number,
                "at": at,
                "status_code": status_code,
                "duration_ms": duration_ms,
                "error": error,
                "succeeded": ok,
            },
            status=status,
            next_attempt_at=next_at,
        )

    @event("DeliveryAttempted")
    def _attempted(
        self, attempt: dict[str, Any], status: str, next_attempt_at: float | None
    ) -> None:
        self.attempts.append(attempt)
        self.status = status
        self.next_attempt_at = next_attempt_at
        self.lease_owner = ""
        self.lease_until = 0.0

    @event("DeliveryAbandoned")
    def abandon(self, reason: str, at: float) -> None:
        """Give up without an attempt (the endpoint is gone)."""
        self.attempts.append(
            {
                "attempt": len(self.attempts) + 1,
                "at": at,
                "status_code": None,
                "duration_ms": 0,
                "error": reason,
                "succeeded": False,
            }
        )
        self.status = FAILED
        self.next_attempt_at = None
        self.lease_owner = ""
        self.lease_until = 0.0

    def requeue(self, at: float) -> None:
        """A manual retry: a fresh series of attempts, starting now."""
        if self.status == PENDING:
            raise Refused(
                409,
                "conflict",
                f"delivery {self.delivery_id} is still pending; it will be attempted again",
                field="delivery_id",
                code="delivery_pending",
            )
        self._requeued(at=at)

    @event("DeliveryRequeued")
    def _requeued(self, at: float) -> None:
        self.status = PENDING
        self.series_start = len(self.attempts)
        self.next_attempt_at = at


class DeliveryLog(Aggregate):
    """An endpoint's deliveries, oldest first, with their status (for listing)."""

    @staticmethod
    def create_id(endpoint_id: str) -> uuid.UUID:
        return stable_uuid("webhook-deliveries", endpoint_id)

    @event("DeliveryLogOpened")
    def __init__(self, endpoint_id: str) -> None:
        self.endpoint_id = endpoint_id
        self.entries: dict[str, str] = {}

    @event("DeliveryLogged")
    def log(self, delivery_id: str, status: str) -> None:
        self.entries[delivery_id] = status


class Outbox(Aggregate):
    """What is still to do, deployment-wide: run outcomes to fan out, deliveries due.

    Every change of a delivery's status changes the outbox in the same save, so
    a restarted gateway finds exactly the work that was left.
    """

    @staticmethod
    def create_id() -> uuid.UUID:
        return stable_uuid("webhook-outbox")

    @event("OutboxOpened")
    def __init__(self) -> None:
        # event id -> {run_id, event_type, seq, occurred_at, noticed_at}
        self.triggers: dict[str, dict[str, Any]] = {}
        # delivery id -> when it is due (unix seconds)
        self.pending: dict[str, float] = {}

    @event("OutcomeNoticed")
    def notice(
        self, event_id: str, run_id: str, event_type: str, seq: int, occurred_at: float, at: float
    ) -> None:
        self.triggers[event_id] = {
            "run_id": run_id,
            "event_type": event_type,
            "seq": seq,
            "occurred_at": occurred_at,
            "noticed_at": at,
        }

    @event("AccountEventNoticed")
    def notice_account_event(
        self,
        event_id: str,
        account: str,
        event_type: str,
        data: dict[str, Any],
        occurred_at: float,
        at: float,
    ) -> None:
        """An event about an account rather than a run (a billing alert): it carries its
        own payload, so nothing waits for a read model before it is fanned out."""
        self.triggers[event_id] = {
            "run_id": None,
            "account": account,
            "event_type": event_type,
            "data": data,
            "seq": 0,
            "occurred_at": occurred_at,
            "noticed_at": at,
        }

    @event("OutcomeFannedOut")
    def fanned_out(self, event_id: str) -> None:
        self.triggers.pop(event_id, None)

    @event("DeliveryDue")
    def due(self, delivery_id: str, at: float) -> None:
        self.pending[delivery_id] = at

    @event("DeliverySettled")
    def settled(self, delivery_id: str) -> None:
        self.pending.pop(delivery_id, None)
