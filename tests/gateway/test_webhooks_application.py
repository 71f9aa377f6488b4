"""The webhooks application on an in-memory store: endpoints, fan-out, attempts, outbox."""

from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.fernet import Fernet

from benchwright_gateway.webhooks.application import Outcome, WebhooksApplication
from benchwright_gateway.webhooks.crypto import Sealer
from benchwright_gateway.webhooks.domain import FAILED, PENDING, SUCCEEDED
from benchwright_gateway.webhooks.settings import WebhookSettings
from benchwright_shared.refusal import Refused

URL = "https://ci.example.com/hooks/bw"


@pytest.fixture
def app() -> Iterator[WebhooksApplication]:
    settings = WebhookSettings(max_attempts=3, backoff_initial_s=1, max_endpoints=3)
    application = WebhooksApplication(
        {"PERSISTENCE_MODULE": "eventsourcing.popo"},
        sealer=Sealer(Fernet.generate_key()),
        settings=settings,
    )
    yield application
    application.close()


def register(app: WebhooksApplication, account: str = "acct_a", **kw: Any) -> Any:
    args: dict[str, Any] = {
        "url": URL,
        "events": ["run.finished", "run.failed"],
        "description": "PR gate",
        "idempotency_key": None,
        "now": 100.0,
    }
    return app.register(account, **{**args, **kw})


def stored_bytes(app: WebhooksApplication) -> bytes:
    notifications = app.recorder.select_notifications(start=None, limit=10_000)  # type: ignore[attr-defined]
    return b"".join(bytes(n.state) for n in notifications)


def test_the_signing_secret_is_returned_once_and_stored_only_sealed(
    app: WebhooksApplication,
) -> None:
    made = register(app)
    assert made.secret.startswith("whsec_") and not made.replayed
    assert made.endpoint.endpoint_id.startswith("whk_")
    rotated = app.rotate_secret("acct_a", made.endpoint.endpoint_id, overlap_s=0, now=200.0)
    assert rotated.secret != made.secret
    stored = stored_bytes(app)
    for secret in (made.secret, rotated.secret):
        assert secret.encode() not in stored
        assert secret[6:].encode() not in stored
    assert made.secret not in repr(made) and made.secret[6:] not in repr(made.endpoint)


def test_another_accounts_endpoint_is_missing(app: WebhooksApplication) -> None:
    made = register(app)
    whk = made.endpoint.endpoint_id
    with pytest.raises(Refused) as theirs:
        app.endpoint("acct_b", whk)
    with pytest.raises(Refused) as nothing:
        app.endpoint("acct_b", "whk_" + "0" * 24)
    assert theirs.value.status == nothing.value.status == 404
    assert theirs.value.detail.replace(whk, "X") == nothing.value.detail.replace(
        "whk_" + "0" * 24, "X"
    )
    assert app.endpoints("acct_b") == []
    assert [e.endpoint_id for e in app.endpoints("acct_a")] == [whk]


def test_an_idempotency_key_replays_the_registration(app: WebhooksApplication) -> None:
    first = register(app, idempotency_key="k1")
    again = register(app, idempotency_key="k1")
    assert again.replayed and again.endpoint.endpoint_id == first.endpoint.endpoint_id
    assert again.secret == first.secret
    with pytest.raises(Refused) as reused:
        register(app, idempotency_key="k1", description="another body")
    assert reused.value.status == 409 and reused.value.field == "Idempotency-Key"
    assert len(app.endpoints("acct_a")) == 1
    # The same key in another account is another registration.
    assert not register(app, "acct_b", idempotency_key="k1").replayed


def test_bad_registrations_name_the_field(app: WebhooksApplication) -> None:
    for kw, field in (
        ({"url": "http://ci.example.com/h"}, "url"),
        ({"events": ["run.started"]}, "events"),
        ({"events": []}, "events"),
    ):
        with pytest.raises(Refused) as refused:
            register(app, **kw)
        assert refused.value.status == 400 and refused.value.field == field
    for _ in range(3):
        register(app)
    with pytest.raises(Refused) as full:
        register(app)
    assert full.value.status == 409 and full.value.code == "webhook_limit"


def test_an_outcome_fans_out_once_to_the_endpoints_that_want_it(app: WebhooksApplication) -> None:
    wants = register(app).endpoint.endpoint_id
    register(app, events=["run.halted"])  # does not want run.finished
    paused = register(app).endpoint.endpoint_id
    app.update("acct_a", paused, url=None, events=None, description=None, enabled=False, now=101)
    register(app, "acct_b")  # another account's
    outcome = Outcome(run_id="run-1", event_type="run.finished", seq=40, occurred_at=150.0)
    assert app.notice_outcomes([outcome, outcome], now=151) == 1
    assert app.notice_outcomes([outcome], now=152) == 0
    triggers, pending = app.outbox_state()
    [(event_id, trigger)] = triggers.items()
    assert trigger["run_id"] == "run-1" and trigger["seq"] == 40 and pending == {}
    created = app.fan_out(event_id, account="acct_a", body='{"x":1}', now=153)
    assert len(created) == 1
    delivery = app.delivery(created[0])
    assert delivery is not None and delivery.endpoint_id == wants and delivery.status == PENDING
    triggers, pending = app.outbox_state()
    assert triggers == {} and pending == {created[0]: 153}
    # The run log redelivered: noticed again, fanned out again, nothing new.
    app.notice_outcomes([outcome], now=160)
    assert app.fan_out(event_id, account="acct_a", body='{"x":2}', now=161) == []
    assert app.outbox_state() == ({}, {created[0]: 153})
    assert app.delivery(created[0]).body == '{"x":1}'  # type: ignore[union-attr]


