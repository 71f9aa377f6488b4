"""Calls toward one upstream: adaptive concurrency, then retries that honour ``Retry-After``.

Rate limits and transient failures (429, 5xx, dropped connections) are tried
again with exponential backoff, or after the time the upstream asks for, up to
an attempt ceiling. Each attempt holds a slot of the upstream's
:class:`~benchwright_proxy.limiter.AIMDLimiter` while it is in flight (a
stream holds it until it ends), never while it sleeps before the next attempt;
a 429 halves the slots, calls that get through win them back.
"""

from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)

from benchwright_proxy.limiter import AIMDLimiter, Permit
from benchwright_proxy.providers import ProviderError

T = TypeVar("T")

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_ATTEMPTS = 5
# A server asking for longer than this is treated as down rather than waited on.
MAX_RETRY_AFTER_S = 30.0


class TransientUpstreamError(Exception):
    """An upstream answer worth another attempt."""

    def __init__(self, status: int, detail: str, retry_after: float | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.retry_after = retry_after


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from a ``Retry-After`` header, capped; None when absent or an HTTP date."""
    value = headers.get("retry-after") if headers is not None else None
    if value is None:
        return None
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER_S)
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def failure(
    status: int, detail: str, headers: Mapping[str, str] | None = None
) -> ProviderError | TransientUpstreamError:
    """The exception for an upstream's error answer: transient ones are retried."""
    if status in RETRY_STATUSES:
        return TransientUpstreamError(status, detail, retry_after_s(headers))
    return ProviderError(status, detail)


class Upstream:
    """One upstream (a provider's endpoint): its concurrency limit and its retry policy."""

    def __init__(
        self,
        name: str,
        *,
        max_concurrency: int = 64,
        max_attempts: int = MAX_ATTEMPTS,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 8.0,
    ) -> None:
        self.name = name
        self.limiter = AIMDLimiter(max_concurrency, name=name)
        self.max_attempts = max_attempts
        self._backoff = wait_exponential_jitter(
            multiplier=backoff_initial_s, jitter=backoff_initial_s, max=backoff_max_s
        )

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, TransientUpstreamError) and error.retry_after is not None:
            return error.retry_after
        return float(self._backoff(state))

    async def call(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """``attempt()`` under a slot, retried while it raises ``TransientUpstreamError``."""
        result, permit = await self.open(attempt)
        permit.release()
        return result

    async def open(self, attempt: Callable[[], Awaitable[T]]) -> tuple[T, Permit]:
        """Like :meth:`call`, but the slot stays taken until the caller releases the permit.

        For a stream: the upstream is serving it until its last chunk. Raises
        ``ProviderError`` with the last upstream status once attempts run out.
        """
        try:
            async for state in AsyncRetrying(
                stop=stop_after_attempt(self.max_attempts),
                wait=self._wait,
                retry=retry_if_exception_type(TransientUpstreamError),
                reraise=True,
            ):
                with state:
                    return await self._attempt(attempt)
        except TransientUpstreamError as exc:
            raise ProviderError(exc.status, exc.detail) from None
        raise AssertionError("unreachable: tenacity either returns or raises")

    async def _attempt(self, attempt: Callable[[], Awaitable[T]]) -> tuple[T, Permit]:
        permit = await self.limiter.acquire()
        try:
            result = await attempt()
        except TransientUpstreamError as exc:
            if exc.status == 429:
                self.limiter.rate_limited(permit)
            permit.release()
            raise
        except BaseException:
            permit.release()
            raise
        self.limiter.succeeded()
        return result, permit
