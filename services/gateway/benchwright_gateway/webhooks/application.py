"""The webhooks application: endpoints and deliveries in the gateway's own store.

Commands in (register, rotate, schedule, claim, record an attempt), aggregates
out. Every method is synchronous and runs on the webhooks store's worker
thread. Signing secrets are sealed before they are stored and opened only to
be returned once (at registration and rotation) or to sign a delivery.
"""

import contextlib
import functools
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import RecordConflictError

from benchwright_gateway.webhooks.crypto import Sealer
from benchwright_gateway.webhooks.domain import (
    DELIVERY_PREFIX,
    ENDPOINT_PREFIX,
    EVENT_PREFIX,
    EVENT_TYPES,
    FAILED,
    PENDING,
    SECRET_PREFIX,
    Delivery,
    DeliveryLog,
    Endpoint,
    EndpointIndex,
    Outbox,
    delivery_id_for,
    event_id_for,
    url_problem,
)
from benchwright_gateway.webhooks.settings import WebhookSettings
from benchwright_shared.hashing import canonical_json, sha256_hex
from benchwright_shared.refusal import Refused

# How long a claimed attempt is a worker's alone, beyond its request timeout.
LEASE_SLACK_S = 30.0
MAX_ROTATION_OVERLAP_S = 7 * 24 * 3600


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def new_endpoint_id() -> str:
    return ENDPOINT_PREFIX + secrets.token_hex(12)


def new_event_id() -> str:
    return EVENT_PREFIX + secrets.token_hex(12)


def new_delivery_id() -> str:
    return DELIVERY_PREFIX + secrets.token_hex(12)


@dataclass(frozen=True)
class Outcome:
    """A run settled: what the run log's ``PipelineFinished`` says, as a webhook event."""

    run_id: str
    event_type: str
    seq: int
    occurred_at: float


@dataclass(frozen=True)
class AccountEvent:
    """Something about an account, not a run (a billing alert), with its payload."""

    # Stable across redeliveries of the message that announced it.
    source_id: str
    account: str
    event_type: str
    data: dict[str, Any]
    occurred_at: float


@dataclass(frozen=True)
class Registered:
    endpoint: Endpoint
    # Shown once: on registration, and on an idempotent replay of it.
    secret: str | None = field(repr=False)
    replayed: bool = False


@dataclass(frozen=True)
class Job:
    """One attempt to make: where, what, and the secrets to sign it with (in memory only)."""

    delivery_id: str
    endpoint_id: str
    event_id: str
    event_type: str
    url: str
    body: str = field(repr=False)
    secrets: list[str] = field(repr=False)
    attempt: int = 1


