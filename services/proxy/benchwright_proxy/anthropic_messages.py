"""Anthropic's Messages API (``POST /v1/messages``) over the proxy's chat completions.

Agents that speak only Anthropic's API (Claude Code, through Harbor's bridge) point
``ANTHROPIC_BASE_URL`` at the proxy. Each request is translated to a chat completion
by LiteLLM's own adapter (``AnthropicAdapter``: messages, system, tools and
tool results, stop sequences), answered by the run's model exactly as a
``/v1/chat/completions`` call is (its key, ceilings, metering, cache, cost stamp),
and the answer translated back. A request that asks to stream gets the whole answer
as the event sequence Anthropic's stream would have carried
(``message_start`` ... ``message_stop``), once the model has answered: what the
stream loses is only its pacing.

Errors keep their status and take Anthropic's shape
(``{"type": "error", "error": {"type", "message"}}``).
"""

import asyncio
import functools
import json
from dataclasses import dataclass, field
from typing import Any

from fastapi.responses import JSONResponse, Response

from benchwright_proxy.calls import stamp_of
from benchwright_proxy.providers.litellm_provider import import_litellm

__all__ = [
    "ChatOfMessages",
    "anthropic_error",
    "as_events",
    "from_chat",
    "ready",
    "to_chat",
]


@dataclass(frozen=True)
class ChatOfMessages:
    """A Messages request as the chat completion that answers it."""

    body: dict[str, Any]
    stream: bool = False
    # Tool names the translation shortened (OpenAI allows 64 characters), to restore.
    tool_names: dict[str, str] = field(default_factory=dict)


def anthropic_error(status: int, message: str, kind: str) -> JSONResponse:
    return JSONResponse(
        {"type": "error", "error": {"type": kind, "message": message}}, status_code=status
    )


@functools.cache
def _adapter() -> Any:
    import_litellm()  # offline, first: the adapter's import loads all of LiteLLM
    from litellm.llms.anthropic.messages.adapters.transformation import AnthropicAdapter

    return AnthropicAdapter()


async def ready() -> None:
    """Load LiteLLM's adapter off the event loop: its first import takes seconds, which
    would stall every other call the proxy is answering."""
    await asyncio.to_thread(_adapter)


def to_chat(body: Any) -> ChatOfMessages:
    """The chat completion for a Messages request; ``ValueError`` naming what is wrong."""
    if not isinstance(body, dict):
        raise ValueError("body must be a JSON object")
    for required in ("model", "messages", "max_tokens"):
        if required not in body:
            raise ValueError(f"{required}: field required")
    try:
        chat, names = _adapter().translate_completion_input_params_with_tool_mapping(dict(body))
    except (TypeError, KeyError) as exc:
        raise ValueError(f"not a Messages request: {exc}") from exc
    if chat is None:
        raise ValueError("not a Messages request")
    translated = {k: v for k, v in dict(chat).items() if v is not None}
    translated["stream"] = False
    translated.pop("stream_options", None)
    return ChatOfMessages(translated, stream=bool(body.get("stream")), tool_names=names)


def from_chat(answered: Response, chat: ChatOfMessages) -> Response:
    """The chat completion's answer as a Messages answer, its cost stamp kept."""
    stamp = stamp_of(answered)
    payload = json.loads(bytes(answered.body))
    if answered.status_code != 200:
        error = payload.get("error") if isinstance(payload, dict) else None
        error = error if isinstance(error, dict) else {}
        failed = anthropic_error(
            answered.status_code,
            str(error.get("message") or "the model call failed"),
            str(error.get("type") or "api_error"),
        )
        failed.headers.update(stamp)
        return failed
    from litellm import ModelResponse

    message = _adapter().translate_completion_output_params(
        ModelResponse(**payload), tool_name_mapping=chat.tool_names or None
    )
    message = json.loads(json.dumps(message, default=_plain))
    if not chat.stream:
        return JSONResponse(message, headers=stamp)
    return Response(b"".join(as_events(message)), media_type="text/event-stream", headers=stamp)


def as_events(message: dict[str, Any]) -> list[bytes]:
    """A whole Messages answer as the events Anthropic's stream carries. (LiteLLM's
    own renderer lives in its proxy server package, which needs that server's extras.)"""
    usage = message.get("usage") or {}
    started = {
        **{k: v for k, v in message.items() if k not in ("stop_reason", "stop_sequence")},
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 0},
    }
    events = [_event("message_start", {"message": started})]
    for index, block in enumerate(message.get("content") or []):
        start, delta = _block_start_and_delta(block)
        events.append(_event("content_block_start", {"index": index, "content_block": start}))
        if delta is not None:
            events.append(_event("content_block_delta", {"index": index, "delta": delta}))
        events.append(_event("content_block_stop", {"index": index}))
    finished = {"stop_reason": message.get("stop_reason"), "stop_sequence": None}
    events.append(_event("message_delta", {"delta": finished, "usage": usage}))
    events.append(_event("message_stop", {}))
    return events


def _block_start_and_delta(block: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    kind = block.get("type")
    if kind == "tool_use":
        start: dict[str, Any] = {
            "type": "tool_use",
            "id": block.get("id"),
            "name": block.get("name"),
            "input": {},
        }
        return start, {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    if kind == "thinking":
        return {"type": "thinking", "thinking": ""}, {
            "type": "thinking_delta",
            "thinking": block.get("thinking") or "",
        }
    if kind == "text":
        return {"type": "text", "text": ""}, {"type": "text_delta", "text": block.get("text")}
    return block, None


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()


def _plain(value: Any) -> Any:
    """A pydantic model inside the translated answer, as JSON."""
    dump = getattr(value, "model_dump", None)
    if dump is None:
        raise TypeError(f"{type(value).__name__} is not JSON")
    return dump(exclude_none=True)
