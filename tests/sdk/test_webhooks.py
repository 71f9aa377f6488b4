"""``bw.webhooks`` (sync and async) and ``benchwright hooks`` against the fake gateway."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from benchwright import AsyncBenchwright, Benchwright, ConflictError, NotFoundError
from benchwright.cli.commands.hooks import hooks_app
from benchwright.resources.webhooks import (
    Webhook,
    WebhookDelivery,
    Webhooks,
    WebhookSignatureError,
    construct_event,
)

from .cli_support import isolate_config, sent_json, use_gateway
from .fakes import TOKEN, FakeGateway, problem

WHK = "whk_0123456789abcdef01234567"
WHD = "whd_89abcdef0123456789abcdef"
HOOK = {
    "id": WHK,
    "object": "webhook",
    "url": "https://ci.example.com/hooks/bw",
    "events": ["run.finished", "run.failed"],
    "description": "PR gate",
    "enabled": True,
    "created_at": "2026-11-29T10:00:00+00:00",
    "updated_at": "2026-11-29T10:00:00+00:00",
    "secret_rotated_at": "2026-11-29T10:00:00+00:00",
    "previous_secret_expires_at": None,
}
SECRET = "whsec_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"
DELIVERY = {
    "id": WHD,
    "object": "webhook_delivery",
    "webhook_id": WHK,
    "event_id": "evt_0123456789abcdef01234567",
    "event": "run.finished",
    "run_id": "3f2b9c1e-0000-4000-8000-000000000001",
    "test": False,
    "status": "succeeded",
    "created_at": "2026-11-29T10:01:00+00:00",
    "next_attempt_at": None,
    "attempt_count": 2,
    "attempts": [
        {"attempt": 1, "at": "2026-11-29T10:01:00+00:00", "status_code": 500,
         "duration_ms": 12, "error": "HTTP 500", "succeeded": False},
        {"attempt": 2, "at": "2026-11-29T10:01:10+00:00", "status_code": 200,
         "duration_ms": 9, "error": None, "succeeded": True},
    ],
}  # fmt: skip


def test_create_list_get_update_delete(bw: Benchwright, gateway: FakeGateway) -> None:
    gateway.on("POST", "/v1/webhooks", httpx.Response(201, json={**HOOK, "signing_secret": SECRET}))
    gateway.on("GET", "/v1/webhooks", httpx.Response(200, json={"object": "list", "data": [HOOK]}))
    gateway.on("GET", f"/v1/webhooks/{WHK}", httpx.Response(200, json=HOOK))
    gateway.on("PATCH", f"/v1/webhooks/{WHK}", httpx.Response(200, json={**HOOK, "enabled": False}))
    gateway.on(
        "DELETE", f"/v1/webhooks/{WHK}", httpx.Response(200, json={"id": WHK, "deleted": True})
    )

    made = bw.webhooks.create(
        HOOK["url"], ["run.finished", "run.failed"], description="PR gate", idempotency_key="k1"
    )
    assert isinstance(made, Webhook) and made.signing_secret == SECRET
    assert SECRET not in repr(made)
    [sent] = gateway.seen("POST", "/v1/webhooks")
    assert sent_json(sent) == {
        "url": HOOK["url"],
        "events": ["run.finished", "run.failed"],
        "description": "PR gate",
    }
    assert sent.headers["idempotency-key"] == "k1"
    assert [h.id for h in bw.webhooks.list()] == [WHK]
    got = bw.webhooks.get(WHK)
    assert got.signing_secret is None and got.events == ["run.finished", "run.failed"]
    assert bw.webhooks.update(WHK, enabled=False).enabled is False
    [patch] = gateway.seen("PATCH", f"/v1/webhooks/{WHK}")
    assert sent_json(patch) == {"enabled": False}
    assert bw.webhooks.delete(WHK).deleted is True


def test_secret_rotation_tests_and_deliveries(bw: Benchwright, gateway: FakeGateway) -> None:
    base = f"/v1/webhooks/{WHK}"
    gateway.on(
        "POST",
        f"{base}/rotate_secret",
        httpx.Response(200, json={**HOOK, "signing_secret": "whsec_new"}),
    )
    gateway.on(
        "POST",
        f"{base}/test",
        httpx.Response(202, json={**DELIVERY, "status": "pending", "test": True}),
    )
    gateway.on(
        "GET",
        f"{base}/deliveries",
        httpx.Response(200, json={"object": "list", "data": [DELIVERY], "next_page_token": None}),
    )
    requeued = {**DELIVERY, "status": "pending"}
    gateway.on("POST", f"{base}/deliveries/{WHD}/retry", httpx.Response(202, json=requeued))

    rotated = bw.webhooks.rotate_secret(WHK, expire_previous_after_s=3600)
    assert rotated.signing_secret == "whsec_new"
    assert sent_json(gateway.seen("POST", f"{base}/rotate_secret")[0]) == {
        "expire_previous_after_s": 3600
    }
    sent = bw.webhooks.test_delivery(WHK, event="run.failed")
    assert isinstance(sent, WebhookDelivery) and sent.test and sent.status == "pending"
    assert sent_json(gateway.seen("POST", f"{base}/test")[0]) == {"event": "run.failed"}
    page = bw.webhooks.deliveries(WHK, "succeeded", limit=10)
    [delivery] = page.data
    assert [a.status_code for a in delivery.attempts] == [500, 200]
    assert delivery.attempts[0].error == "HTTP 500" and delivery.attempts[1].succeeded
    [listed] = gateway.seen("GET", f"{base}/deliveries")
    assert listed.url.params["status"] == "succeeded" and listed.url.params["limit"] == "10"
    assert bw.webhooks.retry_delivery(WHK, WHD).status == "pending"


def test_errors_are_typed(bw: Benchwright, gateway: FakeGateway) -> None:
    gateway.on("GET", f"/v1/webhooks/{WHK}", problem(404, "not found", f"no webhook {WHK!r}"))
    gateway.on(
        "POST",
        f"/v1/webhooks/{WHK}/deliveries/{WHD}/retry",
        problem(409, "conflict", "still pending", code="delivery_pending"),
    )
    with pytest.raises(NotFoundError):
        bw.webhooks.get(WHK)
    with pytest.raises(ConflictError) as pending:
        bw.webhooks.retry_delivery(WHK, WHD)
    assert pending.value.code == "delivery_pending"
    # A rotation is never retried blindly: a lost answer would lose the secret.
    gateway.on("POST", f"/v1/webhooks/{WHK}/rotate_secret", httpx.Response(503))
    with pytest.raises(Exception):  # noqa: B017
        bw.webhooks.rotate_secret(WHK)
    assert len(gateway.seen("POST", f"/v1/webhooks/{WHK}/rotate_secret")) == 1


def signed(body: bytes, secret: str, t: int | None = None) -> str:
    import hashlib
    import hmac

    t = int(time.time()) if t is None else t
    return (
        f"t={t},v1="
        + hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    )


def test_construct_event_verifies_locally() -> None:
    run = {"id": "r1", "status": "ok", "metadata": {"pr": 1}, "links": {"dashboard": None}}
    body = json.dumps(
        {
            "id": "evt_1",
            "object": "event",
            "type": "run.finished",
            "created": "2026-11-29T10:00:00+00:00",
            "test": False,
            "data": run,
        }
    ).encode()
    event = Webhooks.construct_event(body, signed(body, SECRET), SECRET)
    assert event.type == "run.finished" and event.data.metadata.pr == 1
    assert construct_event(body, signed(body, SECRET), SECRET).id == "evt_1"
    with pytest.raises(WebhookSignatureError):
        construct_event(body, signed(body, "whsec_other"), SECRET)
    with pytest.raises(WebhookSignatureError):
        construct_event(body, signed(body, SECRET, t=int(time.time()) - 3600), SECRET)
    assert construct_event(body, signed(body, SECRET, t=1), SECRET, tolerance=None).id == "evt_1"


async def test_the_async_client_mirrors_it(gateway: FakeGateway) -> None:
    gateway.on("POST", "/v1/webhooks", httpx.Response(201, json={**HOOK, "signing_secret": SECRET}))
    gateway.on("GET", "/v1/webhooks", httpx.Response(200, json={"object": "list", "data": [HOOK]}))
    gateway.on(
        "GET",
        f"/v1/webhooks/{WHK}/deliveries",
        httpx.Response(200, json={"object": "list", "data": [DELIVERY]}),
    )
    async with AsyncBenchwright(
        api_key=TOKEN, base_url="http://bw.test", http_client=gateway.async_client()
    ) as abw:
        made = await abw.webhooks.create(HOOK["url"], ["run.finished"])
        assert made.signing_secret == SECRET
        assert [h.id for h in await abw.webhooks.list()] == [WHK]
        page = await abw.webhooks.deliveries(WHK)
        assert page.data[0].id == WHD
        assert abw.webhooks.construct_event is construct_event


def test_the_hooks_cli(
    monkeypatch: pytest.MonkeyPatch, gateway: FakeGateway, tmp_path: Path
) -> None:
    use_gateway(monkeypatch, gateway)
    isolate_config(monkeypatch, tmp_path)
    runner = CliRunner()
    base = f"/v1/webhooks/{WHK}"
    gateway.on("POST", "/v1/webhooks", httpx.Response(201, json={**HOOK, "signing_secret": SECRET}))
    gateway.on("GET", "/v1/webhooks", httpx.Response(200, json={"object": "list", "data": [HOOK]}))
    gateway.on("DELETE", base, httpx.Response(200, json={"id": WHK, "deleted": True}))
    gateway.on("POST", f"{base}/test", httpx.Response(202, json={**DELIVERY, "status": "pending"}))
    page = {"object": "list", "data": [DELIVERY]}
    gateway.on("GET", f"{base}/deliveries", httpx.Response(200, json=page))

    made = runner.invoke(
        hooks_app,
        ["create", HOOK["url"], "--events", "run.finished,run.failed", "-o", "table"],
    )
    assert made.exit_code == 0, made.output
    assert f"created {WHK}" in made.stdout and SECRET in made.stdout
    assert sent_json(gateway.seen("POST", "/v1/webhooks")[0])["events"] == [
        "run.finished",
        "run.failed",
    ]
    # The guide's spelling works too.
    assert runner.invoke(hooks_app, ["add", HOOK["url"], "-o", "json"]).exit_code == 0
    bad = runner.invoke(hooks_app, ["create", HOOK["url"], "--events", "run.started"])
    assert bad.exit_code == 2 and "--events" in bad.stderr
    listed = runner.invoke(hooks_app, ["list", "-o", "ndjson"])
    assert listed.exit_code == 0 and json.loads(listed.stdout.splitlines()[0])["id"] == WHK
    assert "signing_secret" not in listed.stdout
    table = runner.invoke(hooks_app, ["deliveries", WHK, "--status", "succeeded", "-o", "table"])
    assert table.exit_code == 0 and WHD[:12] in table.stdout and "succeeded" in table.stdout
    assert gateway.seen("GET", f"{base}/deliveries")[0].url.params["status"] == "succeeded"
    tested = runner.invoke(hooks_app, ["test", WHK, "--event", "run.finished", "-o", "table"])
    assert tested.exit_code == 0 and f"queued {WHD}" in tested.stdout
    deleted = runner.invoke(hooks_app, ["delete", WHK, "-o", "table"])
    assert deleted.exit_code == 0 and f"deleted {WHK}" in deleted.stdout
    gateway.on("GET", f"/v1/webhooks/{WHK}/deliveries", problem(404, "not found", "no webhook"))
    missing = runner.invoke(hooks_app, ["deliveries", WHK])
    assert missing.exit_code == 1 and "no webhook" in missing.stderr
