"""When to retry a request and how long to wait first.

Kept free of I/O so the sync and async transports share one policy.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

__all__ = ["RetryPolicy", "is_retry_safe", "never_sent"]

_IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


def is_retry_safe(method: str, headers: httpx.Headers) -> bool:
    """Whether repeating the request cannot have a second effect on the server."""
    return method.upper() in _IDEMPOTENT_METHODS or "idempotency-key" in headers


def never_sent(exc: httpx.TransportError) -> bool:
    """Whether the request certainly never reached the server (so any retry is safe)."""
    return isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter, deferring to the server's ``Retry-After``."""

    max_retries: int = 2
    initial_delay: float = 0.5
    max_delay: float = 8.0
    # A server asking for minutes is better surfaced as an error than waited out silently.
    max_retry_after: float = 60.0

    def retryable_status(self, status: int) -> bool:
        """429 and 5xx are transient; 501 means the endpoint will never exist."""
        return status == 429 or (status >= 500 and status != 501)

    def delay(self, attempt: int, response: httpx.Response | None = None) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (``attempt`` from 0)."""
        if response is not None:
            retry_after = parse_retry_after(response.headers.get("retry-after"))
            if retry_after is not None:
                return min(retry_after, self.max_retry_after)
        backoff = min(self.max_delay, self.initial_delay * 2.0**attempt)
        # Jitter keeps many clients that failed together from retrying in lockstep.
        return backoff * random.uniform(0.5, 1.0)


def parse_retry_after(value: str | None) -> float | None:
    """Parse a ``Retry-After`` header (delta-seconds or HTTP-date) into seconds."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
