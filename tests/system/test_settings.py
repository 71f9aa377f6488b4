"""Account settings: an allowlisted schema, values checked like launch fields, and
launches that leave a field out taking the account's default."""

import pytest

from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer
from tests.system.test_pinned_run import launch_body

pytestmark = [pytest.mark.slow, pytest.mark.connected]


async def test_settings_are_checked_and_fill_launch_defaults(platform: Platform) -> None:
    client = platform.client
    assert client
    schema = (await client.get("/v1/settings/schema")).json()["keys"]
    assert {"default_driver", "default_compute", "default_limits"} <= set(schema)
    assert (await client.get("/v1/settings")).json()["data"] == []

    refused = [
        ("default_compute", "e2bb", 400),
        ("default_driver", "gpt", 400),
        ("default_limits", {"run": {"bananas": 1}}, 400),
        ("colour", "red", 404),
    ]
    for key, value, status in refused:
        answer = await client.put(f"/v1/settings/{key}", json={"value": value})
        assert answer.status_code == status, (key, answer.text)
        assert answer.json()["field"] in ("value", "key")

    for key, value in (
        ("default_compute", "local"),
        ("default_limits", {"run": {"duration": 600}}),
    ):
        set_ = await client.put(f"/v1/settings/{key}", json={"value": value})
        assert set_.status_code == 200, set_.text
    got = (await client.get("/v1/settings/default_limits")).json()
    assert got["value"] == {"run": {"duration": 600.0}} and got["updated_at"]

    model = FakeOpenAIServer().start()
    try:
        run = (await client.post("/v1/runs", json=launch_body(model, limit=1))).json()
        done = await platform.wait_terminal(run["id"])
        assert done["compute"] == "local" and done["limits"] == {"run": {"duration": 600.0}}
        # What the launch says wins over the default.
        own = launch_body(model, limit=1, compute="default", limits={"run": {"duration": 30}})
        mine = await platform.wait_terminal((await client.post("/v1/runs", json=own)).json()["id"])
        assert mine["compute"] == "default" and mine["limits"] == {"run": {"duration": 30.0}}
    finally:
        model.stop()

    assert (await client.delete("/v1/settings/default_compute")).json()["deleted"] is True
    assert (await client.get("/v1/settings/default_compute")).status_code == 404
    assert [s["key"] for s in (await client.get("/v1/settings")).json()["data"]] == [
        "default_limits"
    ]
