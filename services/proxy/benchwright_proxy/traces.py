"""A span per model call, by OpenTelemetry's GenAI conventions (client spans).

Each call a run's key makes is a ``chat {model}`` client span with
``gen_ai.operation.name``, ``gen_ai.provider.name`` (the run's provider as
Benchwright names it), the request and response models, the tokens the upstream
reported (``gen_ai.usage.*``) and ``error.type`` when it failed. A call that names
its task and trial (``X-Benchwright-Task``/``-Trial``) is a child of that trial's
task span, which the orchestrator writes with the same derived ids
(``telemetry.task_span``); any other call is a child of the run's span.

Prompts and answers (``gen_ai.input.messages``, ``gen_ai.output.messages``) are
recorded only when asked for: by the deployment
(``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``) or by the run's launch
(``telemetry.message_content``). A run launched with ``telemetry.traces: false`` has
no spans here. A repeat the proxy serves from its memory of recent calls (decision
0023) was traced as the call it repeats: its own span is dropped unended.
"""

import json
import logging
from typing import Any
from urllib.parse import urlsplit

from benchwright_proxy.ceilings import Attribution
from benchwright_proxy.domain import ModelBinding
from benchwright_shared.contracts import SutRef
from benchwright_shared.telemetry import (
    AttributeValue,
    OpenSpan,
    Tracing,
    content_capture_configured,
    run_span,
    run_tracing_choice,
    task_span,
)

log = logging.getLogger(__name__)

OPERATION = "chat"
# Request parameters recorded as ``gen_ai.request.<name>`` when the body sets them.
REQUEST_PARAMETERS = {
    "max_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "seed": "gen_ai.request.seed",
}
# Recorded message content is cut here: a span is not a transcript store.
MAX_CONTENT_CHARS = 16_000


def _text_parts(content: Any) -> list[dict[str, Any]]:
    """OpenAI message content (a string or a list of parts) as the conventions' parts."""
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") == "text":
            parts.append({"type": "text", "content": part.get("text", "")})
        elif isinstance(part, dict):
            parts.append({"type": str(part.get("type", "unknown"))})
    return parts


def _tool_calls(calls: Any) -> list[dict[str, Any]]:
    found = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        function = call.get("function") or {}
        found.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": function.get("name"),
                "arguments": function.get("arguments"),
            }
        )
    return found


def input_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's messages in the conventions' shape (``role`` and ``parts``)."""
    messages = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        role = str(message.get("role", "user"))
        if role == "tool":
            parts: list[dict[str, Any]] = [
                {
                    "type": "tool_call_response",
                    "id": message.get("tool_call_id"),
                    "response": message.get("content"),
                }
            ]
        else:
            parts = _text_parts(message.get("content"))
            parts += _tool_calls(message.get("tool_calls"))
        messages.append({"role": role, "parts": parts})
    return messages


def output_messages(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer's choices as the conventions' output messages."""
    messages = []
    for choice in answer.get("choices") or []:
        if not isinstance(choice, dict):
            continue
        message = choice.get("message") or {}
        parts = _text_parts(message.get("content") or "") if message.get("content") else []
        parts += _tool_calls(message.get("tool_calls"))
        messages.append(
            {
                "role": message.get("role", "assistant"),
                "parts": parts,
                "finish_reason": choice.get("finish_reason") or "stop",
            }
        )
    return messages


def _as_attribute(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages, ensure_ascii=False)[:MAX_CONTENT_CHARS]


class CallSpan:
    """One call's span, open from the request until ``end``."""

    def __init__(self, span: OpenSpan, capture_content: bool) -> None:
        self.span = span
        self.capture_content = capture_content

    def end(
        self,
        usage: dict[str, Any],
        ok: bool,
        *,
        answer: dict[str, Any] | None = None,
        response_model: str | None = None,
        error_type: str | None = None,
        cached: bool = False,
    ) -> None:
        """End the span with what the call came to. Never raises: a call is metered and
        answered whether or not its span could be written."""
        try:
            self._end(usage, ok, answer, response_model, error_type, cached)
        except Exception:
            log.exception("could not end a model call's span")

    def _end(
        self,
        usage: dict[str, Any],
        ok: bool,
        answer: dict[str, Any] | None,
        response_model: str | None,
        error_type: str | None,
        cached: bool,
    ) -> None:
        found = answer or {}
        reasons = [
            str(c.get("finish_reason"))
            for c in found.get("choices") or []
            if isinstance(c, dict) and c.get("finish_reason")
        ]
        attributes: dict[str, AttributeValue | None] = {
            "gen_ai.response.model": found.get("model") or response_model,
            "gen_ai.response.id": found.get("id"),
            "gen_ai.usage.input_tokens": _tokens(usage, "prompt_tokens"),
            "gen_ai.usage.output_tokens": _tokens(usage, "completion_tokens"),
            "gen_ai.response.finish_reasons": reasons or None,
            "benchwright.cache.hit": True if cached else None,
        }
        self.span.set(attributes)
        if self.capture_content and answer:
            self.span.set({"gen_ai.output.messages": _as_attribute(output_messages(answer))})
        if not ok:
            self.span.fail(error_type or "_OTHER")
        self.span.end()


def _tokens(usage: dict[str, Any], name: str) -> int | None:
    value = usage.get(name)
    return int(value) if isinstance(value, int | float) else None


class CallTraces:
    """Starts the span of each model call of a traced run."""

    def __init__(self, tracing: Tracing) -> None:
        self.tracing = tracing
        self.capture_content = content_capture_configured()

    def start(
        self,
        binding: ModelBinding,
        sut: SutRef,
        body: dict[str, Any],
        at: Attribution | None,
    ) -> CallSpan | None:
        """The call's span, started now; None for a run launched without traces (or when
        the span could not be started: the call goes on untraced)."""
        try:
            return self._start(binding, sut, body, at)
        except Exception:
            log.exception("could not start a model call's span for run %s", binding.run_id)
            return None

    def _start(
        self,
        binding: ModelBinding,
        sut: SutRef,
        body: dict[str, Any],
        at: Attribution | None,
    ) -> CallSpan | None:
        traces, run_content = run_tracing_choice(binding.telemetry_setting)
        if not traces:
            return None
        run_id = binding.run_id
        parent = task_span(run_id, at.task, at.trial) if at is not None else run_span(run_id)
        attributes: dict[str, AttributeValue | None] = {
            "gen_ai.operation.name": OPERATION,
            "gen_ai.provider.name": sut.provider,
            "gen_ai.request.model": sut.model,
            "benchwright.run.id": run_id,
            "benchwright.task.index": at.task if at is not None else None,
            "benchwright.task.trial": at.trial if at is not None else None,
        }
        if sut.api_base:
            where = urlsplit(sut.api_base)
            attributes["server.address"] = where.hostname
            attributes["server.port"] = where.port
        for name, attribute in REQUEST_PARAMETERS.items():
            value = body.get(name)
            if isinstance(value, int | float) and not isinstance(value, bool):
                attributes[attribute] = value
        capture = self.capture_content or run_content
        if capture:
            attributes["gen_ai.input.messages"] = _as_attribute(input_messages(body))
        span = self.tracing.span(
            f"{OPERATION} {sut.model}", parent=parent, kind="client", attributes=attributes
        )
        return CallSpan(span, capture)
