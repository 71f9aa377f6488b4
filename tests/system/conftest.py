from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from benchwright import AsyncBenchwright
from tests.conftest import (
    Platform,
    machine_database_url,
    machine_nats_url,
    platform_settings,
    reset_nats,
    reset_postgres,
)


@pytest.fixture(params=["embedded", "machine"])
async def platform(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Platform]:
    """All six services in one process: on a private nats-server with SQLite, or on
    this machine's NATS and PostgreSQL when CI names them."""
    if request.param == "machine" and request.node.get_closest_marker("embedded_only"):
        pytest.skip("embedded_only: the machine's NATS and PostgreSQL would check nothing more")
    if request.param == "machine":
        nats_url, db_url = machine_nats_url(), machine_database_url()
        if not (nats_url and db_url):
            pytest.skip("set BW_TEST_NATS_URL and BW_TEST_DATABASE_URL to run against them")
        await reset_nats(nats_url)
        reset_postgres(db_url)
        settings = platform_settings(tmp_path, nats_url, db_url)
    else:
        settings = platform_settings(tmp_path, None, None)
    running = await Platform(settings).start()
    yield running
    await running.shutdown()


@pytest.fixture
async def bw(platform: Platform) -> AsyncIterator[AsyncBenchwright]:
    """The async SDK on the platform's gateway, with its admin token."""
    assert platform.client is not None
    base_url = str(platform.client.base_url).rstrip("/")
    async with AsyncBenchwright(api_key=platform.token, base_url=base_url) as client:
        yield client
