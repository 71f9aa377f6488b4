"""A scripted stand-in for the gateway, served through ``httpx.MockTransport``."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any

import httpx

Responder = httpx.Response | Callable[[httpx.Request], httpx.Response]

RUN_ID = "3f2b9c1e-0000-4000-8000-000000000001"
# The task summary the fake gateway reports.
SUMMARY = {
    "total": 3,
    "passed": 1,
    "failed": 1,
    "errored": 1,
    "pass_rate": 1 / 3,
    "duration_ms_p50": 700,
    "duration_ms_p95": 1800,
}
TOKEN = "bw_live_pat_test"


def run_body(status: str = "running", **overrides: Any) -> dict[str, Any]:
    """A run object shaped like the gateway's."""
    body: dict[str, Any] = {
        "id": RUN_ID,
        "object": "run",
        "status": status,
        "display_status": status,
        "halted": False,
        "halt_reason": None,
        "model": {"model": "qwen/qwen3-32b", "provider": "openrouter"},
        "benchmark": {"id": "bm_gsm8k", "name": "GSM8K"},
        "subset": {"id": "sub_test", "slug": "test"},
        "impl_id": "imp_1",
        "phase": "materialize" if status == "running" else "report",
        "created_at": "2026-11-29T10:00:00Z",
        "finished_at": None if status == "running" else "2026-11-29T10:01:00Z",
        "cost": {
            "model": {"amount_cents": 12, "currency": "USD"},
            "billed": {"amount_cents": 15, "currency": "USD"},
        },
        "summary": None,
        "links": {
            "self": f"/v1/runs/{RUN_ID}",
            "dashboard": f"http://127.0.0.1:8765/runs/{RUN_ID}",
        },
        "backend": "local",
    }
    body.update(overrides)
    return body


def problem(status: int, title: str, detail: str, **extra: Any) -> httpx.Response:
    """An RFC 9457 error response."""
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
    return httpx.Response(
        status, content=json.dumps(body), headers={"content-type": "application/problem+json"}
    )


def event(seq: int, type_: str, **data: Any) -> dict[str, Any]:
    """A run event envelope."""
    return {"run_id": RUN_ID, "seq": seq, "type": type_, "ts": "2026-11-29T10:00:00Z", "data": data}


def sse_frames(events: Iterable[dict[str, Any]]) -> bytes:
    """Events framed the way sse-starlette sends them, with a keep-alive comment first."""
    out = [": ping\n\n"]
    for evt in events:
        out.append(f"event: {evt['type']}\nid: {evt['seq']}\ndata: {json.dumps(evt)}\n\n")
    return "".join(out).encode()


def sse_response(events: Iterable[dict[str, Any]]) -> httpx.Response:
    """A complete ``text/event-stream`` response."""
    return httpx.Response(
        200, content=sse_frames(events), headers={"content-type": "text/event-stream"}
    )


class BrokenStream(httpx.SyncByteStream):
    """Sends some bytes, then drops the connection."""

    def __init__(self, prefix: bytes) -> None:
        self._prefix = prefix

    def __iter__(self) -> Iterator[bytes]:
        yield self._prefix
        raise httpx.ReadError("connection reset by peer")


class AsyncBrokenStream(httpx.AsyncByteStream):
    """The async flavour of :class:`BrokenStream`."""

    def __init__(self, prefix: bytes) -> None:
        self._prefix = prefix

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._prefix
        raise httpx.ReadError("connection reset by peer")


def run_events(total: int = 3, status: str = "ok") -> list[dict[str, Any]]:
    """A plausible complete log for a run over ``total`` tasks."""
    outcomes = ["pass", "fail", "err"]
    log = [
        event(0, "RunLaunched", run_id=RUN_ID),
        event(1, "PipelineStarted", phases=["fetch", "materialize", "report"]),
        event(2, "PhaseStarted", phase="fetch"),
        event(3, "DatasetTasksArtifact", total_tasks=1319, selected_tasks=total),
        event(4, "PhaseCompleted", phase="fetch", duration_ms=1200),
        event(5, "PhaseStarted", phase="materialize"),
    ]
    for i in range(total):
        log.append(
            event(
                6 + i,
                "MaterializeTaskAggregated",
                task_id=f"gsm8k/test/{i}",
                index=i,
                outcome=outcomes[i % 3],
                score=1.0 if i % 3 == 0 else 0.0,
            )
        )
    seq = 6 + total
    log.append(event(seq, "PhaseCompleted", phase="materialize", duration_ms=900))
    log.append(event(seq + 1, "PipelineFinished", status=status, duration_ms=2500))
    return log


class FakeGateway:
    """Routes requests to scripted responses and records every request it saw."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self._routes: dict[tuple[str, str], deque[Responder]] = {}

    def on(self, method: str, path: str, *responders: Responder) -> None:
        """Answer ``method path`` with ``responders`` in turn; the last one repeats."""
        self._routes[(method, path)] = deque(responders)

    def seen(self, method: str, path: str) -> list[httpx.Request]:
        """The requests received for one route, in order."""
        return [r for r in self.requests if r.method == method and r.url.path == path]

    def handler(self, request: httpx.Request) -> httpx.Response:
        """The ``MockTransport`` handler."""
        request.read()
        self.requests.append(request)
        queue = self._routes.get((request.method, request.url.path))
        if not queue:
            return problem(404, "not found", f"no route {request.method} {request.url.path}")
        responder = queue.popleft() if len(queue) > 1 else queue[0]
        return responder(request) if callable(responder) else responder

    def client(self) -> httpx.Client:
        """An ``httpx.Client`` that talks to this fake."""
        return httpx.Client(transport=httpx.MockTransport(self.handler))

    def async_client(self) -> httpx.AsyncClient:
        """An ``httpx.AsyncClient`` that talks to this fake."""
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handler))