def _conflicts_retried[**P, R](method: Callable[P, R]) -> Callable[P, R]:
    """Another gateway process saved first: load again and redo the command."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        for _ in range(4):
            try:
                return method(*args, **kwargs)
            except RecordConflictError:
                continue
        return method(*args, **kwargs)

    return wrapper


class WebhooksApplication(Application[uuid.UUID]):
    name = "gateway_webhooks"
    # Indexes and the outbox change with every delivery: load them from a snapshot.
    snapshotting_intervals = {Outbox: 100, DeliveryLog: 100, EndpointIndex: 50}

    def __init__(self, env: dict[str, str], *, sealer: Sealer, settings: WebhookSettings) -> None:
        super().__init__(env=env)
        self.sealer = sealer
        self.settings = settings

    # -- endpoints -------------------------------------------------------------------
    @_conflicts_retried
    def register(
        self,
        account: str,
        *,
        url: str,
        events: list[str],
        description: str,
        idempotency_key: str | None,
        now: float,
    ) -> Registered:
        """Register ``url`` for ``events``; the signing secret is returned this once.

        With ``idempotency_key``, the same request again answers with the same
        endpoint (and its secret, unless rotated since); a different body is refused.
        """
        events = self._check_events(events)
        self._check_url(url)
        fingerprint = sha256_hex(
            canonical_json({"url": url, "events": events, "description": description})
        )
        index = self._index(account)
        if idempotency_key and idempotency_key in index.keys:
            endpoint_id, seen = index.keys[idempotency_key]
            if seen != fingerprint:
                raise Refused(
                    409,
                    "conflict",
                    "this Idempotency-Key was used with a different body",
                    field="Idempotency-Key",
                    code="idempotency_key_reused",
                )
            endpoint = self._endpoint(endpoint_id)
            if endpoint is None or endpoint.removed:
                raise Refused(
                    409,
                    "conflict",
                    "the webhook made with this Idempotency-Key was deleted",
                    field="Idempotency-Key",
                    code="idempotency_key_reused",
                )
            unrotated = endpoint.secret_rotated_at == endpoint.created_at
            secret = self.sealer.open(endpoint.sealed_secret) if unrotated else None
            return Registered(endpoint, secret, replayed=True)
        if len(index.endpoints) >= self.settings.max_endpoints:
            raise Refused(
                409,
                "conflict",
                f"an account has at most {self.settings.max_endpoints} webhooks; delete one first",
                field="url",
                code="webhook_limit",
            )
        secret = new_secret()
        endpoint = Endpoint(
            new_endpoint_id(), account, url, events, description, self.sealer.seal(secret), now
        )
        index.add(endpoint.endpoint_id, idempotency_key, fingerprint)
        self.save(endpoint, index)
        return Registered(endpoint, secret)

    def endpoint(self, account: str, endpoint_id: str) -> Endpoint:
        """The caller's endpoint; another account's answers exactly as a missing one."""
        found = self._endpoint(endpoint_id)
        if found is None or found.account != account or found.removed:
            raise Refused(
                404,
                "not found",
                f"no webhook {endpoint_id!r}",
                field="webhook_id",
                code="not_found",
            )
        return found

    def endpoints(self, account: str) -> list[Endpoint]:
        """The account's endpoints, oldest first."""
        found = (self._endpoint(e) for e in self._index(account).endpoints)
        return [e for e in found if e is not None and not e.removed]

    @_conflicts_retried
    def update(
        self,
        account: str,
        endpoint_id: str,
        *,
        url: str | None,
        events: list[str] | None,
        description: str | None,
        enabled: bool | None,
        now: float,
    ) -> Endpoint:
        endpoint = self.endpoint(account, endpoint_id)
        if url is not None:
            self._check_url(url)
        endpoint.update(
            url=endpoint.url if url is None else url,
            events=endpoint.events if events is None else self._check_events(events),
            description=endpoint.description if description is None else description,
            enabled=endpoint.enabled if enabled is None else enabled,
            updated_at=now,
        )
        self.save(endpoint)
        return endpoint

    @_conflicts_retried
    def rotate_secret(
        self, account: str, endpoint_id: str, *, overlap_s: float, now: float
    ) -> Registered:
        """A new signing secret, returned this once; the old one signs beside it for
        ``overlap_s`` seconds (0: it stops now)."""
        if not 0 <= overlap_s <= MAX_ROTATION_OVERLAP_S:
            raise Refused(
                400,
                "invalid request",
                f"expire_previous_after_s is between 0 and {MAX_ROTATION_OVERLAP_S}",
                field="expire_previous_after_s",
            )
        endpoint = self.endpoint(account, endpoint_id)
        secret = new_secret()
        endpoint.rotate_secret(
            sealed_secret=self.sealer.seal(secret),
            previous_expires_at=now + overlap_s,
            rotated_at=now,
        )
        self.save(endpoint)
        return Registered(endpoint, secret)

    @_conflicts_retried
    def remove(self, account: str, endpoint_id: str, *, now: float) -> None:
        """Delete the endpoint; its pending deliveries are given up when next due."""
        endpoint = self.endpoint(account, endpoint_id)
        index = self._index(account)
        endpoint.remove(removed_at=now)
        index.drop(endpoint_id)
        self.save(endpoint, index)

    def matching(self, account: str, event_type: str, occurred_at: float) -> list[Endpoint]:
        """The account's endpoints that receive ``event_type`` happening at ``occurred_at``."""
        return [e for e in self.endpoints(account) if e.wants(event_type, occurred_at)]

    # -- deliveries, seen by their owner -----------------------------------------------
    @_conflicts_retried
    def schedule_test(
        self,
        account: str,
        endpoint_id: str,
        *,
        event_id: str,
        event_type: str,
        body: str,
        now: float,
    ) -> Delivery:
        """A test delivery of ``body`` to the endpoint, due now."""
        self.endpoint(account, endpoint_id)
        delivery = Delivery(
            new_delivery_id(), endpoint_id, account, event_id, event_type, None, body, now, True
        )
        log, outbox = self._log(endpoint_id), self._outbox()
        log.log(delivery.delivery_id, PENDING)
        outbox.due(delivery.delivery_id, now)
        self.save(delivery, log, outbox)
        return delivery

    def deliveries(
        self,
        account: str,
        endpoint_id: str,
        *,
        status: str | None,
        limit: int,
        after: str | None,
    ) -> tuple[list[Delivery], str | None]:
        """The endpoint's deliveries, newest first, optionally of one status; and the
        token of the next page."""
        self.endpoint(account, endpoint_id)
        entries = self._log(endpoint_id).entries
        ids = [d for d, s in reversed(entries.items()) if status is None or s == status]
        if after is not None:
            ids = ids[ids.index(after) + 1 :] if after in ids else []
        page = [d for d in (self._delivery(i) for i in ids[:limit]) if d is not None]
        more = len(ids) > limit
        return page, (page[-1].delivery_id if more and page else None)

    @_conflicts_retried
    def requeue(self, account: str, endpoint_id: str, delivery_id: str, *, now: float) -> Delivery:
        """Send a finished delivery again: a fresh series of attempts, starting now."""
        self.endpoint(account, endpoint_id)
        delivery = self._delivery(delivery_id)
        if delivery is None or delivery.endpoint_id != endpoint_id:
            raise Refused(
                404,
                "not found",
                f"no delivery {delivery_id!r} of this webhook",
                field="delivery_id",
                code="not_found",
            )
        delivery.requeue(now)
        log, outbox = self._log(endpoint_id), self._outbox()
        log.log(delivery_id, PENDING)
        outbox.due(delivery_id, now)
        self.save(delivery, log, outbox)
        return delivery

    # -- the deliverer's side -----------------------------------------------------------
    @_conflicts_retried
    def notice_outcomes(self, outcomes: list[Outcome], *, now: float) -> int:
        """Put settled runs in the outbox, each once; returns how many were new."""
        outbox = self._outbox()
        added = 0
        for o in outcomes:
            event_id = event_id_for(o.run_id, o.event_type)
            if event_id in outbox.triggers:
                continue
            outbox.notice(event_id, o.run_id, o.event_type, o.seq, o.occurred_at, now)
            added += 1
        if added:
            self.save(outbox)
        return added

    @_conflicts_retried
    def notice_account_events(self, events: list[AccountEvent], *, now: float) -> int:
        """Put account events (billing alerts) in the outbox, each once; how many were new.

        Their event ids derive from the source's own id: a redelivered alert, or
        one noticed by two gateway processes, is one event.
        """
        outbox = self._outbox()
        added = 0
        for e in events:
            event_id = event_id_for(e.source_id, e.event_type)
            if event_id in outbox.triggers:
                continue
            outbox.notice_account_event(
                event_id, e.account, e.event_type, e.data, e.occurred_at, now
            )
            added += 1
        if added:
            self.save(outbox)
        return added

    def outbox_state(self) -> tuple[dict[str, dict[str, Any]], dict[str, float]]:
        """(run outcomes waiting to be fanned out, deliveries by when they are due)."""
        outbox = self._outbox()
        return dict(outbox.triggers), dict(outbox.pending)

    @_conflicts_retried
    def fan_out(
        self,
        event_id: str,
        *,
        account: str,
        body: str,
        now: float,
    ) -> list[str]:
        """One delivery of ``body`` per endpoint that wants the event, all in one save.

        Delivery ids derive from (endpoint, event): fanning out again creates nothing.
        """
        outbox = self._outbox()
        trigger = outbox.triggers.get(event_id)
        if trigger is None:
            return []
        changed: list[Any] = [outbox]
        created: list[str] = []
        for endpoint in self.matching(account, trigger["event_type"], trigger["occurred_at"]):
            delivery_id = delivery_id_for(endpoint.endpoint_id, event_id)
            if self._delivery(delivery_id) is not None:
                continue
            delivery = Delivery(
                delivery_id,
                endpoint.endpoint_id,
                account,
                event_id,
                trigger["event_type"],
                trigger["run_id"],
                body,
                now,
                False,
            )
            log = self._log(endpoint.endpoint_id)
            log.log(delivery_id, PENDING)
            outbox.due(delivery_id, now)
            changed += [delivery, log]
            created.append(delivery_id)
        outbox.fanned_out(event_id)
        self.save(*changed)
        return created

    @_conflicts_retried
    def drop_outcome(self, event_id: str) -> None:
        """Nobody is to hear of this outcome (no endpoint wants it, the run is gone)."""
        outbox = self._outbox()
        if event_id in outbox.triggers:
            outbox.fanned_out(event_id)
            self.save(outbox)

    def claim(self, delivery_id: str, owner: str, now: float) -> Job | None:
        """Take the delivery's next attempt for ``owner``, or None when it is not due,
        another worker holds it, or there is nothing left to do."""
        delivery = self._delivery(delivery_id)
        if delivery is None or delivery.status != PENDING:
            self._settle_stale(delivery_id)
            return None
        if not delivery.claimable(owner, now):
            return None
        endpoint = self._endpoint(delivery.endpoint_id)
        try:
            if endpoint is None or endpoint.removed:
                delivery.abandon("the webhook was deleted", now)
                log, outbox = self._log(delivery.endpoint_id), self._outbox()
                log.log(delivery_id, FAILED)
                outbox.settled(delivery_id)
                self.save(delivery, log, outbox)
                return None
            delivery.claim(owner, now + self.settings.timeout_s + LEASE_SLACK_S)
            self.save(delivery)
        except RecordConflictError:
            return None  # another worker got there first
        return Job(
            delivery_id=delivery_id,
            endpoint_id=endpoint.endpoint_id,
            event_id=delivery.event_id,
            event_type=delivery.event_type,
            url=endpoint.url,
            body=delivery.body,
            secrets=[self.sealer.open(s) for s in endpoint.sealed_secrets(now)],
            attempt=len(delivery.attempts) + 1,
        )

    @_conflicts_retried
    def record_attempt(
        self,
        delivery_id: str,
        owner: str,
        *,
        at: float,
        status_code: int | None,
        duration_ms: int,
        error: str | None,
        jitter: float = 1.0,
    ) -> str | None:
        """Record what the attempt got; the delivery's status after it (None when the
        claim was lost to another worker meanwhile)."""
        delivery = self._delivery(delivery_id)
        if delivery is None or delivery.status != PENDING or delivery.lease_owner != owner:
            return None
        delivery.finish_attempt(
            at=at,
            status_code=status_code,
            duration_ms=duration_ms,
            error=error,
            policy=self.settings.retry_policy,
            jitter=jitter,
        )
        outbox = self._outbox()
        changed: list[Any] = [delivery, outbox]
        if delivery.status == PENDING and delivery.next_attempt_at is not None:
            outbox.due(delivery_id, delivery.next_attempt_at)
        else:
            outbox.settled(delivery_id)
            log = self._log(delivery.endpoint_id)
            log.log(delivery_id, delivery.status)
            changed.append(log)
        self.save(*changed)
        return str(delivery.status)

    # -- loading ------------------------------------------------------------------------
    def delivery(self, delivery_id: str) -> Delivery | None:
        return self._delivery(delivery_id)

    def _settle_stale(self, delivery_id: str) -> None:
        outbox = self._outbox()
        if delivery_id in outbox.pending:
            outbox.settled(delivery_id)
            # Whoever saved first saw it too; the next look tidies up.
            with contextlib.suppress(RecordConflictError):
                self.save(outbox)

    def _check_events(self, events: list[str]) -> list[str]:
        unknown = sorted(set(events) - set(EVENT_TYPES))
        if unknown or not events:
            raise Refused(
                400,
                "invalid request",
                f"unknown events {unknown}; known: {list(EVENT_TYPES)}"
                if unknown
                else f"name at least one of {list(EVENT_TYPES)}",
                field="events",
                code="invalid_argument",
            )
        return list(dict.fromkeys(events))

    def _check_url(self, url: str) -> None:
        problem = url_problem(url, allow_insecure=self.settings.allow_insecure_urls)
        if problem:
            raise Refused(400, "invalid request", problem, field="url", code="invalid_argument")

    def _endpoint(self, endpoint_id: str) -> Endpoint | None:
        try:
            found: Endpoint = self.repository.get(Endpoint.create_id(endpoint_id))
        except AggregateNotFoundError:
            return None
        return found

    def _delivery(self, delivery_id: str) -> Delivery | None:
        try:
            found: Delivery = self.repository.get(Delivery.create_id(delivery_id))
        except AggregateNotFoundError:
            return None
        return found

    def _index(self, account: str) -> EndpointIndex:
        try:
            found: EndpointIndex = self.repository.get(EndpointIndex.create_id(account))
        except AggregateNotFoundError:
            return EndpointIndex(account)
        return found

    def _log(self, endpoint_id: str) -> DeliveryLog:
        try:
            found: DeliveryLog = self.repository.get(DeliveryLog.create_id(endpoint_id))
        except AggregateNotFoundError:
            return DeliveryLog(endpoint_id)
        return found

    def _outbox(self) -> Outbox:
        try:
            found: Outbox = self.repository.get(Outbox.create_id())
        except AggregateNotFoundError:
            return Outbox()
        return found
