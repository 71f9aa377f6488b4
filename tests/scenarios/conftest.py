"""One embedded platform per scenario module, and the guide's client on it.

The guide assumes ``BW_PAT`` in the environment and ``Benchwright(api_key=...)``
(section 1). Here the token is the one ``benchwright up`` minted for the platform,
``BW_BASE_URL`` points at it, and the CLI keeps its config and ``@last`` memory in a
directory of the module's own.
"""

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from benchwright import Benchwright
from tests.conftest import Platform, platform_settings
from tests.scenarios.support import Steps


@pytest.fixture(scope="module")
async def platform(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Platform]:
    """All six services in this process, on a private nats-server and SQLite."""
    settings = platform_settings(tmp_path_factory.mktemp("platform"), None, None)
    running = await Platform(settings).start()
    yield running
    await running.shutdown()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the scenario's files (manifests, task files) and CLI invocations live."""
    return tmp_path_factory.mktemp("checkout")


@pytest.fixture(scope="module")
def guide_env(
    platform: Platform, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    """``BW_PAT`` and ``BW_BASE_URL`` for the SDK and the CLI, as a CI job sets them."""
    assert platform.client is not None
    config = tmp_path_factory.mktemp("config") / "benchwright" / "config.toml"
    env = {
        "BW_PAT": platform.token,
        "BW_BASE_URL": str(platform.client.base_url).rstrip("/"),
        "BW_CONFIG": str(config),
    }
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        for name in ("BW_PROFILE", "BW_OUTPUT", "BW_DATA_DIR"):
            patch.delenv(name, raising=False)
        yield env


@pytest.fixture(scope="module")
def bw(guide_env: dict[str, str]) -> Iterator[Benchwright]:
    """The guide's client: ``Benchwright(api_key=os.environ["BW_PAT"])``."""
    client = Benchwright(api_key=os.environ["BW_PAT"])
    yield client
    client.close()


@pytest.fixture(scope="module")
def steps() -> Steps:
    """Results of the scenario's steps so far."""
    return Steps()
