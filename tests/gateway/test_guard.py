"""The gateway's outer layer: bodies it refuses, and crashes that keep the connection."""

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI

from benchwright_gateway.api.guard import MAX_DEPTH, BodyGuard, Contained, Refusal, check_json
from tests.conftest import free_port


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ('{"a": {"b": NaN}}', "a.b", "finite"),
        ('{"a": [1, Infinity]}', "a[1]", "finite"),
        ('{"a": 1e999}', "a", "finite"),
        ('{"a": -1e999}', "a", "finite"),
        ('{"a": "\\ud800"}', "a", "surrogate"),
        ('{"a\\ud800": 1}', "a\ud800", "surrogate"),
        ('{"name": "x\\u0000y"}', "name", "NUL"),
        ('{"n": 9223372036854775808}', "n", "64 bits"),
        ('{"n": -9223372036854775809}', "n", "64 bits"),
    ],
)
def test_json_the_platform_cannot_keep_is_refused_naming_where(
    text: str, field: str, words: str
) -> None:
    with pytest.raises(Refusal) as refused:
        check_json(text.encode())
    assert refused.value.status == 400
    assert refused.value.field == field
    assert words in refused.value.detail


def test_depth_is_bounded_without_recursion() -> None:
    fine: Any = 1
    for _ in range(MAX_DEPTH):
        fine = [fine]
    check_json(json.dumps(fine).encode())
    with pytest.raises(Refusal, match="nested deeper"):
        check_json(("[" * 100_000 + "]" * 100_000).encode())
    with pytest.raises(Refusal, match="nested deeper"):
        check_json(json.dumps([fine]).encode())


def test_what_is_fine_or_not_json_at_all_passes_to_the_route() -> None:
    check_json(b'{"a": [1, 2.5, -9223372036854775808, "\\u2028", true, null]}')
    check_json(b"{not json")  # the route answers it


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[int]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 - uvicorn offers no event for it
        await asyncio.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        await task


def exchange(port: int, requests: list[bytes]) -> list[bytes]:
    """Send requests one after another on one connection; each answer's head and body."""
    answers = []
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        stream = conn.makefile("rb")
        for request in requests:
            conn.sendall(request)
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                byte = stream.read(1)
                assert byte, f"the connection closed; got {head!r}"
                head += byte
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            answers.append(head + stream.read(length))
    return answers


async def test_a_crash_is_a_500_problem_and_the_connection_stays_open() -> None:
    app = FastAPI()

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("a bug")

    @app.get("/fine")
    async def fine() -> dict[str, str]:
        return {"ok": "yes"}

    app.add_middleware(Contained)
    async with serving(app) as port:
        get = b"GET /%s HTTP/1.1\r\nHost: x\r\n\r\n"
        crashed, after = await asyncio.to_thread(exchange, port, [get % b"boom", get % b"fine"])
    assert crashed.startswith(b"HTTP/1.1 500")
    assert b"application/problem+json" in crashed and b'"code": "internal"' in crashed
    assert after.startswith(b"HTTP/1.1 200") and after.endswith(b'{"ok":"yes"}')


async def test_a_body_over_the_limit_is_413_even_without_a_declared_length() -> None:
    app = FastAPI()

    @app.post("/echo")
    async def echo(body: dict[str, Any]) -> dict[str, Any]:
        return body

    app.add_middleware(BodyGuard, max_bytes=2048, max_upload_bytes=4096)
    async with serving(app) as port:
        chunk = b"x" * 1000
        chunked = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(3)) + b"0\r\n\r\n"
        head = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        refused, fine = await asyncio.to_thread(
            exchange,
            port,
            [
                head + b"Transfer-Encoding: chunked\r\n\r\n" + chunked,
                head + b'Content-Length: 8\r\n\r\n{"a": 1}',
            ],
        )
    assert refused.startswith(b"HTTP/1.1 413") and b'"field": "body"' in refused
    assert fine.startswith(b"HTTP/1.1 200") and fine.endswith(b'{"a":1}')
