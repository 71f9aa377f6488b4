"""Request building and response parsing shared by the sync and async resources."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from httpx_sse import ServerSentEvent
from pydantic import BaseModel, ValidationError

from .._errors import APIResponseError, WaitTimeoutError
from .._models import AttrDict, Run, RunEvent
from .._retry import RetryPolicy

__all__ = [
    "StreamCursor",
    "WaitClock",
    "fork_body",
    "halt_body",
    "launch_body",
    "new_idempotency_key",
    "parse",
    "parse_dict",
    "parse_sse_event",
    "path_id",
    "types_param",
    "update_body",
]


def parse[M: BaseModel](model: type[M], data: Any) -> M:
    """Validate a response body, reporting a mismatch as :class:`APIResponseError`."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise APIResponseError(
            f"unexpected {model.__name__} from the server: {exc.errors()[0]['msg']}"
            f" at {'.'.join(map(str, exc.errors()[0]['loc']))}"
        ) from exc


def parse_dict(data: Any) -> AttrDict:
    """A plain JSON object with attribute access."""
    if not isinstance(data, dict):
        raise APIResponseError(f"expected a JSON object from the server, got {type(data).__name__}")
    return AttrDict(data)


def path_id(value: str) -> str:
    """Quote an id for use as one path segment, so ``/`` or ``?`` cannot escape it."""
    return quote(value, safe="")


def new_idempotency_key() -> str:
    """A fresh key for a launch whose caller did not supply one."""
    return str(uuid.uuid4())


def launch_body(
    *,
    benchmark: str | None,
    subset: str | None,
    impl: str | None,
    sut: Mapping[str, Any] | None,
    metadata: Mapping[str, Any] | None,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    """The ``POST /v1/runs`` body: every given field, unset ones left out."""
    body: dict[str, Any] = {}
    named = {
        "benchmark": benchmark,
        "subset": subset,
        "impl": impl,
        "sut": dict(sut) if sut is not None else None,
        "metadata": dict(metadata) if metadata is not None else None,
    }
    for key, value in {**named, **extra}.items():
        if value is not None:
            body[key] = value
    return body


def halt_body(reason: str | None, pause: bool) -> dict[str, Any] | None:
    body: dict[str, Any] = {}
    if reason:
        body["reason"] = reason
    if pause:
        body["pause"] = True
    return body or None


def fork_body(
    description: str,
    from_phase: str,
    sut: Mapping[str, Any] | None,
    driver: str | None,
    limits: Mapping[str, Any] | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"description": description, "from_phase": from_phase}
    for key, value in (("sut", sut), ("driver", driver), ("limits", limits)):
        if value is not None:
            body[key] = dict(value) if isinstance(value, Mapping) else value
    return body


def update_body(
    visibility: str | None,
    review_resolution: str | None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``PATCH /v1/runs/{id}`` body; refuses an empty patch before sending it.

    ``metadata`` alone is sent as it is: the server refuses it (``invalid_argument``),
    since metadata rides along with a visibility change or a review answer.
    """
    body: dict[str, Any] = {
        "visibility": visibility,
        "review_resolution": review_resolution,
        "metadata": dict(metadata) if metadata is not None else None,
    }
    body = {k: v for k, v in body.items() if v is not None}
    if not body:
        raise ValueError("runs.update needs visibility=, review_resolution= or metadata=")
    return body


def if_match_header(if_match: str | None) -> dict[str, str] | None:
    return {"If-Match": if_match} if if_match else None


# ``runs.list`` filters that are time ranges: ``{"gte": ..., "lt": ...}``.
RANGE_FILTERS = ("started_at", "finished_at")


def list_params(
    filters: Mapping[str, Any] | None,
    *,
    status: str | None,
    sort: str | None,
    limit: int,
    page_token: str | None,
) -> dict[str, Any]:
    """Query parameters for ``GET /v1/runs`` from the guide's ``filters`` dict."""
    found = dict(filters or {})
    params: dict[str, Any] = {"limit": limit, "page_token": page_token, "sort": sort}
    params["status"] = found.pop("status", status)
    for name in ("benchmark", "visibility"):
        params[name] = found.pop(name, None)
    for name in RANGE_FILTERS:
        bounds = found.pop(name, None) or {}
        for op in ("gte", "lt"):
            value: Any = bounds.get(op)
            params[f"{name}.{op}"] = value.isoformat() if hasattr(value, "isoformat") else value
    if found:
        raise ValueError(f"runs.list cannot filter on {sorted(found)}")
    return params


def types_param(types: str | Iterable[str] | None) -> str | None:
    """Event type filters travel as one comma-separated parameter."""
    if types is None or isinstance(types, str):
        return types
    return ",".join(types)


def parse_sse_event(run_id: str, sse: ServerSentEvent) -> RunEvent | None:
    """Turn one SSE message into a :class:`RunEvent` (``None`` for keep-alives)."""
    if not sse.data.strip():
        return None
    try:
        payload = json.loads(sse.data)
    except ValueError as exc:
        raise APIResponseError(
            f"stream sent an event that is not JSON: {sse.data[:200]!r}"
        ) from exc
    if isinstance(payload, dict) and "seq" in payload and "type" in payload:
        return parse(RunEvent, payload)
    # Tolerate a server that sends only the event's data, with type and seq in the
    # SSE envelope; the envelope is authoritative either way.
    if not sse.event or not sse.id:
        return None
    data = payload if isinstance(payload, dict) else {"value": payload}
    return parse(RunEvent, {"run_id": run_id, "seq": sse.id, "type": sse.event, "data": data})


class StreamCursor:
    """Where a run's event stream got to, so a dropped connection resumes exactly.

    The server may ignore ``Last-Event-ID`` and replay from the start; ``seq`` is
    monotonic, so dropping anything at or below the last yielded seq is exact.
    """

    def __init__(self, policy: RetryPolicy) -> None:
        self._policy = policy
        self.last_seq = -1
        self.failures = 0

    def resume_headers(self) -> dict[str, str] | None:
        """Headers for (re)connecting: ``Last-Event-ID`` once something was seen."""
        return {"Last-Event-ID": str(self.last_seq)} if self.last_seq >= 0 else None

    def accept(self, event: RunEvent | None) -> bool:
        """Whether ``event`` is new; records it as the resume point if so."""
        if event is None or event.seq <= self.last_seq:
            return False
        self.last_seq = event.seq
        self.failures = 0
        return True

    def next_delay(self) -> float | None:
        """The wait before reconnecting, or ``None`` when the retry budget is spent."""
        if self.failures >= self._policy.max_retries:
            return None
        delay = self._policy.delay(self.failures)
        self.failures += 1
        return delay


class WaitClock:
    """Paces ``runs.wait``: how long to sleep before the next poll, and when to give up."""

    def __init__(self, run_id: str, timeout: float | None, poll_interval: float) -> None:
        self._run_id = run_id
        self._timeout = timeout
        self._poll_interval = poll_interval
        self._deadline = None if timeout is None else time.monotonic() + timeout

    def next_delay(self, run: Run) -> float:
        """Seconds until the next poll of a still-running ``run``.

        Raises :class:`WaitTimeoutError` once the deadline has passed.
        """
        if self._deadline is None or self._timeout is None:
            return self._poll_interval
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise WaitTimeoutError(self._run_id, self._timeout, run.status)
        return min(self._poll_interval, remaining)
