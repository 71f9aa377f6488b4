"""A port taken between choosing it and listening on it: the runner reports the
address (an ``OSError``, not uvicorn's ``sys.exit`` inside the event loop, which took
every other test of the process with it), stops cleanly, and starts again."""

import socket
from pathlib import Path

import pytest

from tests.conftest import Platform, free_port, platform_settings


async def test_a_taken_gateway_port_is_named_and_a_fresh_start_works(tmp_path: Path) -> None:
    from benchwright_runtime.cli import run_embedded

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        settings = platform_settings(tmp_path, None, None).model_copy(update={"gateway_port": port})
        with pytest.raises(OSError, match=f"could not listen on 127.0.0.1:{port}"):
            await run_embedded(settings, quiet=True)

        # The same data directory, another port: the platform comes up and answers.
        platform = await Platform(settings.model_copy(update={"gateway_port": free_port()})).start()
        try:
            assert platform.client is not None
            assert (await platform.client.get("/v1/runs")).status_code == 200
        finally:
            await platform.shutdown()


async def test_the_test_platform_moves_to_fresh_ports_when_one_is_taken(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        settings = platform_settings(tmp_path, None, None).model_copy(
            update={"proxy_port": taken.getsockname()[1]}
        )
        platform = await Platform(settings).start()
        try:
            assert platform.settings.proxy_port != taken.getsockname()[1]
            assert platform.client is not None
            assert (await platform.client.get("/v1/runs")).status_code == 200
        finally:
            await platform.shutdown()
