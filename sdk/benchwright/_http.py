"""The synchronous transport: auth, retries, error mapping and SSE.

Requests are sent with absolute URLs and per-request headers, so an injected
``httpx.Client`` needs no Benchwright-specific configuration (tests pass one built on
``httpx.MockTransport``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from httpx_sse import EventSource, ServerSentEvent

from ._config import ClientConfig
from ._errors import APIConnectionError, APIResponseError, APITimeoutError, error_from_response
from ._retry import RetryPolicy, is_retry_safe, never_sent
from ._version import __version__

__all__ = [
    "DEFAULT_TIMEOUT",
    "STREAM_TIMEOUT",
    "BaseHTTP",
    "Call",
    "SyncHTTP",
    "base_headers",
    "clean_params",
    "connection_error",
    "decode_json",
]

DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=10.0)
# The gateway pings idle streams, so a silent minute means the connection is dead.
STREAM_TIMEOUT = httpx.Timeout(60.0, connect=10.0, read=120.0)

Params = Mapping[str, str | int | float | bool | None]


def _identity(data: Any) -> Any:
    return data


@dataclass(frozen=True)
class Call[T]:
    """One API request and how to read its answer, built once for both clients.

    The resources build a ``Call`` from their arguments; ``SyncHTTP.send`` and
    ``AsyncHTTP.send`` only send it, so the sync and async halves of a resource
    cannot drift apart. ``parse`` turns the decoded body into the method's result.
    """

    method: str
    path: str
    parse: Callable[[Any], T] = _identity
    params: Params | None = None
    json: Any = None
    headers: Mapping[str, str] | None = None
    retry_safe: bool | None = None
    raw: bool = False
    # Seconds for this request alone (each attempt), instead of the client's timeout.
    timeout: float | None = None

    def options(self) -> dict[str, Any]:
        """The keyword arguments of ``request`` this call sets."""
        return {
            "params": self.params,
            "json": self.json,
            "headers": self.headers,
            "retry_safe": self.retry_safe,
            "raw": self.raw,
            "timeout": self.timeout,
        }


def base_headers(config: ClientConfig) -> dict[str, str]:
    """Headers every request carries (no ``Authorization`` before a login has a token)."""
    headers = {
        "User-Agent": f"benchwright-python/{__version__}",
        "Accept": "application/json",
    }
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    return headers


def connection_error(exc: httpx.TransportError, url: str) -> APIConnectionError:
    """Translate an httpx transport failure into the SDK's exception."""
    if isinstance(exc, httpx.TimeoutException):
        return APITimeoutError(f"request to {url} timed out ({exc})", request=_request_of(exc))
    return APIConnectionError(f"could not reach {url}: {exc}", request=_request_of(exc))


def _request_of(exc: httpx.TransportError) -> httpx.Request | None:
    try:
        return exc.request
    except RuntimeError:  # httpx raises when the error was built without a request
        return None


def decode_json(response: httpx.Response) -> Any:
    """A success response's JSON body (``None`` when empty)."""
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError as exc:
        raise APIResponseError(
            f"{response.request.method} {response.request.url} answered {response.status_code}"
            f" with a body that is not JSON: {response.text[:200]!r}"
        ) from exc


def clean_params(params: Params | None) -> dict[str, str | int | float]:
    """Drop unset query parameters and spell booleans the way the API expects."""
    out: dict[str, str | int | float] = {}
    for key, value in (params or {}).items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else value
    return out


