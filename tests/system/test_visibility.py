"""Who sees a run: private, unlisted (by link), public; metadata; listing runs."""

import json
from pathlib import Path

import pytest

from benchwright import APIStatusError, AsyncBenchwright
from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer
from tests.system.test_scope_matrix import as_, mint, new_account, open_session

pytestmark = [pytest.mark.slow, pytest.mark.connected]

SCOPES = ["runs:read", "runs:write"]


def pinned(model: FakeOpenAIServer, **extra: object) -> dict[str, object]:
    sut = {"model": "m", "provider": "openai_compatible", "api_base": model.base_url}
    return {"benchmark": "GSM8K", "sut": sut, "metadata": {"limit": 1}, **extra}


async def test_visibility_metadata_and_listing(platform: Platform, tmp_path: Path) -> None:
    client = platform.client
    assert client
    model = FakeOpenAIServer().start()
    try:
        creds = json.loads((platform.settings.data_dir / "credentials.json").read_text())
        admin = await open_session(client, creds["login"]["username"], creds["login"]["password"])
        bob = await mint(client, await new_account(client, admin, "bob"), SCOPES)

        first = (await client.post("/v1/runs", json=pinned(model))).json()
        second = (
            await client.post("/v1/runs", json=pinned(model, metadata={"limit": 1, "pr": 7}))
        ).json()
        done = await platform.wait_terminal(first["id"])
        await platform.wait_terminal(second["id"])
        assert done["visibility"] == "private"
        url = f"/v1/runs/{first['id']}"
        assert (await client.get(url, headers=as_(bob))).status_code == 404

        # metadata alone is not an update; a stale If-Match is refused.
        alone = await client.patch(url, json={"metadata": {"x": 1}})
        assert alone.status_code == 400 and alone.json()["code"] == "invalid_argument"
        stale = await client.patch(
            url, json={"visibility": "unlisted"}, headers={"If-Match": "old"}
        )
        assert stale.status_code == 412 and stale.json()["field"] == "If-Match"

        unlisted = await client.patch(
            url,
            json={"visibility": "unlisted", "metadata": {"team": "evals"}},
            headers={"If-Match": done["etag"]},
        )
        assert unlisted.status_code == 200, unlisted.text
        assert unlisted.json()["visibility"] == "unlisted"
        assert unlisted.json()["metadata"] == {"limit": 1, "team": "evals"}
        # Bob reads it by link (and its tasks), but cannot change or halt it.
        assert (await client.get(url, headers=as_(bob))).json()["id"] == first["id"]
        assert (await client.get(f"{url}/tasks", headers=as_(bob))).status_code == 200
        assert (await client.get("/v1/runs", headers=as_(bob))).json()["data"] == []
        hijack = await client.patch(url, json={"visibility": "private"}, headers=as_(bob))
        assert hijack.status_code == 404

        public = await client.patch(url, json={"visibility": "public", "metadata": {"team": None}})
        assert public.json()["visibility"] == "public"
        assert public.json()["metadata"] == {"limit": 1}
        events = (await client.get(f"{url}/events", params={"types": "RunUpdated"})).json()["data"]
        assert [e["data"]["visibility"] for e in events] == ["unlisted", "public"]

        # Listing: filters combine, sort, and cursor paging.
        listed = (await client.get("/v1/runs", params={"visibility": "public"})).json()["data"]
        assert [r["id"] for r in listed] == [first["id"]]
        newest = (await client.get("/v1/runs", params={"limit": 1})).json()
        assert newest["data"][0]["id"] == second["id"] and newest["next_page_token"]
        page = await client.get(
            "/v1/runs", params={"limit": 1, "page_token": newest["next_page_token"]}
        )
        assert [r["id"] for r in page.json()["data"]] == [first["id"]]
        assert page.json()["next_page_token"] is None
        oldest = (await client.get("/v1/runs", params={"sort": "started_at"})).json()["data"]
        assert [r["id"] for r in oldest] == [first["id"], second["id"]]
        by_name = await client.get("/v1/runs", params={"benchmark": "gsm8k", "status": "ok"})
        assert len(by_name.json()["data"]) == 2
        future = await client.get("/v1/runs", params={"started_at.gte": "2999-01-01T00:00:00Z"})
        assert future.json()["data"] == []
        bad = await client.get("/v1/runs", params={"sort": "colour"})
        assert bad.status_code == 400

        # The same through the SDK: filters, sort, metadata riding along, If-Match.
        async with AsyncBenchwright(api_key=platform.token, base_url=str(client.base_url)) as bw:
            page = await bw.runs.list(filters={"visibility": "public", "status": "ok"})
            assert [r.id for r in page.data] == [first["id"]]
            ordered = await bw.runs.list(sort="started_at", filters={"benchmark": "GSM8K"})
            assert [r.id for r in ordered.data] == [first["id"], second["id"]]
            fresh = await bw.runs.get(second["id"])
            changed = await bw.runs.update(
                second["id"], visibility="unlisted", metadata={"pr": 8}, if_match=fresh.etag
            )
            assert changed.visibility == "unlisted" and changed.metadata["pr"] == 8
            with pytest.raises(APIStatusError) as stale:
                await bw.runs.update(second["id"], visibility="private", if_match=fresh.etag)
            assert stale.value.status_code == 412
            with pytest.raises(APIStatusError) as alone:
                await bw.runs.update(second["id"], metadata={"pr": 9})
            assert alone.value.status_code == 400
    finally:
        model.stop()


async def test_a_run_that_did_not_finish_ok_cannot_be_public(platform: Platform) -> None:
    client = platform.client
    assert client
    broken = {"model": "m", "provider": "openai_compatible", "api_base": "http://127.0.0.1:9/v1"}
    run = (
        await client.post(
            "/v1/runs",
            json={
                "request": "Run GSM8K",
                "sut": broken,
                "driver": "builtin",
                "metadata": {"limit": 1},
            },
        )
    ).json()
    refused = await client.patch(f"/v1/runs/{run['id']}", json={"visibility": "public"})
    assert refused.status_code == 409 and refused.json()["code"] == "not_publishable"
