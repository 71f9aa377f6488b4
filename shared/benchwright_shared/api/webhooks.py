"""Answers of ``/v1/webhooks``: endpoints, their deliveries and each delivery's attempts.

Times are aware datetimes, written as ``datetime.isoformat()`` writes them
(``+00:00``, as the gateway always has). ``object`` and ``status`` are open ``str``: a
value a newer server adds must not fail an older client.
"""

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, PlainSerializer, WithJsonSchema
from pydantic.json_schema import SkipJsonSchema

from benchwright_shared.api.base import Answer, AttrDict

__all__ = [
    "DeletedWebhook",
    "DeliveryStatus",
    "IsoTime",
    "Webhook",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookDeliveryList",
    "WebhookEvent",
    "WebhookList",
    "WebhookWithSecret",
]

IsoTime = Annotated[
    datetime,
    PlainSerializer(lambda at: at.isoformat(), return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
DeliveryStatus = Literal["pending", "succeeded", "failed"]


class Webhook(Answer):
    """An endpoint that hears of ``events``; ``enabled: false`` pauses it."""

    id: str
    object: str = "webhook"
    url: str
    events: list[str] = Field(default_factory=list)
    description: str = ""
    enabled: bool = True
    created_at: IsoTime | None = None
    updated_at: IsoTime | None = None
    secret_rotated_at: IsoTime | None = None
    # While the previous signing secret still signs too (after a rotation with overlap).
    previous_secret_expires_at: IsoTime | None = None
    # Set only on the answers to create and rotate (``WebhookWithSecret``): a reader of
    # any other answer sees None; never written, never in the schema.
    signing_secret: SkipJsonSchema[str | None] = Field(default=None, repr=False, exclude=True)


class WebhookWithSecret(Webhook):
    """An endpoint as registered (``create``) or rotated (``rotate_secret``): its signing
    secret, shown this once: store it then."""

    signing_secret: str = Field(repr=False)


class WebhookList(Answer):
    """The account's webhooks."""

    object: str = "list"
    data: list[Webhook] = Field(default_factory=list)


class DeletedWebhook(Answer):
    """What deleting a webhook answers."""

    id: str
    object: str = "webhook"
    deleted: bool = True


class WebhookAttempt(Answer):
    """One try at sending a delivery, and its outcome."""

    attempt: int
    at: IsoTime | None = None
    status_code: int | None = None
    duration_ms: int | None = None
    error: str | None = None
    succeeded: bool = False


class WebhookDelivery(Answer):
    """An event sent (or to be sent) to one webhook; ``status``: pending, succeeded or
    failed."""

    id: str
    object: str = "webhook_delivery"
    webhook_id: str
    event_id: str
    event: str
    run_id: str | None = None
    test: bool = False
    # One of ``DeliveryStatus``.
    status: str
    created_at: IsoTime | None = None
    next_attempt_at: IsoTime | None = None
    attempt_count: int = 0
    attempts: list[WebhookAttempt] = Field(default_factory=list)


class WebhookDeliveryList(Answer):
    """A page of a webhook's deliveries, newest first."""

    object: str = "list"
    data: list[WebhookDelivery] = Field(default_factory=list)
    next_page_token: str | None = None


class WebhookEvent(Answer):
    """What a webhook POST carries; for ``run.*`` events ``data`` is the run."""

    id: str
    object: str = "event"
    type: str
    created: datetime | None = None
    test: bool = False
    data: AttrDict = Field(default_factory=AttrDict)
