"""The requests of ``bw.runs``, and the client-side pacing of ``stream`` and ``wait``."""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from httpx_sse import ServerSentEvent
from pydantic import BaseModel

from ..._errors import APIResponseError, WaitTimeoutError
from ..._http import Call
from ..._models import (
    Agreement,
    Artifact,
    ArtifactDetail,
    ArtifactList,
    AttrDict,
    BlockedHost,
    DeletedRun,
    EventList,
    Fingerprint,
    Label,
    LabelList,
    Narration,
    Run,
    RunComparison,
    RunEvent,
    RunList,
    TaskPayload,
)
from ..._retry import RetryPolicy
from .base import (
    as_bytes,
    as_text,
    blocked_host_rows,
    csv_param,
    key_header,
    parse,
    parse_dict,
    parser,
    path_id,
    present,
)

__all__ = [
    "RANGE_FILTERS",
    "RUNS",
    "RunCalls",
    "StreamCursor",
    "WaitClock",
    "list_params",
    "parse_sse_event",
    "run_path",
]


RUNS = "/v1/runs"
# ``runs.list`` filters that are time ranges: ``{"gte": ..., "lt": ...}``.
RANGE_FILTERS = ("started_at", "finished_at")
# What ``runs.launch`` takes that is not a body field of its own.
_NOT_BODY = frozenset({"self", "extra", "idempotency_key", "timeout", "__class__"})


def run_path(run_id: str, *rest: str) -> str:
    """``/v1/runs/{run_id}`` (quoted), then ``rest`` as further path segments."""
    return "/".join((f"{RUNS}/{path_id(run_id)}", *rest))


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


def _launch_body(args: Mapping[str, Any]) -> dict[str, Any]:
    """A launch body from ``runs.launch``'s (or ``runs.estimate``'s) ``locals()``."""
    named = {k: v for k, v in args.items() if k not in _NOT_BODY}
    if named.get("hints") is not None and not isinstance(named["hints"], str):
        named["hints"] = list(named["hints"])
    return present(**named, **(args.get("extra") or {}))


