"""The synchronous client, ``Benchwright``."""

from __future__ import annotations

from types import TracebackType

import httpx

from ._config import resolve_config
from ._http import SyncHTTP
from .resources.admin import Admin
from .resources.runs import Runs

__all__ = ["Benchwright"]


class Benchwright:
    """A client for one Benchwright server.

    ``api_key`` and ``base_url`` fall back to ``BW_PAT`` / ``BW_BASE_URL`` and then to
    the credentials file ``benchwright up`` writes. ``http_client`` lets you bring your
    own ``httpx.Client`` (proxies, custom transports, tests); the SDK never closes a
    client it did not create.
    """

    runs: Runs
    admin: Admin

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int = 2,
        http_client: httpx.Client | None = None,
    ) -> None:
        config = resolve_config(api_key, base_url)
        self._http = SyncHTTP(
            config, timeout=timeout, max_retries=max_retries, http_client=http_client
        )
        self.runs = Runs(self._http)
        self.admin = Admin(self._http)

    @property
    def base_url(self) -> str:
        """The server this client talks to."""
        return self._http.config.base_url

    def close(self) -> None:
        """Release the connection pool (a no-op for an injected ``http_client``)."""
        self._http.close()

    def __enter__(self) -> Benchwright:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Benchwright(base_url={self.base_url!r})"
