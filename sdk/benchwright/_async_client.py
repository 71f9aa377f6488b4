"""The asynchronous client, ``AsyncBenchwright``."""

from __future__ import annotations

from types import TracebackType

import httpx

from ._async_http import AsyncHTTP
from ._config import resolve_config
from .registry import AsyncBenchmarks, AsyncImpls, AsyncRegistry
from .resources.async_admin import AsyncAdmin
from .resources.async_runs import AsyncRuns
from .resources.billing import AsyncBilling
from .resources.webhooks import AsyncWebhooks

__all__ = ["AsyncBenchwright"]


class AsyncBenchwright:
    """The asyncio flavour of :class:`~benchwright.Benchwright`, configured the same way.

    Use it as ``async with AsyncBenchwright() as bw:`` so the pool is closed.
    """

    runs: AsyncRuns
    admin: AsyncAdmin
    billing: AsyncBilling
    webhooks: AsyncWebhooks
    registry: AsyncRegistry
    benchmarks: AsyncBenchmarks
    impls: AsyncImpls

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int = 2,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        config = resolve_config(api_key, base_url)
        self._http = AsyncHTTP(
            config, timeout=timeout, max_retries=max_retries, http_client=http_client
        )
        self.runs = AsyncRuns(self._http)
        self.admin = AsyncAdmin(self._http)
        self.billing = AsyncBilling(self._http)
        self.webhooks = AsyncWebhooks(self._http)
        self.registry = AsyncRegistry(self._http)
        self.benchmarks = self.registry.benchmarks
        self.impls = self.registry.impls

    @property
    def base_url(self) -> str:
        """The server this client talks to."""
        return self._http.config.base_url

    async def aclose(self) -> None:
        """Release the connection pool (a no-op for an injected ``http_client``)."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncBenchwright:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncBenchwright(base_url={self.base_url!r})"
