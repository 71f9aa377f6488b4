"""``compute`` picks where a run's sandboxes live; the run records the backend.

A pinned run on ``e2b`` goes through the real e2b SDK to a local fake of E2B
(each fake sandbox a bubblewrap one): the tasks run there, the run shows
``backend: e2b``, and its sandboxes are costed at e2b's rate.
"""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from benchwright_sandbox_manager.backends.e2b.backend import META_KEY
from tests.conftest import Platform, free_port, platform_settings
from tests.sandbox_manager.fakes.e2b_api import FakeE2B
from tests.support.fake_openai import FakeOpenAIServer
from tests.system.test_pinned_run import launch_body

pytestmark = [pytest.mark.slow, pytest.mark.connected]

API_KEY = "e2b_fake_key_for_the_platform"


@pytest.fixture
async def on_e2b(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Platform, FakeE2B]]:
    for name in ("E2B_API_KEY", "E2B_API_URL", "E2B_SANDBOX_URL", "E2B_DOMAIN", "E2B_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    fake = await FakeE2B(tmp_path / "fake-e2b", API_KEY).start()
    injector = free_port()
    settings = platform_settings(tmp_path / "data", None, None).model_copy(
        update={
            "e2b_api_key": API_KEY,
            "e2b_api_url": fake.url,
            "e2b_sandbox_url": fake.url,
            "injector_port": injector,
            "e2b_egress_proxy_url": f"http://127.0.0.1:{injector}",
            "sandbox_rate_e2b_micros": 10_000,
        }
    )
    platform = await Platform(settings).start()
    try:
        yield platform, fake
    finally:
        await platform.shutdown()
        await fake.close()


async def test_a_run_on_e2b_runs_there_and_says_so(on_e2b: tuple[Platform, FakeE2B]) -> None:
    platform, fake = on_e2b
    client = platform.client
    assert client
    model = FakeOpenAIServer().start()
    try:
        launched = await client.post("/v1/runs", json=launch_body(model, limit=3, compute="e2b"))
        assert launched.status_code == 201, launched.text
        done = await platform.wait_terminal(launched.json()["id"], timeout=300)
        assert done["status"] == "ok", done["error"]
        assert (done["compute"], done["backend"]) == ("e2b", "e2b")
        assert done["summary"]["total"] == 3

        events = (await client.get(f"/v1/runs/{done['id']}/events", params={"limit": 5000})).json()[
            "data"
        ]
        created = [e for e in events if e["type"] == "SandboxCreated"]
        assert created and all(e["data"]["backend"] == "e2b" for e in created)
        assert all(e["data"]["metadata"]["isolation"] == "e2b" for e in created)
        ours = {e["data"]["sandbox_id"] for e in created}
        made = {meta.get(META_KEY) for _, meta in fake.created}
        assert ours <= made, (ours, fake.created)

        async def costed() -> bool:
            run = (await client.get(f"/v1/runs/{done['id']}")).json()
            return bool(run["cost"]["sandbox"]["amount_usd"] > 0)

        await platform_eventually(costed)

        # `auto` picks the configured remote backend; a replay stays where its parent ran.
        auto = await client.post("/v1/runs", json=launch_body(model, limit=1, compute="auto"))
        assert (await platform.wait_terminal(auto.json()["id"], timeout=300))["backend"] == "e2b"
        local = await client.post("/v1/runs", json=launch_body(model, limit=1, compute="local"))
        assert (await platform.wait_terminal(local.json()["id"]))["backend"] == "local"
    finally:
        model.stop()


async def platform_eventually(check: Callable[[], Awaitable[bool]], timeout: float = 15) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("never happened")
        await asyncio.sleep(0.2)
