"""The asynchronous transport, the mirror image of :mod:`benchwright._http`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import httpx
from httpx_sse import EventSource, ServerSentEvent

from ._config import ClientConfig
from ._errors import error_from_response
from ._http import (
    STREAM_TIMEOUT,
    BaseHTTP,
    Call,
    Params,
    clean_params,
    connection_error,
    decode_json,
)
from ._retry import is_retry_safe

__all__ = ["AsyncHTTP"]


class AsyncHTTP(BaseHTTP):
    """Sends requests to one Benchwright server with retries and typed errors."""

    def __init__(
        self,
        config: ClientConfig,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int = 2,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(config, timeout=timeout, max_retries=max_retries)
        self._client = http_client or httpx.AsyncClient(timeout=self.timeout)
        self._owns_client = http_client is None
        # An attribute rather than a direct call so tests can skip the waiting.
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    async def aclose(self) -> None:
        """Close the underlying connection pool if this object created it."""
        if self._owns_client:
            await self._client.aclose()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        retry_safe: bool | None = None,
        raw: bool = False,
        timeout: float | None = None,
    ) -> Any:
        """Send a request and return its decoded JSON body (or bytes with ``raw``);
        see ``SyncHTTP.request``."""
        merged = self.headers(headers)
        safe = is_retry_safe(method, merged) if retry_safe is None else retry_safe
        url = self.url(path)
        query = clean_params(params)
        attempt = 0
        while True:
            try:
                response = await self._client.request(
                    method,
                    url,
                    params=query,
                    json=json,
                    headers=merged,
                    timeout=self.timeout if timeout is None else timeout,
                )
            except httpx.TransportError as exc:
                if self.should_retry_transport(attempt, exc, safe):
                    await self.sleep(self.policy.delay(attempt))
                    attempt += 1
                    continue
                raise connection_error(exc, url) from exc
            if response.is_success:
                return response.content if raw else decode_json(response)
            if self.should_retry(attempt, response, safe):
                await self.sleep(self.policy.delay(attempt, response))
                attempt += 1
                continue
            raise error_from_response(response)

    async def send[T](self, call: Call[T]) -> T:
        """Send a prepared :class:`~benchwright._http.Call` and parse its answer."""
        return call.parse(await self.request(call.method, call.path, **call.options()))

    async def sse(
        self,
        path: str,
        *,
        params: Params | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> AsyncIterator[ServerSentEvent]:
        """Open a Server-Sent Events stream and yield its events; see ``SyncHTTP.sse``."""
        merged = self.sse_headers(headers)
        url = self.url(path)
        query = clean_params(params)
        attempt = 0
        while True:
            try:
                async with self._client.stream(
                    "GET", url, params=query, headers=merged, timeout=STREAM_TIMEOUT
                ) as response:
                    if response.is_success:
                        async for sse in EventSource(response).aiter_sse():
                            yield sse
                        return
                    await response.aread()
                    if self.should_retry(attempt, response, safe=True):
                        delay = self.policy.delay(attempt, response)
                    else:
                        raise error_from_response(response)
            except httpx.TransportError as exc:
                raise connection_error(exc, url) from exc
            await self.sleep(delay)
            attempt += 1
