"""An OpenAI-compatible server that plays back a scripted conversation.

Each chat completion request gets the next scripted assistant message, in
order, whatever it asked; every request is kept so a test can check what the
client sent (tool results, headers, and that no secret leaked into it).
"""

import itertools
import json
from typing import Any

from fastapi import FastAPI, Request

from tests.support.fake_openai import FakeOpenAIServer


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    """One scripted turn: the assistant calls ``name`` with ``arguments``."""
    return {"tool_calls": [(name, arguments)]}


def say(text: str, *calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"content": text, "tool_calls": list(calls)}


class ScriptedOpenAIServer(FakeOpenAIServer):
    def __init__(self, script: list[dict[str, Any]]) -> None:
        super().__init__()
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.app = self._build()

    def _build(self) -> FastAPI:
        app = FastAPI()
        ids = itertools.count(1)

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> Any:
            body = await request.json()
            self.requests.append({"headers": dict(request.headers), "body": body})
            if not self.script:
                turn: dict[str, Any] = {"content": "I have nothing more to say."}
            else:
                turn = self.script.pop(0)
            message: dict[str, Any] = {"role": "assistant", "content": turn.get("content")}
            calls = turn.get("tool_calls") or []
            if calls:
                message["tool_calls"] = [
                    {
                        "id": f"call_{next(ids)}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                    for name, arguments in calls
                ]
            return {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
            }

        return app
