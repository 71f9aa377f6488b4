"""The SDK's exception tree.

Every error the SDK raises derives from :class:`BenchwrightError`, so one ``except``
clause covers configuration, connection and HTTP failures alike. HTTP failures carry the
server's RFC 9457 problem document untouched in ``.problem``.
"""

from __future__ import annotations

from typing import Any

import httpx

__all__ = [
    "APIConnectionError",
    "APIResponseError",
    "APIStatusError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "BenchwrightError",
    "ConfigurationError",
    "ConflictError",
    "InternalServerError",
    "NotFoundError",
    "PaymentRequiredError",
    "PermissionDeniedError",
    "PreconditionFailedError",
    "RateLimitError",
    "UnprocessableEntityError",
    "WaitTimeoutError",
    "error_from_response",
]


class BenchwrightError(Exception):
    """Root of every error raised by the Benchwright SDK."""


class ConfigurationError(BenchwrightError):
    """The client cannot be configured, e.g. no API token could be found."""


class WaitTimeoutError(BenchwrightError, TimeoutError):
    """``runs.wait`` gave up before the run reached a terminal status.

    It is also a builtin :class:`TimeoutError`, so callers may catch either.
    """

    def __init__(self, run_id: str, timeout: float, last_status: str) -> None:
        super().__init__(
            f"run {run_id} still {last_status!r} after {timeout:g}s; it keeps running on the server"
        )
        self.run_id = run_id
        self.timeout = timeout
        self.last_status = last_status


class APIConnectionError(BenchwrightError):
    """The server could not be reached or the connection broke mid-request."""

    def __init__(self, message: str, *, request: httpx.Request | None = None) -> None:
        super().__init__(message)
        self.request = request


class APITimeoutError(APIConnectionError):
    """The request timed out before the server answered."""


class APIResponseError(BenchwrightError):
    """The server answered with a success status but a body the SDK cannot understand."""


class APIStatusError(BenchwrightError):
    """The server answered with a 4xx/5xx status.

    ``problem`` is the RFC 9457 body as sent (synthesised from the status line when the
    server sent something else); ``title``, ``detail``, ``field`` and ``code`` are
    shortcuts into it.
    """

    def __init__(
        self,
        status: int,
        problem: dict[str, Any],
        *,
        response: httpx.Response | None = None,
    ) -> None:
        self.status = status
        self.problem = problem
        self.response = response
        super().__init__(self._format())

    @property
    def status_code(self) -> int:
        """Alias of ``status``, matching httpx's naming."""
        return self.status

    @property
    def title(self) -> str:
        """The problem's short, human-readable summary."""
        return str(self.problem.get("title") or httpx.codes.get_reason_phrase(self.status))

    @property
    def detail(self) -> str | None:
        """The occurrence-specific explanation, when the server gave one."""
        detail = self.problem.get("detail")
        return None if detail is None else str(detail)

    @property
    def field(self) -> str | None:
        """The request field the problem is about, when there is one."""
        field = self.problem.get("field")
        return None if field is None else str(field)

    @property
    def code(self) -> str | None:
        """The machine-readable error code, when the server gave one."""
        code = self.problem.get("code")
        return None if code is None else str(code)

    @property
    def errors(self) -> list[dict[str, Any]]:
        """Every field a validation problem found at fault, ``{field, message}`` each
        (``field`` and ``detail`` describe the first)."""
        found = self.problem.get("errors")
        return [e for e in found if isinstance(e, dict)] if isinstance(found, list) else []

    @property
    def type(self) -> str:
        """The problem type URI (``about:blank`` when absent, per RFC 9457)."""
        return str(self.problem.get("type") or "about:blank")

    def _format(self) -> str:
        message = self.title
        if self.detail and self.detail != self.title:
            message = f"{message}: {self.detail}"
        if self.field:
            message = f"{message} (field: {self.field})"
        return message


class BadRequestError(APIStatusError):
    """400 or 422: the request was malformed or failed validation (see ``.field``).

    ``code`` ``invalid_argument`` names the field at fault, e.g. ``runs.update`` with
    only ``metadata=``, or an unknown ``expand``/``fields`` name on ``runs.get``.
    """


class UnprocessableEntityError(BadRequestError):
    """422: well-formed, but the server cannot act on it (a :class:`BadRequestError`)."""


class AuthenticationError(APIStatusError):
    """401: the token is missing, malformed, expired or revoked, or a login failed."""


class PaymentRequiredError(APIStatusError):
    """402: the account cannot pay for this, e.g. a launch below the balance floor
    (``code`` ``insufficient_balance``): top up with ``bw.billing.topups.create``."""


class PermissionDeniedError(APIStatusError):
    """403: the credential lacks a scope the endpoint needs (``missing_scope``), or the
    call wants a login session rather than a token (``session_required``)."""


class NotFoundError(APIStatusError):
    """404: the resource does not exist or is not visible to this token."""


class ConflictError(APIStatusError):
    """409: the request conflicts with current state. ``code`` says which: e.g.
    ``idempotency_key_reused`` (the key went with a different body), ``subset_frozen``,
    ``run_finished``, ``not_paused``, or a delete refused while public runs refer to it."""


class PreconditionFailedError(APIStatusError):
    """412: an ``If-Match`` did not hold: the thing changed since you read it
    (``runs.update(if_match=run.etag)``). Read it again and decide anew."""


class RateLimitError(APIStatusError):
    """429: too many requests; the SDK already retried before raising this."""


class InternalServerError(APIStatusError):
    """5xx: the server failed; a request safe to repeat was already retried."""


_BY_STATUS: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    402: PaymentRequiredError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    412: PreconditionFailedError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def _problem_of(response: httpx.Response) -> dict[str, Any]:
    # Proxies and crashed workers answer with HTML or plain text; keep a snippet of it
    # as the detail instead of failing to parse, so the user still sees something useful.
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        return body
    text = response.text.strip()
    problem: dict[str, Any] = {
        "type": "about:blank",
        "title": httpx.codes.get_reason_phrase(response.status_code) or "HTTP error",
        "status": response.status_code,
    }
    if text:
        problem["detail"] = text[:500]
    return problem


def error_from_response(response: httpx.Response) -> APIStatusError:
    """Build the typed exception for an error response (whose body must be read)."""
    status = response.status_code
    cls = _BY_STATUS.get(status)
    if cls is None:
        cls = InternalServerError if status >= 500 else APIStatusError
    return cls(status, _problem_of(response), response=response)