def test_an_endpoint_hears_nothing_from_before_it_existed(app: WebhooksApplication) -> None:
    register(app, now=500.0)
    old = Outcome(run_id="run-old", event_type="run.finished", seq=9, occurred_at=400.0)
    app.notice_outcomes([old], now=600)
    [event_id] = app.outbox_state()[0]
    assert app.fan_out(event_id, account="acct_a", body="{}", now=601) == []
    assert app.outbox_state() == ({}, {})


def deliver_one(app: WebhooksApplication) -> tuple[str, str]:
    whk = register(app).endpoint.endpoint_id
    app.notice_outcomes([Outcome("run-1", "run.failed", 3, 150.0)], now=151)
    [event_id] = app.outbox_state()[0]
    [whd] = app.fan_out(event_id, account="acct_a", body="{}", now=152)
    return whk, whd


def test_attempts_are_claimed_recorded_and_retried(app: WebhooksApplication) -> None:
    whk, whd = deliver_one(app)
    job = app.claim(whd, "w1", 160)
    assert job is not None and job.url == URL and job.attempt == 1
    assert job.secrets[0].startswith("whsec_") and "whsec_" not in repr(job)
    assert app.claim(whd, "w2", 161) is None  # w1 holds it
    status = app.record_attempt(
        whd, "w1", at=162, status_code=500, duration_ms=12, error="HTTP 500"
    )
    assert status == PENDING
    assert app.outbox_state()[1] == {whd: 163.0}  # 1 s of backoff
    assert app.claim(whd, "w2", 162.5) is None  # not due yet
    job = app.claim(whd, "w2", 163)
    assert job is not None and job.attempt == 2
    # w1's late answer for an attempt it no longer holds is not recorded.
    assert app.record_attempt(whd, "w1", at=163, status_code=200, duration_ms=1, error=None) is None
    assert (
        app.record_attempt(whd, "w2", at=164, status_code=204, duration_ms=3, error=None)
        == SUCCEEDED
    )
    assert app.outbox_state() == ({}, {})
    page, token = app.deliveries("acct_a", whk, status=None, limit=10, after=None)
    assert [d.delivery_id for d in page] == [whd] and token is None
    assert [a["status_code"] for a in page[0].attempts] == [500, 204]
    assert app.deliveries("acct_a", whk, status=FAILED, limit=10, after=None)[0] == []
    with pytest.raises(Refused):
        app.deliveries("acct_b", whk, status=None, limit=10, after=None)
    # A manual retry sends it again.
    again = app.requeue("acct_a", whk, whd, now=200)
    assert again.status == PENDING and app.outbox_state()[1] == {whd: 200}
    with pytest.raises(Refused) as pending:
        app.requeue("acct_a", whk, whd, now=201)
    assert pending.value.status == 409
    with pytest.raises(Refused) as missing:
        app.requeue("acct_a", whk, "whd_nope", now=201)
    assert missing.value.status == 404 and missing.value.field == "delivery_id"


def test_a_delivery_gives_up_after_its_attempts(app: WebhooksApplication) -> None:
    whk, whd = deliver_one(app)
    now = 160.0
    for _ in range(3):
        job = app.claim(whd, "w1", now)
        assert job is not None
        app.record_attempt(whd, "w1", at=now, status_code=None, duration_ms=1, error="refused")
        now += 100
    assert app.delivery(whd).status == FAILED  # type: ignore[union-attr]
    assert app.outbox_state()[1] == {}
    page, _ = app.deliveries("acct_a", whk, status=FAILED, limit=10, after=None)
    assert [d.delivery_id for d in page] == [whd]


def test_a_deleted_endpoint_gives_up_its_pending_deliveries(app: WebhooksApplication) -> None:
    whk, whd = deliver_one(app)
    app.remove("acct_a", whk, now=155)
    assert app.claim(whd, "w1", 160) is None
    delivery = app.delivery(whd)
    assert delivery is not None and delivery.status == FAILED
    assert delivery.attempts[-1]["error"] == "the webhook was deleted"
    assert app.outbox_state() == ({}, {})
    with pytest.raises(Refused):
        app.endpoint("acct_a", whk)


def test_test_deliveries_and_paging(app: WebhooksApplication) -> None:
    whk = register(app).endpoint.endpoint_id
    made = [
        app.schedule_test(
            "acct_a", whk, event_id=f"evt_{i}", event_type="ping", body="{}", now=100 + i
        ).delivery_id
        for i in range(5)
    ]
    page, token = app.deliveries("acct_a", whk, status=PENDING, limit=2, after=None)
    assert [d.delivery_id for d in page] == made[::-1][:2] and token == made[3]
    page, token = app.deliveries("acct_a", whk, status=PENDING, limit=2, after=token)
    assert [d.delivery_id for d in page] == made[::-1][2:4]
    page, token = app.deliveries("acct_a", whk, status=PENDING, limit=2, after=token)
    assert [d.delivery_id for d in page] == made[:1] and token is None
    assert all(app.delivery(d).test for d in made)  # type: ignore[union-attr]


def test_the_outbox_survives_many_changes_through_snapshots(app: WebhooksApplication) -> None:
    whk = register(app).endpoint.endpoint_id
    for i in range(130):
        d = app.schedule_test(
            "acct_a", whk, event_id=f"evt_{i}", event_type="ping", body="{}", now=1
        )
        job = app.claim(d.delivery_id, "w", 2)
        assert job is not None
        app.record_attempt(d.delivery_id, "w", at=3, status_code=200, duration_ms=1, error=None)
    assert app.outbox_state() == ({}, {})
    assert app.snapshots is not None
    page, _ = app.deliveries("acct_a", whk, status=SUCCEEDED, limit=200, after=None)
    assert len(page) == 130
