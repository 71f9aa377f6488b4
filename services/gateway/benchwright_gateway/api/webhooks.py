"""``/v1/webhooks``: endpoints that hear when an account's runs settle, and their deliveries.

A webhook's signing secret (``whsec_…``) is in the answer to its registration
and to a rotation, and nowhere else: it is stored sealed and never shown again.
Another account's webhook answers exactly as one that does not exist.
"""

import time
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Header, Query, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from benchwright_gateway.api.deps import Caller, state
from benchwright_gateway.webhooks.application import Registered, new_event_id
from benchwright_gateway.webhooks.delivery import Webhooks, encode_event
from benchwright_gateway.webhooks.domain import (
    DELIVERY_STATUSES,
    EVENT_TYPES,
    PING,
    TEST_EVENT_TYPES,
    Delivery,
    Endpoint,
)
from benchwright_shared.api.webhooks import (
    DeletedWebhook,
    Webhook,
    WebhookAttempt,
    WebhookDelivery,
    WebhookDeliveryList,
    WebhookList,
    WebhookWithSecret,
)
from benchwright_shared.refusal import Refused

EventName = Annotated[str, Field(min_length=1, max_length=100)]


class WebhookIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=2048)
    events: list[EventName] = Field(min_length=1, max_length=len(EVENT_TYPES))
    description: str = Field(default="", max_length=1000)


class WebhookPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(default=None, min_length=1, max_length=2048)
    events: list[EventName] | None = Field(default=None, min_length=1, max_length=len(EVENT_TYPES))
    description: str | None = Field(default=None, max_length=1000)
    enabled: StrictBool | None = None


class RotateIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Keep signing with the old secret too for this long, so receivers can switch.
    expire_previous_after_s: int = Field(default=0, ge=0)


class TestIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    event: str = PING


def _time(ts: float | None) -> datetime | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC)


def render_endpoint(endpoint: Endpoint) -> Webhook:
    return Webhook(
        id=endpoint.endpoint_id,
        url=endpoint.url,
        events=list(endpoint.events),
        description=endpoint.description,
        enabled=endpoint.enabled,
        created_at=_time(endpoint.created_at),
        updated_at=_time(endpoint.updated_at),
        secret_rotated_at=_time(endpoint.secret_rotated_at),
        previous_secret_expires_at=(
            _time(endpoint.previous_expires_at) if endpoint.previous_sealed_secret else None
        ),
    )


def render_with_secret(endpoint: Endpoint, secret: str | None) -> WebhookWithSecret | Webhook:
    """An endpoint with its signing secret, in the answers that just made it; without, on a
    replayed registration after a rotation (that secret is no longer shown)."""
    shown = render_endpoint(endpoint)
    if secret is None:
        return shown
    return WebhookWithSecret(**shown.model_dump(), signing_secret=secret)


def render_delivery(delivery: Delivery) -> WebhookDelivery:
    return WebhookDelivery(
        id=delivery.delivery_id,
        webhook_id=delivery.endpoint_id,
        event_id=delivery.event_id,
        event=delivery.event_type,
        run_id=delivery.run_id,
        test=delivery.test,
        status=delivery.status,  # one of DELIVERY_STATUSES
        created_at=_time(delivery.created_at),
        next_attempt_at=_time(delivery.next_attempt_at) if delivery.status == "pending" else None,
        attempt_count=len(delivery.attempts),
        attempts=[WebhookAttempt(**{**a, "at": _time(a["at"])}) for a in delivery.attempts],
    )


router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"])
# The webhooks application and its delivery loop, which the gateway puts on app.state.
Hooks = Annotated[Webhooks, state("webhooks")]


@router.post("", status_code=201)
async def create_webhook(
    body: WebhookIn,
    webhooks: Hooks,
    caller: Caller,
    response: Response,
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
) -> WebhookWithSecret | Webhook:
    """Register an endpoint for ``events``; the answer holds its signing secret, once."""
    caller.require("webhooks:write")
    made: Registered = await webhooks.call(
        webhooks.app.register,
        caller.account,
        url=body.url,
        events=body.events,
        description=body.description,
        idempotency_key=idempotency_key,
        now=time.time(),
    )
    if made.replayed:
        response.status_code = 200
    return render_with_secret(made.endpoint, made.secret)


@router.get("")
async def list_webhooks(webhooks: Hooks, caller: Caller) -> WebhookList:
    """The account's webhooks."""
    caller.require("webhooks:read")
    found: list[Endpoint] = await webhooks.call(webhooks.app.endpoints, caller.account)
    return WebhookList(data=[render_endpoint(e) for e in found])


