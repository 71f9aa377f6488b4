"""The gateway keeps an idle connection open longer than its clients do.

httpx (the SDK's transport) and the OpenAI SDK reuse an idle connection for up
to 5 s. A server that closes idle connections at 5 s races them: a request
written as the server closes fails with a read error, as a paused run's poll
once did in CI. The server must outlast the clients' expiry.
"""

import asyncio
from urllib.parse import urlsplit

import pytest

from tests.conftest import Platform

pytestmark = [pytest.mark.slow, pytest.mark.connected, pytest.mark.embedded_only]

CLIENT_KEEP_ALIVE_S = 5.0


async def get_healthz(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n")
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    await asyncio.wait_for(reader.readexactly(length), 10)
    return head.split(b"\r\n", 1)[0]


async def test_an_idle_connection_outlives_the_clients_expiry(platform: Platform) -> None:
    assert platform.client
    url = urlsplit(str(platform.client.base_url))
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    try:
        assert await get_healthz(reader, writer) == b"HTTP/1.1 200 OK"
        await asyncio.sleep(CLIENT_KEEP_ALIVE_S + 1.0)
        # The same connection, idle past any client's expiry, still answers.
        assert await get_healthz(reader, writer) == b"HTTP/1.1 200 OK"
    finally:
        writer.close()
