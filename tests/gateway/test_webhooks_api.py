"""``/v1/webhooks`` in-process through the ASGI transport: scopes, owners, secrets, problems."""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwright_gateway.app import GatewayService
from benchwright_shared.settings import Settings

URL = "https://ci.example.com/hooks/bw"
MISSING = "whk_" + "0" * 24


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[GatewayService]:
    service = GatewayService(Settings(data_dir=tmp_path))
    yield service
    service.webhooks.close()
    service.app.close()
    service.views.close()


def client(service: GatewayService, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=service.http),
        base_url="http://gw",
        headers={"Authorization": f"Bearer {token}"},
    )


def token(service: GatewayService, account: str, *scopes: str) -> str:
    return service.app.mint_token(account, list(scopes or ("webhooks:read", "webhooks:write")), "t")


async def create(http: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await http.post(
        "/v1/webhooks", json={"url": URL, "events": ["run.finished"], **body}
    )
    assert response.status_code == 201, response.text
    made: dict[str, Any] = response.json()
    return made


async def test_scopes_guard_every_route(gateway: GatewayService) -> None:
    runs_only = token(gateway, "acct_a", "runs:read", "runs:write")
    reader = token(gateway, "acct_a", "webhooks:read")
    async with client(gateway, runs_only) as http:
        for method, path in (
            ("GET", "/v1/webhooks"),
            ("GET", f"/v1/webhooks/{MISSING}"),
            ("GET", f"/v1/webhooks/{MISSING}/deliveries"),
        ):
            response = await http.request(method, path)
            assert response.status_code == 403, (path, response.text)
            assert "webhooks:read" in response.json()["detail"]
    async with client(gateway, reader) as http:
        assert (await http.get("/v1/webhooks")).json() == {"object": "list", "data": []}
        for method, path, body in (
            ("POST", "/v1/webhooks", {"url": URL, "events": ["run.failed"]}),
            ("PATCH", f"/v1/webhooks/{MISSING}", {"enabled": False}),
            ("DELETE", f"/v1/webhooks/{MISSING}", None),
            ("POST", f"/v1/webhooks/{MISSING}/rotate_secret", None),
            ("POST", f"/v1/webhooks/{MISSING}/test", None),
            ("POST", f"/v1/webhooks/{MISSING}/deliveries/whd_x/retry", None),
        ):
            response = await http.request(method, path, json=body)
            assert response.status_code == 403, (path, response.text)
            body = response.json()
            assert "webhooks:write" in body["detail"] and body["code"] == "missing_scope"


async def test_the_secret_is_shown_once(gateway: GatewayService) -> None:
    async with client(gateway, token(gateway, "acct_a")) as http:
        made = await create(http, description="PR gate", events=["run.finished", "run.failed"])
        whk, secret = made["id"], made["signing_secret"]
        assert whk.startswith("whk_") and secret.startswith("whsec_")
        assert made["object"] == "webhook" and made["enabled"] is True
        assert made["events"] == ["run.finished", "run.failed"]
        shown = [
            (await http.get(f"/v1/webhooks/{whk}")).json(),
            (await http.get("/v1/webhooks")).json()["data"][0],
            (await http.patch(f"/v1/webhooks/{whk}", json={"description": "x"})).json(),
        ]
        for document in shown:
            assert "signing_secret" not in document and secret not in str(document)
            assert document["id"] == whk
        rotated = (await http.post(f"/v1/webhooks/{whk}/rotate_secret")).json()
        assert rotated["signing_secret"].startswith("whsec_")
        assert rotated["signing_secret"] != secret
        assert rotated["previous_secret_expires_at"] is None
        overlapping = (
            await http.post(
                f"/v1/webhooks/{whk}/rotate_secret", json={"expire_previous_after_s": 3600}
            )
        ).json()
        assert overlapping["previous_secret_expires_at"] is not None
        assert "signing_secret" not in (await http.get(f"/v1/webhooks/{whk}")).json()


async def test_an_idempotent_create_answers_the_same_webhook(gateway: GatewayService) -> None:
    async with client(gateway, token(gateway, "acct_a")) as http:
        key = {"Idempotency-Key": "ci-42"}
        body = {"url": URL, "events": ["run.finished"]}
        first = await http.post("/v1/webhooks", json=body, headers=key)
        again = await http.post("/v1/webhooks", json=body, headers=key)
        assert (first.status_code, again.status_code) == (201, 200)
        assert first.json() == again.json()
        other = await http.post(
            "/v1/webhooks", json={**body, "events": ["run.failed"]}, headers=key
        )
        assert other.status_code == 409 and other.json()["field"] == "Idempotency-Key"
        assert len((await http.get("/v1/webhooks")).json()["data"]) == 1


async def test_another_accounts_webhook_is_404_like_a_missing_one(
    gateway: GatewayService,
) -> None:
    async with client(gateway, token(gateway, "acct_a")) as alice:
        whk = (await create(alice))["id"]
        delivery = (await alice.post(f"/v1/webhooks/{whk}/test")).json()["id"]
    async with client(gateway, token(gateway, "acct_b")) as bob:
        assert (await bob.get("/v1/webhooks")).json()["data"] == []
        for method, path, body in (
            ("GET", "/v1/webhooks/{}", None),
            ("PATCH", "/v1/webhooks/{}", {"enabled": False}),
            ("DELETE", "/v1/webhooks/{}", None),
            ("POST", "/v1/webhooks/{}/rotate_secret", None),
            ("POST", "/v1/webhooks/{}/test", None),
            ("GET", "/v1/webhooks/{}/deliveries", None),
            ("POST", "/v1/webhooks/{}/deliveries/" + delivery + "/retry", None),
        ):
            theirs = await bob.request(method, path.format(whk), json=body)
            nothing = await bob.request(method, path.format(MISSING), json=body)
            assert theirs.status_code == nothing.status_code == 404, (path, theirs.text)
            assert theirs.headers["content-type"].startswith("application/problem+json")
            assert theirs.content.replace(whk.encode(), MISSING.encode()) == nothing.content
            assert theirs.json()["field"] == "webhook_id"
    async with client(gateway, token(gateway, "acct_a")) as alice:
        # Nothing bob did reached it.
        shown = (await alice.get(f"/v1/webhooks/{whk}")).json()
        assert shown["enabled"] is True
        deliveries = (await alice.get(f"/v1/webhooks/{whk}/deliveries")).json()["data"]
        assert [d["id"] for d in deliveries] == [delivery]


async def test_bad_requests_are_problems_naming_the_field(gateway: GatewayService) -> None:
    async with client(gateway, token(gateway, "acct_a")) as http:
        for body, field in (
            ({"url": "http://ci.example.com/h", "events": ["run.finished"]}, "url"),
            ({"url": "http://127.0.0.1:9/h", "events": ["run.finished"]}, "url"),
            ({"url": "https://10.0.0.7/h", "events": ["run.finished"]}, "url"),
            ({"url": URL, "events": ["run.started"]}, "events"),
            ({"url": URL, "events": []}, "events"),
            ({"url": URL}, "events"),
            ({"url": URL, "events": ["run.failed"], "secret": "mine"}, "secret"),
        ):
            response = await http.post("/v1/webhooks", json=body)
            assert response.status_code == 400, (body, response.text)
            assert response.headers["content-type"].startswith("application/problem+json")
            assert response.json()["field"] == field, response.json()
        whk = (await create(http))["id"]
        empty = await http.patch(f"/v1/webhooks/{whk}", json={})
        assert empty.status_code == 400
        bad_event = await http.post(f"/v1/webhooks/{whk}/test", json={"event": "run.started"})
        assert bad_event.status_code == 400 and bad_event.json()["field"] == "event"
        too_long = await http.post(
            f"/v1/webhooks/{whk}/rotate_secret", json={"expire_previous_after_s": 10**7}
        )
        assert too_long.status_code == 400
        assert too_long.json()["field"] == "expire_previous_after_s"
        bad_status = await http.get(f"/v1/webhooks/{whk}/deliveries", params={"status": "x"})
        assert bad_status.status_code == 400 and bad_status.json()["field"] == "status"


async def test_update_test_deliveries_retry_and_delete(gateway: GatewayService) -> None:
    async with client(gateway, token(gateway, "acct_a")) as http:
        whk = (await create(http))["id"]
        patched = await http.patch(
            f"/v1/webhooks/{whk}",
            json={"events": ["run.failed", "run.halted"], "enabled": False, "url": URL + "/v2"},
        )
        assert patched.status_code == 200, patched.text
        assert patched.json()["events"] == ["run.failed", "run.halted"]
        assert patched.json()["enabled"] is False and patched.json()["url"] == URL + "/v2"
        sent = await http.post(f"/v1/webhooks/{whk}/test", json={"event": "run.finished"})
        assert sent.status_code == 202, sent.text
        delivery = sent.json()
        assert delivery["id"].startswith("whd_") and delivery["event_id"].startswith("evt_")
        assert delivery["status"] == "pending" and delivery["test"] is True
        assert delivery["event"] == "run.finished" and delivery["attempts"] == []
        listed = (await http.get(f"/v1/webhooks/{whk}/deliveries")).json()
        assert [d["id"] for d in listed["data"]] == [delivery["id"]]
        pending = await http.get(f"/v1/webhooks/{whk}/deliveries", params={"status": "pending"})
        assert len(pending.json()["data"]) == 1
        failed = await http.get(f"/v1/webhooks/{whk}/deliveries", params={"status": "failed"})
        assert failed.json()["data"] == []
        retry = await http.post(f"/v1/webhooks/{whk}/deliveries/{delivery['id']}/retry")
        assert retry.status_code == 409 and retry.json()["code"] == "delivery_pending"
        missing = await http.post(f"/v1/webhooks/{whk}/deliveries/whd_nope/retry")
        assert missing.status_code == 404 and missing.json()["field"] == "delivery_id"
        gone = await http.delete(f"/v1/webhooks/{whk}")
        assert gone.json() == {"id": whk, "object": "webhook", "deleted": True}
        assert (await http.get(f"/v1/webhooks/{whk}")).status_code == 404
        assert (await http.get(f"/v1/webhooks/{whk}/deliveries")).status_code == 404
        assert (await http.get("/v1/webhooks")).json()["data"] == []


async def test_loopback_http_needs_the_insecure_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BW_WEBHOOKS_ALLOW_INSECURE_URLS", "true")
    service = GatewayService(Settings(data_dir=tmp_path))
    try:
        async with client(service, token(service, "acct_a")) as http:
            made = await http.post(
                "/v1/webhooks", json={"url": "http://127.0.0.1:9/h", "events": ["run.failed"]}
            )
            assert made.status_code == 201, made.text
            public_http = await http.post(
                "/v1/webhooks", json={"url": "http://ci.example.com/h", "events": ["run.failed"]}
            )
            assert public_http.status_code == 400
    finally:
        service.webhooks.close()
        service.app.close()
        service.views.close()