class BaseHTTP:
    """What the sync and async transports share: config, retry policy, URLs, headers."""

    def __init__(
        self, config: ClientConfig, *, timeout: float | httpx.Timeout | None, max_retries: int
    ) -> None:
        self.config = config
        self.policy = RetryPolicy(max_retries=max_retries)
        self.timeout = DEFAULT_TIMEOUT if timeout is None else httpx.Timeout(timeout)

    def url(self, path: str) -> str:
        """The absolute URL of an API path."""
        return f"{self.config.base_url}{path}"

    def headers(self, extra: Mapping[str, str] | None = None) -> httpx.Headers:
        """Every request's headers, overlaid with ``extra``."""
        merged = httpx.Headers(base_headers(self.config))
        merged.update(extra or {})
        return merged

    def sse_headers(self, extra: Mapping[str, str] | None = None) -> httpx.Headers:
        """Headers for opening an event stream."""
        merged = self.headers({"Accept": "text/event-stream", "Cache-Control": "no-store"})
        merged.update(extra or {})
        return merged

    def should_retry(self, attempt: int, response: httpx.Response, safe: bool) -> bool:
        """Whether a failed response warrants another attempt."""
        # 429 means the request was turned away unprocessed, so it is safe to repeat.
        return (
            attempt < self.policy.max_retries
            and self.policy.retryable_status(response.status_code)
            and (safe or response.status_code == 429)
        )

    def should_retry_transport(self, attempt: int, exc: httpx.TransportError, safe: bool) -> bool:
        """Whether a connection failure warrants another attempt."""
        return attempt < self.policy.max_retries and (safe or never_sent(exc))


class SyncHTTP(BaseHTTP):
    """Sends requests to one Benchwright server with retries and typed errors."""

    def __init__(
        self,
        config: ClientConfig,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int = 2,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(config, timeout=timeout, max_retries=max_retries)
        self._client = http_client or httpx.Client(timeout=self.timeout)
        self._owns_client = http_client is None
        # An attribute rather than a direct call so tests can skip the waiting.
        self.sleep: Callable[[float], None] = time.sleep

    def close(self) -> None:
        """Close the underlying connection pool if this object created it."""
        if self._owns_client:
            self._client.close()

    def request(
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
        """Send a request and return its decoded JSON body (``None`` when empty), or
        with ``raw`` the body's bytes (a CSV export, an HTML report).

        Connection failures, 429 and 5xx are retried with backoff when repeating the
        request is harmless: idempotent methods, and POSTs carrying an
        ``Idempotency-Key`` (the same key goes out on every attempt).
        """
        merged = self.headers(headers)
        safe = is_retry_safe(method, merged) if retry_safe is None else retry_safe
        url = self.url(path)
        query = clean_params(params)
        attempt = 0
        while True:
            try:
                response = self._client.request(
                    method,
                    url,
                    params=query,
                    json=json,
                    headers=merged,
                    timeout=self.timeout if timeout is None else timeout,
                )
            except httpx.TransportError as exc:
                if self.should_retry_transport(attempt, exc, safe):
                    self.sleep(self.policy.delay(attempt))
                    attempt += 1
                    continue
                raise connection_error(exc, url) from exc
            if response.is_success:
                return response.content if raw else decode_json(response)
            if self.should_retry(attempt, response, safe):
                self.sleep(self.policy.delay(attempt, response))
                attempt += 1
                continue
            raise error_from_response(response)

    def send[T](self, call: Call[T]) -> T:
        """Send a prepared :class:`Call` and parse its answer."""
        return call.parse(self.request(call.method, call.path, **call.options()))

    def sse(
        self,
        path: str,
        *,
        params: Params | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Iterator[ServerSentEvent]:
        """Open a Server-Sent Events stream and yield its events until it ends.

        429 and 5xx answers are retried here; a connection that fails, before or during
        the stream, raises :class:`APIConnectionError` for the caller to resume from.
        """
        merged = self.sse_headers(headers)
        url = self.url(path)
        query = clean_params(params)
        attempt = 0
        while True:
            try:
                with self._client.stream(
                    "GET", url, params=query, headers=merged, timeout=STREAM_TIMEOUT
                ) as response:
                    if response.is_success:
                        yield from EventSource(response).iter_sse()
                        return
                    response.read()
                    if self.should_retry(attempt, response, safe=True):
                        delay = self.policy.delay(attempt, response)
                    else:
                        raise error_from_response(response)
            except httpx.TransportError as exc:
                raise connection_error(exc, url) from exc
            self.sleep(delay)
            attempt += 1
