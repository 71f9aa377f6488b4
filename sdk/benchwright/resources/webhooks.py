"""``bw.webhooks``: endpoints that hear when your runs settle, and what was sent to them.

Register an HTTPS endpoint for ``run.finished``, ``run.failed`` and/or
``run.halted``; when a run of your account settles, the server POSTs an event::

    {"id": "evt_…", "object": "event", "type": "run.finished", "created": "…",
     "test": false, "data": {…the run, as runs.get shows it…}}

with ``X-Benchwright-Signature: t=<unix>,v1=<hex>`` (HMAC-SHA256 of
``f"{t}.{body}"`` under the signing secret), ``X-Benchwright-Delivery-Id`` and
``X-Benchwright-Event``. Delivery is at least once: dedupe on the delivery id.
Verify a request with :meth:`Webhooks.construct_event` (no HTTP involved)::

    event = Webhooks.construct_event(body, request.headers["X-Benchwright-Signature"], SECRET)

The signing secret (``whsec_…``) is shown once, by ``create`` and ``rotate_secret``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from benchwright_shared.api import webhooks as answers

from .._async_http import AsyncHTTP
from .._errors import BenchwrightError
from .._http import SyncHTTP
from ._common import parse, path_id

__all__ = [
    "EVENT_TYPES",
    "RUN_EVENT_TYPES",
    "AsyncWebhooks",
    "DeletedWebhook",
    "Webhook",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookDeliveryList",
    "WebhookEvent",
    "WebhookList",
    "WebhookSignatureError",
    "WebhookWithSecret",
    "Webhooks",
    "construct_event",
]

# What an endpoint can subscribe to (a test delivery can also send ``ping``). An
# endpoint created without ``events`` hears of runs; ``billing.alert`` (an alert
# about the account's money, its ``data`` the alert) is asked for by name.
RUN_EVENT_TYPES = ("run.finished", "run.failed", "run.halted")
EVENT_TYPES = (*RUN_EVENT_TYPES, "billing.alert")
DEFAULT_TOLERANCE_S = 300


class WebhookSignatureError(BenchwrightError, ValueError):
    """A webhook request failed verification: bad or missing signature, stale
    timestamp, or a body that is not an event. Answer such a request with 400."""


# The gateway's answers (``benchwright_shared.api.webhooks``), read as they are: each
# field is declared there once, with the SDK's widenings (open ``str`` enumerations,
# ``AttrDict``, unknown fields kept).
Webhook = answers.Webhook
WebhookWithSecret = answers.WebhookWithSecret
WebhookList = answers.WebhookList
DeletedWebhook = answers.DeletedWebhook
WebhookAttempt = answers.WebhookAttempt
WebhookDelivery = answers.WebhookDelivery
WebhookDeliveryList = answers.WebhookDeliveryList
WebhookEvent = answers.WebhookEvent


def _with_secret(data: Any) -> Webhook:
    """An endpoint as ``create`` or ``rotate_secret`` answers it: with its signing secret,
    except a replayed ``create`` whose secret was rotated since."""
    if isinstance(data, dict) and "signing_secret" in data:
        return parse(WebhookWithSecret, data)
    return parse(Webhook, data)


def _parse_header(sig_header: str) -> tuple[int, list[str]]:
    timestamp: int | None = None
    signatures: list[str] = []
    for item in (sig_header or "").split(","):
        key, sep, value = item.strip().partition("=")
        if not sep:
            continue
        if key == "t":
            try:
                timestamp = int(value)
            except ValueError:
                raise WebhookSignatureError(
                    "the signature header's timestamp is not a number"
                ) from None
        elif key == "v1":
            signatures.append(value)
    if timestamp is None or not signatures:
        raise WebhookSignatureError("the signature header needs t=<unix> and v1=<hex>")
    return timestamp, signatures


def construct_event(
    payload: bytes | str,
    sig_header: str,
    secret: str,
    tolerance: float | None = DEFAULT_TOLERANCE_S,
) -> WebhookEvent:
    """Verify a webhook request and return its event.

    ``payload`` is the raw request body, exactly as received (parse nothing
    before verifying); ``sig_header`` the ``X-Benchwright-Signature`` header;
    ``secret`` the endpoint's ``whsec_…`` signing secret. The signature must
    match and its timestamp be within ``tolerance`` seconds of now (``None``
    skips the clock check; replays are then yours to refuse).

    Raises :class:`WebhookSignatureError` when anything does not hold.
    """
    body = payload.encode() if isinstance(payload, str) else bytes(payload)
    timestamp, signatures = _parse_header(sig_header)
    expected = hmac.new(
        secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256
    ).hexdigest()
    if not any(hmac.compare_digest(expected, s) for s in signatures):
        raise WebhookSignatureError("no signature matches this payload and secret")
    if tolerance is not None and abs(time.time() - timestamp) > tolerance:
        raise WebhookSignatureError(
            f"the signature's timestamp is more than {tolerance:g}s from now"
        )
    try:
        return WebhookEvent.model_validate(json.loads(body))
    except (ValueError, ValidationError) as exc:
        raise WebhookSignatureError(f"the payload is not a webhook event: {exc}") from exc


def _create_body(url: str, events: Iterable[str], description: str) -> dict[str, Any]:
    return {"url": url, "events": list(events), "description": description}


def _patch_body(
    url: str | None, events: Iterable[str] | None, description: str | None, enabled: bool | None
) -> dict[str, Any]:
    body = {
        "url": url,
        "events": list(events) if events is not None else None,
        "description": description,
        "enabled": enabled,
    }
    return {k: v for k, v in body.items() if v is not None}


def _key_header(idempotency_key: str | None) -> dict[str, str] | None:
    return {"Idempotency-Key": idempotency_key} if idempotency_key else None


def _base(webhook_id: str) -> str:
    return f"/v1/webhooks/{path_id(webhook_id)}"


class Webhooks:
    """Reach it as ``Benchwright().webhooks``."""

    construct_event = staticmethod(construct_event)

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http

    def create(
        self,
        url: str,
        events: Iterable[str] = RUN_EVENT_TYPES,
        *,
        description: str = "",
        idempotency_key: str | None = None,
    ) -> Webhook:
        """Register ``url`` for ``events``. The answer's ``signing_secret`` is shown this once.

        With ``idempotency_key`` the call is safe to retry: the same key and body
        answer with the same webhook (and its secret, unless rotated since).
        """
        data = self._http.request(
            "POST",
            "/v1/webhooks",
            json=_create_body(url, events, description),
            headers=_key_header(idempotency_key),
        )
        return _with_secret(data)

    def list(self) -> list[Webhook]:
        """Every webhook of the account, oldest first (no secrets)."""
        return parse(WebhookList, self._http.request("GET", "/v1/webhooks")).data

    def get(self, webhook_id: str) -> Webhook:
        """One webhook (never its secret)."""
        return parse(Webhook, self._http.request("GET", _base(webhook_id)))

    def update(
        self,
        webhook_id: str,
        *,
        url: str | None = None,
        events: Iterable[str] | None = None,
        description: str | None = None,
        enabled: bool | None = None,
    ) -> Webhook:
        """Change the URL, events or description; ``enabled=False`` pauses new deliveries."""
        body = _patch_body(url, events, description, enabled)
        data = self._http.request("PATCH", _base(webhook_id), json=body, retry_safe=True)
        return parse(Webhook, data)

    def delete(self, webhook_id: str) -> DeletedWebhook:
        """Delete the webhook; deliveries still pending are given up."""
        return parse(DeletedWebhook, self._http.request("DELETE", _base(webhook_id)))

    def rotate_secret(
        self, webhook_id: str, *, expire_previous_after_s: int = 0
    ) -> WebhookWithSecret:
        """A new signing secret (in the answer, once). The old one keeps signing beside
        it for ``expire_previous_after_s`` seconds, so receivers can switch over."""
        data = self._http.request(
            "POST",
            f"{_base(webhook_id)}/rotate_secret",
            json={"expire_previous_after_s": expire_previous_after_s},
        )
        return parse(WebhookWithSecret, data)

    def test_delivery(self, webhook_id: str, event: str = "ping") -> WebhookDelivery:
        """Send a ``ping`` (or a made-up ``run.*`` event, ``test: true``) now."""
        data = self._http.request("POST", f"{_base(webhook_id)}/test", json={"event": event})
        return parse(WebhookDelivery, data)

    def deliveries(
        self,
        webhook_id: str,
        status: str | None = None,
        *,
        limit: int = 50,
        page_token: str | None = None,
    ) -> WebhookDeliveryList:
        """Deliveries to the webhook, newest first; ``status`` is ``pending``,
        ``succeeded`` or ``failed``."""
        data = self._http.request(
            "GET",
            f"{_base(webhook_id)}/deliveries",
            params={"status": status, "limit": limit, "page_token": page_token},
        )
        return parse(WebhookDeliveryList, data)

    def retry_delivery(self, webhook_id: str, delivery_id: str) -> WebhookDelivery:
        """Send a succeeded or failed delivery again (a pending one is refused: 409)."""
        data = self._http.request(
            "POST", f"{_base(webhook_id)}/deliveries/{path_id(delivery_id)}/retry"
        )
        return parse(WebhookDelivery, data)


class AsyncWebhooks:
    """Reach it as ``AsyncBenchwright().webhooks``; the same calls as :class:`Webhooks`."""

    construct_event = staticmethod(construct_event)

    def __init__(self, http: AsyncHTTP) -> None:
        self._http = http

    async def create(
        self,
        url: str,
        events: Iterable[str] = RUN_EVENT_TYPES,
        *,
        description: str = "",
        idempotency_key: str | None = None,
    ) -> Webhook:
        """Register ``url`` for ``events``; see :meth:`Webhooks.create`."""
        data = await self._http.request(
            "POST",
            "/v1/webhooks",
            json=_create_body(url, events, description),
            headers=_key_header(idempotency_key),
        )
        return _with_secret(data)

    async def list(self) -> list[Webhook]:
        """Every webhook of the account, oldest first (no secrets)."""
        return parse(WebhookList, await self._http.request("GET", "/v1/webhooks")).data

    async def get(self, webhook_id: str) -> Webhook:
        """One webhook (never its secret)."""
        return parse(Webhook, await self._http.request("GET", _base(webhook_id)))

    async def update(
        self,
        webhook_id: str,
        *,
        url: str | None = None,
        events: Iterable[str] | None = None,
        description: str | None = None,
        enabled: bool | None = None,
    ) -> Webhook:
        """See :meth:`Webhooks.update`."""
        body = _patch_body(url, events, description, enabled)
        data = await self._http.request("PATCH", _base(webhook_id), json=body, retry_safe=True)
        return parse(Webhook, data)

    async def delete(self, webhook_id: str) -> DeletedWebhook:
        """Delete the webhook; deliveries still pending are given up."""
        return parse(DeletedWebhook, await self._http.request("DELETE", _base(webhook_id)))

    async def rotate_secret(
        self, webhook_id: str, *, expire_previous_after_s: int = 0
    ) -> WebhookWithSecret:
        """See :meth:`Webhooks.rotate_secret`."""
        data = await self._http.request(
            "POST",
            f"{_base(webhook_id)}/rotate_secret",
            json={"expire_previous_after_s": expire_previous_after_s},
        )
        return parse(WebhookWithSecret, data)

    async def test_delivery(self, webhook_id: str, event: str = "ping") -> WebhookDelivery:
        """Send a ``ping`` (or a made-up ``run.*`` event, ``test: true``) now."""
        data = await self._http.request("POST", f"{_base(webhook_id)}/test", json={"event": event})
        return parse(WebhookDelivery, data)

    async def deliveries(
        self,
        webhook_id: str,
        status: str | None = None,
        *,
        limit: int = 50,
        page_token: str | None = None,
    ) -> WebhookDeliveryList:
        """What was sent to the webhook, newest first, each with its attempts."""
        data = await self._http.request(
            "GET",
            f"{_base(webhook_id)}/deliveries",
            params={"status": status, "limit": limit, "page_token": page_token},
        )
        return parse(WebhookDeliveryList, data)

    async def retry_delivery(self, webhook_id: str, delivery_id: str) -> WebhookDelivery:
        """Send a succeeded or failed delivery again (a pending one is refused: 409)."""
        data = await self._http.request(
            "POST", f"{_base(webhook_id)}/deliveries/{path_id(delivery_id)}/retry"
        )
        return parse(WebhookDelivery, data)
