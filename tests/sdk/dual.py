"""One test body for both clients: ``await client("secrets.create", ...)`` calls the
sync client's method, or awaits the async client's, on the same fake gateway."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from benchwright import AsyncBenchwright, Benchwright

from .fakes import TOKEN, FakeGateway

BASE_URL = "http://bw.test"


class Dual:
    """A sync or an async client, called the same way."""

    def __init__(self, bw: Benchwright | AsyncBenchwright) -> None:
        self.bw = bw
        self.is_async = isinstance(bw, AsyncBenchwright)

    async def __call__(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``method`` (a dotted path from the client, e.g. ``runs.get``)."""
        target: Any = self.bw
        for part in method.split("."):
            target = getattr(target, part)
        result = target(*args, **kwargs)
        return await result if inspect.isawaitable(result) else result


@asynccontextmanager
async def dual_client(kind: str, gateway: FakeGateway, sleeps: list[float]) -> AsyncIterator[Dual]:
    """A ``kind`` ("sync" or "async") client on ``gateway`` whose backoff sleeps are
    recorded in ``sleeps`` rather than slept."""
    if kind == "sync":
        with Benchwright(api_key=TOKEN, base_url=BASE_URL, http_client=gateway.client()) as bw:
            bw._http.sleep = sleeps.append
            yield Dual(bw)
        return

    async def record(seconds: float) -> None:
        sleeps.append(seconds)

    async with AsyncBenchwright(
        api_key=TOKEN, base_url=BASE_URL, http_client=gateway.async_client()
    ) as abw:
        abw._http.sleep = record
        yield Dual(abw)


@pytest.fixture(params=["sync", "async"], name="client")
async def client_fixture(
    request: pytest.FixtureRequest, gateway: FakeGateway, sleeps: list[float]
) -> AsyncIterator[Dual]:
    """The test runs twice: once with each client. Import it to use it."""
    async with dual_client(request.param, gateway, sleeps) as dual:
        yield dual
