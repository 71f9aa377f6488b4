"""OpenAI's Responses API (``POST /v1/responses``) over the proxy's chat completions.

Agents that speak only the Responses API (OpenAI's Codex CLI, through Harbor's bridge)
point ``OPENAI_BASE_URL`` at the proxy. Each request is translated to a chat completion
by LiteLLM's own transformation (``LiteLLMCompletionResponsesConfig``: instructions,
input items, function calls and their outputs, tools, tool choice), answered by the
run's model exactly as a ``/v1/chat/completions`` call is (its key, ceilings,
metering, cache, cost stamp), and the answer translated back. A request that asks to
stream gets the whole answer as the events the Responses stream would have carried
(``response.created`` ... ``response.completed``), once the model has answered: what
the stream loses is only its pacing.

The proxy keeps no responses: a request naming ``previous_response_id`` is refused
(Codex sends its whole conversation each time, with ``store`` off). Errors keep their
status and OpenAI's shape (``{"error": {"message", "type", "code"}}``).
"""

import asyncio
import functools
import json
from dataclasses import dataclass, field
from typing import Any

from fastapi.responses import JSONResponse, Response

from benchwright_proxy.calls import stamp_of
from benchwright_proxy.providers.litellm_provider import import_litellm

__all__ = ["ChatOfResponse", "as_events", "from_chat", "ready", "refused", "to_chat"]

# What the request says that the translation reads (besides ``model`` and ``input``).
NOT_PARAMS = ("model", "input", "stream")
LITELLM_ONLY = (
    "custom_llm_provider",
    "extra_headers",
    "metadata",
    "reasoning_summary",
    "stream_options",
)


@dataclass(frozen=True)
class ChatOfResponse:
    """A Responses request as the chat completion that answers it."""

    body: dict[str, Any]
    # What the answer echoes and is built from: the request's input and its parameters.
    input: Any = None
    params: dict[str, Any] = field(default_factory=dict)
    stream: bool = False


def refused(message: str) -> JSONResponse:
    """A request that is not one (400), in OpenAI's shape, ``param`` naming the field
    the message starts with (``"input: field required"``)."""
    field, colon, _ = message.partition(":")
    param = field if colon and " " not in field else None
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": None}
    return JSONResponse({"error": error}, status_code=400)


@functools.cache
def _config() -> Any:
    import_litellm()  # offline, first: the transformation's import loads all of LiteLLM
    from litellm.responses.litellm_completion_transformation.transformation import (
        LiteLLMCompletionResponsesConfig,
    )

    return LiteLLMCompletionResponsesConfig


async def ready() -> None:
    """Load LiteLLM's transformation off the event loop: its first import takes seconds,
    which would stall every other call the proxy is answering."""
    await asyncio.to_thread(_config)


def to_chat(body: Any) -> ChatOfResponse:
    """The chat completion for a Responses request; ``ValueError`` naming what is wrong."""
    if not isinstance(body, dict):
        raise ValueError("body must be a JSON object")
    for required in ("model", "input"):
        if required not in body:
            raise ValueError(f"{required}: field required")
    if body.get("previous_response_id"):
        raise ValueError("previous_response_id: the proxy keeps no responses; send the whole input")
    params = {k: v for k, v in body.items() if k not in NOT_PARAMS and v is not None}
    try:
        chat = _config().transform_responses_api_request_to_chat_completion_request(
            model=str(body["model"]), input=body["input"], responses_api_request=params
        )
    except Exception as exc:  # LiteLLM's own refusals (BadRequestError) and malformed items
        raise ValueError(f"not a Responses request: {exc}") from exc
    translated = {k: v for k, v in chat.items() if v is not None}
    # LiteLLM's routing hints, which no chat completions API takes.
    for litellm_only in LITELLM_ONLY:
        translated.pop(litellm_only, None)
    translated["stream"] = False
    return ChatOfResponse(
        translated, input=body["input"], params=params, stream=bool(body.get("stream"))
    )


def from_chat(answered: Response, chat: ChatOfResponse) -> Response:
    """The chat completion's answer as a Responses answer, its cost stamp kept. A
    failed call keeps its status and its (OpenAI-shaped) error."""
    if answered.status_code != 200:
        return answered
    stamp = stamp_of(answered)
    from litellm import ModelResponse

    translated = _config().transform_chat_completion_response_to_responses_api_response(
        request_input=chat.input,
        responses_api_request=chat.params,
        chat_completion_response=ModelResponse(**json.loads(bytes(answered.body))),
    )
    response = json.loads(translated.model_dump_json(exclude_none=True))
    if not chat.stream:
        return JSONResponse(response, headers=stamp)
    return Response(b"".join(as_events(response)), media_type="text/event-stream", headers=stamp)


def as_events(response: dict[str, Any]) -> list[bytes]:
    """A whole Responses answer as the events OpenAI's stream carries. (LiteLLM's own
    renderer turns chat completion chunks into them, one model chunk at a time.)"""
    events = _Events()
    started = {**response, "status": "in_progress", "output": []}
    events.add("response.created", response=started)
    events.add("response.in_progress", response=started)
    for index, item in enumerate(response.get("output") or []):
        events.item(index, item)
    events.add("response.completed", response=response)
    return events.lines


class _Events:
    """The stream's events in order, each numbered as OpenAI numbers them."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def add(self, name: str, **data: Any) -> None:
        event = {"type": name, "sequence_number": len(self.lines), **data}
        self.lines.append(f"event: {name}\ndata: {json.dumps(event)}\n\n".encode())

    def item(self, index: int, item: dict[str, Any]) -> None:
        kind, item_id = item.get("type"), item.get("id")
        at = {"item_id": item_id, "output_index": index}
        if kind == "message":
            self.add(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            for part_index, part in enumerate(item.get("content") or []):
                self._part(at | {"content_index": part_index}, part)
        elif kind == "function_call":
            self.add(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            arguments = item.get("arguments") or ""
            self.add("response.function_call_arguments.delta", **at, delta=arguments)
            self.add("response.function_call_arguments.done", **at, arguments=arguments)
        else:
            self.add("response.output_item.added", output_index=index, item=item)
        self.add("response.output_item.done", output_index=index, item=item)

    def _part(self, at: dict[str, Any], part: dict[str, Any]) -> None:
        if part.get("type") != "output_text":
            self.add("response.content_part.added", **at, part=part)
            self.add("response.content_part.done", **at, part=part)
            return
        text = part.get("text") or ""
        self.add("response.content_part.added", **at, part={**part, "text": ""})
        self.add("response.output_text.delta", **at, delta=text)
        self.add("response.output_text.done", **at, text=text)
        self.add("response.content_part.done", **at, part=part)