@router.get("/{webhook_id}")
async def get_webhook(webhook_id: str, webhooks: Hooks, caller: Caller) -> Webhook:
    """One webhook (never its signing secret)."""
    caller.require("webhooks:read")
    return render_endpoint(await webhooks.call(webhooks.app.endpoint, caller.account, webhook_id))


@router.patch("/{webhook_id}")
async def update_webhook(
    webhook_id: str, body: WebhookPatch, webhooks: Hooks, caller: Caller
) -> Webhook:
    """Change the URL, the events, the description, or pause it (``enabled: false``)."""
    caller.require("webhooks:write")
    await webhooks.call(webhooks.app.endpoint, caller.account, webhook_id)
    if not body.model_fields_set:
        raise Refused(
            400,
            "invalid request",
            "name at least one of url, events, description, enabled",
            code="invalid_argument",
        )
    endpoint = await webhooks.call(
        webhooks.app.update,
        caller.account,
        webhook_id,
        url=body.url,
        events=body.events,
        description=body.description,
        enabled=body.enabled,
        now=time.time(),
    )
    return render_endpoint(endpoint)


@router.delete("/{webhook_id}")
async def delete_webhook(webhook_id: str, webhooks: Hooks, caller: Caller) -> DeletedWebhook:
    """Delete it: nothing more is sent, pending deliveries are given up."""
    caller.require("webhooks:write")
    await webhooks.call(webhooks.app.remove, caller.account, webhook_id, now=time.time())
    return DeletedWebhook(id=webhook_id)


@router.post("/{webhook_id}/rotate_secret")
async def rotate_secret(
    webhook_id: str, webhooks: Hooks, caller: Caller, body: RotateIn | None = None
) -> WebhookWithSecret | Webhook:
    """A new signing secret, shown this once; the old one may overlap for a while."""
    caller.require("webhooks:write")
    rotated: Registered = await webhooks.call(
        webhooks.app.rotate_secret,
        caller.account,
        webhook_id,
        overlap_s=float(body.expire_previous_after_s if body else 0),
        now=time.time(),
    )
    return render_with_secret(rotated.endpoint, rotated.secret)


@router.post("/{webhook_id}/test", status_code=202)
async def test_delivery(
    webhook_id: str, webhooks: Hooks, caller: Caller, body: TestIn | None = None
) -> WebhookDelivery:
    """Send a ``ping`` (or a made-up run event) now; it is a delivery like any other."""
    caller.require("webhooks:write")
    await webhooks.call(webhooks.app.endpoint, caller.account, webhook_id)
    event_type = body.event if body else PING
    if event_type not in TEST_EVENT_TYPES:
        raise Refused(
            400,
            "invalid request",
            f"unknown event {event_type!r}; known: {list(TEST_EVENT_TYPES)}",
            field="event",
            code="invalid_argument",
        )
    now = time.time()
    event_id = new_event_id()
    payload = encode_event(
        event_id, event_type, now, webhooks.sample(event_type, webhook_id, now), test=True
    )
    delivery = await webhooks.call(
        webhooks.app.schedule_test,
        caller.account,
        webhook_id,
        event_id=event_id,
        event_type=event_type,
        body=payload,
        now=now,
    )
    webhooks.wake()
    return render_delivery(delivery)


@router.get("/{webhook_id}/deliveries")
async def list_deliveries(
    webhook_id: str,
    webhooks: Hooks,
    caller: Caller,
    status: Annotated[str | None, Query(pattern=f"^({'|'.join(DELIVERY_STATUSES)})$")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    page_token: str | None = None,
) -> WebhookDeliveryList:
    """The webhook's deliveries, newest first, every attempt with its outcome."""
    caller.require("webhooks:read")
    found, token = await webhooks.call(
        webhooks.app.deliveries,
        caller.account,
        webhook_id,
        status=status,
        limit=limit,
        after=page_token,
    )
    return WebhookDeliveryList(data=[render_delivery(d) for d in found], next_page_token=token)


@router.post("/{webhook_id}/deliveries/{delivery_id}/retry", status_code=202)
async def retry_delivery(
    webhook_id: str, delivery_id: str, webhooks: Hooks, caller: Caller
) -> WebhookDelivery:
    """Send a succeeded or failed delivery again, with a fresh series of attempts."""
    caller.require("webhooks:write")
    delivery = await webhooks.call(
        webhooks.app.requeue, caller.account, webhook_id, delivery_id, now=time.time()
    )
    webhooks.wake()
    return render_delivery(delivery)
