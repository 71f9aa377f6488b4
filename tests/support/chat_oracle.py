"""An OpenAI-compatible server whose answers a test computes from the whole request.

``FakeOpenAIServer`` answers with text read off the last message. The developer
guide's scorers also send ``tools`` and read ``tool_calls`` back, and its panels want
models that are right on some questions and wrong on others. Here ``reply`` gets the
request body and returns the assistant message: ``{"content": ...}`` and/or
``{"tool_calls": [(name, arguments), ...]}``. Every request body is kept in
``requests``; ``state["calls"]`` counts them as the base server's does.
"""

import itertools
import json
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request

from tests.support.fake_openai import FakeOpenAIServer

Reply = Callable[[dict[str, Any]], dict[str, Any]]
ToolCall = tuple[str, dict[str, Any]]


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message (``""`` when it is not plain text)."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return str(message["content"])
    return ""


class ChatOracleServer(FakeOpenAIServer):
    """A fake model whose every answer is ``reply(request_body)``."""

    def __init__(self, reply: Reply) -> None:
        super().__init__()
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.app = self._build()

    def _build(self) -> FastAPI:
        app = FastAPI()
        ids = itertools.count(1)

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> Any:
            body = await request.json()
            self.requests.append(body)
            self.state["calls"] += 1
            turn = self.reply(body)
            message: dict[str, Any] = {"role": "assistant", "content": turn.get("content")}
            calls: list[ToolCall] = list(turn.get("tool_calls") or [])
            if calls:
                message["tool_calls"] = [
                    {
                        "id": f"call_{next(ids)}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                    for name, arguments in calls
                ]
            text = str(turn.get("content") or "")
            prompt = last_user_text(body)
            return {
                "id": f"chatcmpl-{self.state['calls']}",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if calls else "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": len(prompt.split()),
                    "completion_tokens": len(text.split()),
                    "total_tokens": len(prompt.split()) + len(text.split()),
                },
            }

        return app
