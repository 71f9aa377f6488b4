"""OpenTelemetry traces of runs: off unless an OTLP endpoint is configured, free when off.

Tracing is on in a process where ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set and the deployment did not turn it off
(``BW_TRACING=false``). Off, :func:`start_tracing` returns None and nothing of
OpenTelemetry is imported: callers hold None and skip their spans. On, each service
that traces gets its own ``TracerProvider`` (``service.name`` from
``OTEL_SERVICE_NAME``, else ``benchwright-<service>``) exporting OTLP/HTTP in batches;
the exporter reads the other standard ``OTEL_*`` variables itself.

The services are separate processes that talk over NATS, so a run's spans are tied
together without propagating a context: the trace id is a function of the run id,
and the id of each span a child may need (the run, a phase, a task's trial) is a
function of the run id and what names the span (:func:`run_span`,
:func:`phase_span`, :func:`task_span`). The proxy parents a model call to its task
knowing only the run and the ``X-Benchwright-Task``/``-Trial`` headers.
"""

import contextvars
import hashlib
import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span

log = logging.getLogger(__name__)

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
# The GenAI instrumentations' standard opt-in for recording prompts and answers.
CAPTURE_CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
TRUE_WORDS = ("true", "1", "yes", "on")

AttributeValue = str | int | float | bool | list[str]
SpanKind = Literal["internal", "client"]


