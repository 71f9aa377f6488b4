"""One refusal type for every service, and its one way to and from a problem document.

A domain rule that turns a request down raises ``Refused`` with what the caller needs
to put it right: the HTTP status, a short title, the detail, the field at fault and
a machine-readable code. The way it travels::

    handler raises Refused            (or a subclass: ProviderError, PhaseError, ...)
      -> bus.ANSWER_REFUSALS           answers the request with ProblemReply(problem=...)
      -> ask(..., ReplyType)           any reply type with a ``problem`` field reads it
      -> Refused.from_problem(reply.problem), raised where the request came in
      -> the gateway's one exception handler: ``application/problem+json`` (RFC 9457)

Handlers never catch a refusal to answer it; nothing else converts errors.

The refusals a service names for itself are subclasses, so that its own code can
tell them apart while the bus and the gateway see one type:

    Refused
     +-- ProviderError        (proxy) the model provider failed, its status and cause kept
     +-- PhaseError           (orchestrator) a run's phase could not finish
     |    +-- InfraError       the platform failed, not the run: a retry may succeed
     +-- CommandRefused       (sandbox-manager) a sandbox command that cannot be carried out
     +-- Refusal              (gateway guard) refused before the app sees the request
"""

from typing import Any

from pydantic import BaseModel

from benchwright_shared.contracts.base import Problem

# The title a refusal gets when its raiser names none.
TITLES = {
    400: "invalid request",
    401: "unauthorized",
    402: "payment required",
    403: "forbidden",
    404: "not found",
    405: "method not allowed",
    409: "conflict",
    412: "precondition failed",
    413: "request too large",
    422: "unprocessable request",
    424: "failed dependency",
    429: "too many requests",
    500: "internal error",
    501: "not implemented",
    502: "bad gateway",
    503: "service unavailable",
    504: "gateway timeout",
}


class Refused(Exception):
    """A request turned down: everything its problem document says.

    ``field`` names what the caller got wrong (a body field's dotted path, a query
    parameter); ``code`` is stable for programs (``subset_frozen``,
    ``idempotency_key_reused``); ``headers`` go on the HTTP answer (``Retry-After``,
    ``Allow``).
    """

    def __init__(
        self,
        status: int,
        title: str | None = None,
        detail: str | None = None,
        *,
        field: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.status = status
        self.title = title or TITLES.get(status, "refused")
        self.detail = detail
        self.field = field
        self.code = code
        self.headers = headers
        super().__init__(detail or self.title)

    def problem(self) -> Problem:
        """This refusal as a bus reply carries it (``headers`` stay with HTTP)."""
        extra: dict[str, Any] | None = {"code": self.code} if self.code else None
        return Problem(
            status=self.status, title=self.title, detail=self.detail, field=self.field, extra=extra
        )

    @classmethod
    def from_problem(cls, problem: Problem) -> "Refused":
        """A service's answered problem, to raise where the request came in."""
        code = (problem.extra or {}).get("code")
        return cls(
            problem.status,
            problem.title,
            problem.detail,
            field=problem.field,
            code=str(code) if code else None,
        )

    def __repr__(self) -> str:
        return f"Refused({self.status}, {self.title!r}, {self.detail!r}, field={self.field!r})"


class ProblemReply(BaseModel):
    """The answer to a request whose handler refused: nothing but the problem.

    Every reply contract has ``problem: Problem | None`` and defaults for the rest
    (``tests/contracts/test_refusals.py`` holds them to it), so whichever reply type
    the asker expects reads this answer as that type with its ``problem`` set.
    """

    problem: Problem
