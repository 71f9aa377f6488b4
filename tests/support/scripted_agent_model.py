"""A deterministic tool-calling model: a script of replies per task.

A script is a list of turns; each turn is either tool calls (``calls(...)``) or a
final text (``final(...)``). Which script a conversation follows is decided by the
first user message (the task's instruction): the first script whose key occurs in
it. Each conversation advances by how many assistant messages it already holds, so
the same model serves any number of tasks at once and a task's turns come out the
same every time: a pass count over a dataset is exact. A conversation past the end
of its script gets ``final("nothing more to do")``.

``ScriptedAgentModel`` is the ``AgentModel`` port in process; ``ScriptedAgentServer``
serves the same scripts as an OpenAI-compatible ``/v1/chat/completions`` on loopback
(for the ``ProxyAgentModel`` adapter and anything that speaks HTTP), with scripted
HTTP failures first (``failures=[(status, headers), ...]``).
"""

import asyncio
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from benchwright_orchestrator.agents.ports import ModelReply, ModelToolCall
from tests.support.fake_openai import FakeOpenAIServer

COST_MICROS_PER_TURN = 150
INPUT_TOKENS_PER_MESSAGE = 10
OUTPUT_TOKENS_PER_TURN = 20


@dataclass(frozen=True)
class Turn:
    text: str | None = None
    # (name, arguments): a dict is sent as JSON, a str as it is (to script bad JSON).
    tool_calls: tuple[tuple[str, dict[str, Any] | str], ...] = ()


def calls(*tool_calls: tuple[str, dict[str, Any] | str], text: str | None = None) -> Turn:
    """A turn that calls tools: ``calls(("shell", {"command": "ls"}))``."""
    return Turn(text, tuple(tool_calls))


def call(name: str, arguments: dict[str, Any] | str | None = None, **kwargs: Any) -> Turn:
    """A turn with one tool call: ``call("shell", command="ls")``."""
    return Turn(None, ((name, arguments if arguments is not None else kwargs),))


def final(text: str) -> Turn:
    """The turn that ends the attempt: text and no tool call."""
    return Turn(text)


END = final("nothing more to do")


@dataclass
class ScriptBook:
    """Scripts keyed by a text their task's instruction contains."""

    scripts: Mapping[str, Sequence[Turn]]
    default: Sequence[Turn] = (END,)
    # Every conversation's messages, as they arrived (what the client sent).
    seen: list[list[dict[str, Any]]] = field(default_factory=list)

    def turn_for(self, messages: Sequence[Mapping[str, Any]]) -> tuple[int, Turn]:
        self.seen.append([dict(m) for m in messages])
        instruction = next((str(m.get("content")) for m in messages if m["role"] == "user"), "")
        script = next((s for key, s in self.scripts.items() if key in instruction), self.default)
        index = sum(1 for m in messages if m["role"] == "assistant")
        return index, script[index] if index < len(script) else END


def _arguments(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _usage(messages: Sequence[Any]) -> tuple[int, int]:
    return INPUT_TOKENS_PER_MESSAGE * len(messages), OUTPUT_TOKENS_PER_TURN


class ScriptedAgentModel:
    """The ``AgentModel`` port, answering from a ``ScriptBook`` in process."""

    def __init__(self, book: ScriptBook) -> None:
        self.book = book
        self.calls = 0

    async def complete(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> ModelReply:
        self.calls += 1
        index, turn = self.book.turn_for(messages)
        input_tokens, output_tokens = _usage(messages)
        return ModelReply(
            text=turn.text,
            tool_calls=tuple(
                ModelToolCall(f"call_{index}_{i}", name, _arguments(arguments))
                for i, (name, arguments) in enumerate(turn.tool_calls)
            ),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_micros=COST_MICROS_PER_TURN,
            finish_reason="tool_calls" if turn.tool_calls else "stop",
        )


class ScriptedAgentServer(FakeOpenAIServer):
    """The same scripts over HTTP, OpenAI's chat-completions tool-calling format."""

    def __init__(
        self,
        book: ScriptBook,
        failures: Sequence[tuple[int, dict[str, str]]] = (),
        *,
        delay_s: float = 0.0,
    ) -> None:
        super().__init__()
        self.book = book
        self.failures = list(failures)
        # How long each answer takes: long enough for a test to kill a service mid-attempt.
        self.delay_s = delay_s
        self.requests: list[dict[str, Any]] = []
        self.app = self._build()

    def _build(self) -> FastAPI:
        app = FastAPI()
        ids = itertools.count(1)

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> Any:
            body = await request.json()
            self.requests.append({"headers": dict(request.headers), "body": body})
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            if self.failures:
                status, headers = self.failures.pop(0)
                return JSONResponse({"error": {"message": "scripted"}}, status, headers=headers)
            _, turn = self.book.turn_for(body["messages"])
            message: dict[str, Any] = {"role": "assistant", "content": turn.text}
            if turn.tool_calls:
                message["tool_calls"] = [
                    {
                        "id": f"call_{next(ids)}",
                        "type": "function",
                        "function": {"name": name, "arguments": _arguments(arguments)},
                    }
                    for name, arguments in turn.tool_calls
                ]
            input_tokens, output_tokens = _usage(body["messages"])
            return JSONResponse(
                {
                    "id": f"chatcmpl-{len(self.requests)}",
                    "object": "chat.completion",
                    "model": body.get("model"),
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "tool_calls" if turn.tool_calls else "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": input_tokens,
                        "completion_tokens": output_tokens,
                        "total_tokens": input_tokens + output_tokens,
                    },
                },
                # What the run's proxy stamps on an answer it metered.
                headers={
                    "x-benchwright-call-cost-micros": str(COST_MICROS_PER_TURN),
                    "x-benchwright-call-prompt-tokens": str(input_tokens),
                    "x-benchwright-call-completion-tokens": str(output_tokens),
                },
            )

        return app
