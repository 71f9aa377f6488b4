"""An OTLP/HTTP trace collector on loopback: decodes every export and keeps its spans.

Point ``OTEL_EXPORTER_OTLP_ENDPOINT`` at ``receiver.endpoint``; exporters POST
protobuf ``ExportTraceServiceRequest`` bodies to ``/v1/traces`` (gzip or not), which
this decodes with ``opentelemetry-proto`` into plain :class:`ReceivedSpan` records.
"""

import asyncio
import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

# OTLP's span kinds, by their number in the protocol.
KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, kind) if kind else None


def _attributes(pairs: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for pair in pairs:
        assert isinstance(pair, KeyValue)
        found[pair.key] = _value(pair.value)
    return found


@dataclass(frozen=True)
class ReceivedEvent:
    name: str
    attributes: dict[str, Any]
    at_ns: int


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as the collector got it; ids as lower-case hex (parent "" for a root)."""

    service: str
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[ReceivedEvent] = field(default_factory=list)
    error: bool = False


def decode(body: bytes) -> list[ReceivedSpan]:
    """The spans of one ``ExportTraceServiceRequest``."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        service = str(_attributes(resource_spans.resource.attributes).get("service.name", ""))
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                assert isinstance(span, Span)
                spans.append(
                    ReceivedSpan(
                        service=service,
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        kind=KINDS.get(span.kind, str(span.kind)),
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        attributes=_attributes(span.attributes),
                        events=[
                            ReceivedEvent(e.name, _attributes(e.attributes), e.time_unix_nano)
                            for e in span.events
                        ],
                        error=span.status.code == Status.STATUS_CODE_ERROR,
                    )
                )
    return spans


class OtlpReceiver:
    """Collects spans POSTed to ``/v1/traces``; ``exports`` counts the requests."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.exports = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                spans = decode(body)
                with receiver._lock:
                    receiver.exports += 1
                    receiver.spans.extend(spans)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        """The base URL for ``OTEL_EXPORTER_OTLP_ENDPOINT`` (exporters add ``/v1/traces``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> "OtlpReceiver":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def received(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self.spans)

    async def wait_for(
        self, check: Callable[[list[ReceivedSpan]], bool], timeout: float = 20.0
    ) -> list[ReceivedSpan]:
        """The spans once ``check`` holds for them (exports arrive in batches); waits
        without blocking the loop, where the services under test may be running."""
        deadline = time.monotonic() + timeout
        while True:
            spans = self.received()
            if check(spans):
                return spans
            if time.monotonic() > deadline:
                names = sorted({s.name for s in spans})
                raise TimeoutError(f"{len(spans)} spans never satisfied the check: {names}")
            await asyncio.sleep(0.05)