def tracing_configured(enabled: bool = True, environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process exports traces: an OTLP endpoint is set and ``enabled``
    (the deployment's ``BW_TRACING``) does not say no."""
    env = os.environ if environ is None else environ
    return enabled and any(env.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def content_capture_configured(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the deployment opted in to message content on model-call spans."""
    env = os.environ if environ is None else environ
    return env.get(CAPTURE_CONTENT_VARIABLE, "").strip().lower() in TRUE_WORDS


# -- ids every service derives alike -----------------------------------------------


@dataclass(frozen=True)
class SpanRef:
    """A span's place in its run's trace, computable by anyone who knows the run."""

    trace_id: int
    span_id: int


def _digest(*parts: object) -> bytes:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()


def _nonzero(value: int) -> int:
    return value or 1  # an all-zero id is OpenTelemetry's "invalid"


def run_trace_id(run_id: str) -> int:
    """The 128-bit trace id of ``run_id``'s trace."""
    return _nonzero(int.from_bytes(_digest("benchwright-trace", run_id)[:16], "big"))


def _span(run_id: str, *names: object) -> SpanRef:
    span_id = _nonzero(int.from_bytes(_digest("benchwright-span", run_id, *names)[:8], "big"))
    return SpanRef(run_trace_id(run_id), span_id)


def run_span(run_id: str) -> SpanRef:
    """The run's root span."""
    return _span(run_id, "run")


def phase_span(run_id: str, phase: str, invocation: int = 1) -> SpanRef:
    """The span of the ``invocation``-th start of ``phase`` (a phase can run again)."""
    return _span(run_id, "phase", phase, invocation)


def task_span(run_id: str, index: int, trial: int) -> SpanRef:
    """The span of one trial of the task at dataset ``index``: the model calls' parent."""
    return _span(run_id, "task", index, trial)


def attempt_span(run_id: str, index: int, trial: int, attempt: int) -> SpanRef:
    """The span of one agent attempt at a trial: its turns' and tool calls' parent."""
    return _span(run_id, "attempt", index, trial, attempt)


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def nanoseconds(at: datetime) -> int:
    """An aware datetime as OpenTelemetry's nanoseconds since the epoch (exact: a float
    of seconds would lose the microseconds)."""
    return (at - EPOCH) // timedelta(microseconds=1) * 1000


# -- the SDK, imported only when tracing is on ---------------------------------------

# The span id the next span started in this context takes, when it must be a derived
# one (``Tracing.span(..., ref=...)``); None lets the SDK draw a random one.
_chosen: contextvars.ContextVar[SpanRef | None] = contextvars.ContextVar(
    "benchwright_chosen_span", default=None
)


@contextmanager
def _choosing(ref: SpanRef | None) -> Iterator[None]:
    token = _chosen.set(ref)
    try:
        yield
    finally:
        _chosen.reset(token)


def _provider(service: str) -> "TracerProvider":
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    class DerivedIds(RandomIdGenerator):
        """Random ids, except for a span whose ids were chosen (``_choosing``)."""

        def generate_trace_id(self) -> int:
            chosen = _chosen.get()
            return chosen.trace_id if chosen is not None else super().generate_trace_id()

        def generate_span_id(self) -> int:
            chosen = _chosen.get()
            return chosen.span_id if chosen is not None else super().generate_span_id()

    # OTEL_SERVICE_NAME, when set, names every service of the process (the standard);
    # an attribute given here would override it.
    named = (
        {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": f"benchwright-{service}"}
    )
    provider = TracerProvider(resource=Resource.create(named), id_generator=DerivedIds())
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


class OpenSpan:
    """A started span; everything a caller does with it, without importing OpenTelemetry."""

    def __init__(self, span: "Span") -> None:
        self._span = span

    def set(self, attributes: Mapping[str, AttributeValue | None]) -> None:
        """Set attributes; a None value is left out."""
        self._span.set_attributes({k: v for k, v in attributes.items() if v is not None})

    def event(
        self,
        name: str,
        attributes: Mapping[str, AttributeValue | None],
        at: datetime | None = None,
    ) -> None:
        self._span.add_event(
            name,
            {k: v for k, v in attributes.items() if v is not None},
            timestamp=nanoseconds(at) if at is not None else None,
        )

    def fail(self, error_type: str, description: str | None = None) -> None:
        """Mark the span failed: ``error.type`` and an error status."""
        from opentelemetry.trace import Status, StatusCode

        self._span.set_attribute("error.type", error_type)
        self._span.set_status(Status(StatusCode.ERROR, description or error_type))

    def end(self, at: datetime | None = None) -> None:
        self._span.end(end_time=nanoseconds(at) if at is not None else None)


class Tracing:
    """One service's tracer: spans placed in their runs' traces, exported over OTLP/HTTP."""

    def __init__(self, service: str) -> None:
        self.service = service
        self._provider = _provider(service)
        self._tracer = self._provider.get_tracer(f"benchwright.{service}")

    def span(
        self,
        name: str,
        *,
        parent: SpanRef | None,
        ref: SpanRef | None = None,
        kind: SpanKind = "internal",
        start: datetime | None = None,
        attributes: Mapping[str, AttributeValue | None] | None = None,
    ) -> OpenSpan:
        """Start a span under ``parent`` (None: a root). With ``ref`` it takes those ids
        (a root: its trace id too), so that other services can name it as a parent."""
        from opentelemetry import trace

        context = None
        if parent is not None:
            remote = trace.SpanContext(
                trace_id=parent.trace_id,
                span_id=parent.span_id,
                is_remote=True,
                trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
            )
            context = trace.set_span_in_context(trace.NonRecordingSpan(remote))
        with _choosing(ref):
            span = self._tracer.start_span(
                name,
                context=context,
                kind=trace.SpanKind.CLIENT if kind == "client" else trace.SpanKind.INTERNAL,
                attributes={k: v for k, v in (attributes or {}).items() if v is not None},
                start_time=nanoseconds(start) if start is not None else None,
            )
        return OpenSpan(span)

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Export what is batched now; False when the collector did not take it in time."""
        return self._provider.force_flush(int(timeout_s * 1000))

    def shutdown(self) -> None:
        """Export what is left and stop the exporter (blocking: call off the event loop)."""
        self._provider.shutdown()


def start_tracing(service: str, enabled: bool = True) -> Tracing | None:
    """``service``'s tracer when tracing is configured (:func:`tracing_configured`), else
    None. A tracer that cannot be built (OpenTelemetry not installed) is logged, not
    raised: a run must not fail for want of its traces."""
    if not tracing_configured(enabled):
        return None
    try:
        return Tracing(service)
    except ImportError:
        log.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry is not installed "
            "(pip install 'benchwright[server]'): %s traces nothing",
            service,
        )
        return None


def run_tracing_choice(telemetry: Mapping[str, Any] | None) -> tuple[bool, bool]:
    """A launch's ``telemetry`` option as (traces, message content): traces unless the
    run said no; message content only when it asked."""
    found = telemetry or {}
    return bool(found.get("traces", True)), bool(found.get("message_content", False))
