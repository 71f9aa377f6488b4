"""The synchronous client, ``Benchwright``."""

from __future__ import annotations

from types import TracebackType

import httpx

from ._config import resolve_config
from ._http import SyncHTTP
from ._models import AttrDict
from .registry import Benchmarks, Impls, Registry
from .resources._common import AccountCalls
from .resources.admin import Admin
from .resources.billing import Billing
from .resources.runs import Runs
from .resources.secrets import HostPolicy, Secrets
from .resources.settings import Settings
from .resources.tokens import Tokens
from .resources.webhooks import Webhooks

__all__ = ["Benchwright"]


class Benchwright:
    """A client for one Benchwright server.

    ``api_key`` and ``base_url`` fall back to ``BW_PAT`` / ``BW_BASE_URL`` and then to
    the credentials file ``benchwright up`` writes. ``http_client`` lets you bring your
    own ``httpx.Client`` (proxies, custom transports, tests); the SDK never closes a
    client it did not create. Use it as ``with Benchwright() as bw:`` to close the pool.

    Resources: ``runs`` (launch, read, stream, fork, halt...), ``registry`` (catalog
    reads), ``benchmarks`` and ``impls`` (authoring), ``secrets``, ``host_policy``,
    ``billing``, ``settings``, ``webhooks``, ``tokens`` (from a :meth:`login` session)
    and ``admin``; :meth:`me` says who the credential is.

    GETs, PATCHes and requests carrying an idempotency key are retried on connection
    failures, 429 and 5xx with exponential backoff (honouring ``Retry-After``) up to
    ``max_retries`` times, each retry with the same key. Error answers raise typed
    exceptions (:class:`~benchwright.NotFoundError`,
    :class:`~benchwright.ConflictError`...) carrying the problem document.
    """

    runs: Runs
    admin: Admin
    tokens: Tokens
    secrets: Secrets
    host_policy: HostPolicy
    billing: Billing
    settings: Settings
    webhooks: Webhooks
    registry: Registry
    benchmarks: Benchmarks
    impls: Impls

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
        self.tokens = Tokens(self._http)
        self.secrets = Secrets(self._http)
        self.host_policy = HostPolicy(self._http)
        self.billing = Billing(self._http)
        self.settings = Settings(self._http)
        self.webhooks = Webhooks(self._http)
        # The guide's authoring shortcuts are the registry's own resources.
        self.registry = Registry(self._http)
        self.benchmarks = self.registry.benchmarks
        self.impls = self.registry.impls

    @classmethod
    def login(
        cls,
        username: str,
        password: str,
        base_url: str | None = None,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int = 2,
        http_client: httpx.Client | None = None,
    ) -> Benchwright:
        """A client holding a fresh session for ``username``: the one credential that can
        mint tokens (``bw.tokens.create``).

        ``base_url`` falls back as in the constructor. Wrong credentials raise
        :class:`~benchwright.AuthenticationError`.
        """
        config = AccountCalls.login_config(base_url)
        anonymous = SyncHTTP(
            config, timeout=timeout, max_retries=max_retries, http_client=http_client
        )
        try:
            token = anonymous.send(AccountCalls.session(username, password))
        finally:
            anonymous.close()
        return cls(
            token,
            config.base_url,
            timeout=timeout,
            max_retries=max_retries,
            http_client=http_client,
        )

    def me(self) -> AttrDict:
        """Who this client's credential speaks for: ``account``, ``kind`` (``session``
        or ``pat``), its ``scopes`` and the ``known_scopes``."""
        return self._http.send(AccountCalls.me())

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