class RunCalls:
    """The requests of ``bw.runs``, for :class:`Runs` and :class:`AsyncRuns` alike."""

    @staticmethod
    def launch(args: Mapping[str, Any]) -> Call[Run]:
        """``POST /v1/runs`` from ``runs.launch``'s arguments (its ``locals()``).

        Every argument that is set goes into the body as given (``**extra`` ones
        too) and the server validates it. The idempotency key goes in the header;
        without one a fresh key is made, so the SDK's own retries never launch (and
        bill) the same run twice.
        """
        body = _launch_body(args)
        headers = key_header(args.get("idempotency_key"), fresh=True)
        timeout = args.get("timeout")
        return Call("POST", RUNS, parser(Run), json=body, headers=headers, timeout=timeout)

    @staticmethod
    def estimate(args: Mapping[str, Any]) -> Call[AttrDict]:
        """``POST /v1/runs/estimate`` from ``runs.estimate``'s arguments: a launch body."""
        body = _launch_body(args)
        return Call("POST", f"{RUNS}/estimate", parse_dict, json=body, timeout=args.get("timeout"))

    @staticmethod
    def get(
        run_id: str, expand: str | Iterable[str] | None, fields: str | Iterable[str] | None
    ) -> Call[Run]:
        """``GET /v1/runs/{id}``, with expansions and a field selection when asked."""
        params = {"expand": csv_param(expand), "fields": csv_param(fields)}
        return Call("GET", run_path(run_id), parser(Run), params=params)

    @staticmethod
    def halt(run_id: str, reason: str | None, pause: bool) -> Call[Run]:
        body = present(reason=reason or None, pause=True if pause else None) or None
        return Call("POST", run_path(run_id, "halt"), parser(Run), json=body)

    @staticmethod
    def resume(run_id: str) -> Call[Run]:
        return Call("POST", run_path(run_id, "resume"), parser(Run))

    @staticmethod
    def fork(
        run_id: str,
        description: str,
        from_phase: str,
        sut: Mapping[str, Any] | None,
        driver: str | None,
        limits: Mapping[str, Any] | None,
        idempotency_key: str | None,
    ) -> Call[Run]:
        body = {
            "description": description,
            "from_phase": from_phase,
            **present(sut=sut, driver=driver, limits=limits),
        }
        headers = key_header(idempotency_key, fresh=True)
        return Call("POST", run_path(run_id, "fork"), parser(Run), json=body, headers=headers)

    @staticmethod
    def rescore(
        run_id: str,
        impl: str,
        judge: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
        limits: Mapping[str, Any] | None,
        idempotency_key: str | None,
    ) -> Call[Run]:
        body = {"impl": impl, **present(judge=judge, limits=limits)}
        headers = key_header(idempotency_key, fresh=True)
        return Call("POST", run_path(run_id, "rescore"), parser(Run), json=body, headers=headers)

    @staticmethod
    def update(
        run_id: str,
        visibility: str | None,
        review_resolution: str | None,
        metadata: Mapping[str, Any] | None,
        if_match: str | None,
    ) -> Call[Run]:
        """``PATCH /v1/runs/{id}``; refuses an empty patch before sending it.

        ``metadata`` alone is sent as it is: the server refuses it (``invalid_argument``),
        since metadata rides along with a visibility change or a review answer. A
        patch is idempotent, so it is retried like a GET.
        """
        body = present(
            visibility=visibility, review_resolution=review_resolution, metadata=metadata
        )
        if not body:
            raise ValueError("runs.update needs visibility=, review_resolution= or metadata=")
        headers = {"If-Match": if_match} if if_match else None
        return Call(
            "PATCH", run_path(run_id), parser(Run), json=body, headers=headers, retry_safe=True
        )

    @staticmethod
    def kill(run_id: str) -> Call[DeletedRun]:
        return Call("DELETE", run_path(run_id), parser(DeletedRun))

    @staticmethod
    def list(
        filters: Mapping[str, Any] | None,
        status: str | None,
        sort: str | None,
        limit: int,
        page_token: str | None,
    ) -> Call[RunList]:
        params = list_params(filters, status=status, sort=sort, limit=limit, page_token=page_token)
        return Call("GET", RUNS, parser(RunList), params=params)

    @staticmethod
    def fingerprint(run_id: str) -> Call[Fingerprint]:
        return Call("GET", run_path(run_id, "fingerprint"), parser(Fingerprint))

    @staticmethod
    def export(run_id: str, format: str) -> Call[bytes]:
        params = {"format": format}
        return Call("GET", run_path(run_id, "export"), as_bytes, params=params, raw=True)

    @staticmethod
    def compare(run_id: str, other: str, alpha: float) -> Call[RunComparison]:
        params: dict[str, str | float] = {"with": other, "alpha": alpha}
        return Call("GET", run_path(run_id, "compare"), parser(RunComparison), params=params)

    @staticmethod
    def label(
        run_id: str, task: int | str, grade: str, note: str | None, trial: int | None
    ) -> Call[Label]:
        # A label sent twice is the same person's same grade twice: the later replaces
        # the earlier, so a retry after a lost answer changes nothing.
        body = {"task": task, "grade": grade, **present(note=note, trial=trial)}
        return Call("POST", run_path(run_id, "labels"), parser(Label), json=body, retry_safe=True)

    @staticmethod
    def labels(run_id: str) -> Call[LabelList]:
        return Call("GET", run_path(run_id, "labels"), parser(LabelList))

    @staticmethod
    def agreement(run_id: str) -> Call[Agreement]:
        return Call("GET", run_path(run_id, "agreement"), parser(Agreement))

    @staticmethod
    def blocked_hosts(run_id: str) -> Call[builtins.list[BlockedHost]]:
        return Call("GET", run_path(run_id, "blocked-hosts"), blocked_host_rows)

    @staticmethod
    def artifacts(
        run_id: str, type: str | None, include_versions: bool
    ) -> Call[builtins.list[Artifact]]:
        params = {"type": type, "include_versions": include_versions or None}
        return Call("GET", run_path(run_id, "artifacts"), _artifact_rows, params=params)

    @staticmethod
    def artifact(run_id: str, art_id: str) -> Call[ArtifactDetail]:
        path = run_path(run_id, "artifacts", path_id(art_id))
        return Call("GET", path, parser(ArtifactDetail))

    @staticmethod
    def artifact_content(run_id: str, art_id: str) -> Call[bytes]:
        path = run_path(run_id, "artifacts", path_id(art_id), "content")
        return Call("GET", path, as_bytes, raw=True)

    @staticmethod
    def tool_output(run_id: str, seq: int) -> Call[str]:
        return Call("GET", run_path(run_id, "tool-outputs", str(seq)), as_text, raw=True)

    @staticmethod
    def report(run_id: str) -> Call[str]:
        return Call("GET", run_path(run_id, "report"), as_text, raw=True)

    @staticmethod
    def narrate(run_id: str, slice: str) -> Call[Narration]:
        params = {"slice": slice}
        return Call("GET", run_path(run_id, "narrate"), parser(Narration), params=params)

    @staticmethod
    def events(
        run_id: str, after_seq: int | None, types: str | Iterable[str] | None, limit: int
    ) -> Call[EventList]:
        params = {"after_seq": after_seq, "types": csv_param(types), "limit": limit}
        return Call("GET", run_path(run_id, "events"), parser(EventList), params=params)

    @staticmethod
    def tasks[M: BaseModel](
        run_id: str,
        page: type[M],
        *,
        passed: bool | None,
        version: int | None,
        limit: int,
        page_token: str | None,
        sort: str | None,
    ) -> Call[M]:
        """One page of task rows, parsed as ``page`` (the sync or the async task list)."""
        params = {
            "passed": passed,
            "version": version,
            "limit": limit,
            "page_token": page_token,
            "sort": sort,
        }
        return Call("GET", run_path(run_id, "tasks"), parser(page), params=params)

    @staticmethod
    def payload(run_id: str, row_id: str) -> Call[TaskPayload]:
        path = run_path(run_id, "tasks", path_id(row_id), "payload")
        return Call("GET", path, parser(TaskPayload))


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
            raise WaitTimeoutError(self._run_id, self._timeout, run.status or "unknown")
        return min(self._poll_interval, remaining)


def _artifact_rows(data: Any) -> builtins.list[Artifact]:
    """The rows of ``GET .../artifacts``: a list answer of artifact descriptions."""
    return parse(ArtifactList, data).data
