"""The asynchronous client, ``AsyncBenchwright``."""

from __future__ import annotations

from types import TracebackType

import httpx

from ._async_http import AsyncHTTP
from ._config import resolve_config
from ._models import AttrDict
from .registry import AsyncBenchmarks, AsyncImpls, AsyncRegistry
from .resources._common import AccountCalls
from .resources.async_admin import AsyncAdmin
from .resources.async_runs import AsyncRuns
from .resources.async_secrets import AsyncHostPolicy, AsyncSecrets
from .resources.async_tokens import AsyncTokens
from .resources.billing import AsyncBilling
from .resources.settings import AsyncSettings
from .resources.webhooks import AsyncWebhooks

__all__ = ["AsyncBenchwright"]


class AsyncBenchwright:
    """The asyncio flavour of :class:`~benchwright.Benchwright`, configured the same way
    and with the same resources, methods and retries; every call is awaited.

    Use it as ``async with AsyncBenchwright() as bw:`` so the pool is closed.
    """

    runs: AsyncRuns
    admin: AsyncAdmin
    tokens: AsyncTokens
    secrets: AsyncSecrets
    host_policy: AsyncHostPolicy
    billing: AsyncBilling
    settings: AsyncSettings
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
        self.tokens = AsyncTokens(self._http)
        self.secrets = AsyncSecrets(self._http)
        self.host_policy = AsyncHostPolicy(self._http)
        self.billing = AsyncBilling(self._http)
        self.settings = AsyncSettings(self._http)
        self.webhooks = AsyncWebhooks(self._http)
        self.registry = AsyncRegistry(self._http)
        self.benchmarks = self.registry.benchmarks
        self.impls = self.registry.impls

    @classmethod
    async def login(
        cls,
        username: str,
        password: str,
        base_url: str | None = None,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int = 2,
        http_client: httpx.AsyncClient | None = None,
    ) -> AsyncBenchwright:
        """A client holding a fresh session for ``username``, the one credential that can
        mint tokens: ``bw = await AsyncBenchwright.login(...)``; see ``Benchwright.login``."""
        config = AccountCalls.login_config(base_url)
        anonymous = AsyncHTTP(
            config, timeout=timeout, max_retries=max_retries, http_client=http_client
        )
        try:
            token = await anonymous.send(AccountCalls.session(username, password))
        finally:
            await anonymous.aclose()
        return cls(
            token,
            config.base_url,
            timeout=timeout,
            max_retries=max_retries,
            http_client=http_client,
        )

    async def me(self) -> AttrDict:
        """Who this client's credential speaks for: ``account``, ``kind``, ``scopes``."""
        return await self._http.send(AccountCalls.me())

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
