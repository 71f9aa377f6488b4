"""A real OpenAI-compatible server on loopback for tests and benchmarks.

It answers GSM8K-style prompts with "The answer is <n>", where n is read from
a table the test supplies (or 42), and counts the calls it saw.
"""

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

Answer = Callable[[str], str]


def default_answer(prompt: str) -> str:
    return "Let me think. The answer is 42."


def build_app(answer: Answer, state: dict[str, Any]) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        body = await request.json()
        state["calls"] += 1
        state["times"].append(time.monotonic())
        if state["failures"]:
            # Scripted upstream trouble first: (status, headers) per call.
            status, headers = state["failures"].pop(0)
            return JSONResponse({"error": {"message": "busy"}}, status, headers=headers)
        state["auth"].add(request.headers.get("authorization", ""))
        prompt = body["messages"][-1]["content"]
        # A slow answer must not hold up the other calls, as a real server's would not.
        text = await asyncio.to_thread(answer, prompt) if state["threaded"] else answer(prompt)
        return {
            "id": f"chatcmpl-{state['calls']}",
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": len(prompt.split()),
                "completion_tokens": len(text.split()),
                "total_tokens": len(prompt.split()) + len(text.split()),
            },
        }

    return app


class FakeOpenAIServer:
    """Runs the fake on a background thread with its own event loop."""

    def __init__(
        self,
        answer: Answer = default_answer,
        failures: Sequence[tuple[int, dict[str, str]]] = (),
        *,
        threaded: bool = False,
    ) -> None:
        self.state: dict[str, Any] = {
            "threaded": threaded,
            "calls": 0,
            "auth": set(),
            "times": [],
            "failures": list(failures),
        }
        self.app = build_app(answer, self.state)
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "FakeOpenAIServer":
        config = uvicorn.Config(
            self.app,
            host="127.0.0.1",
            port=0,
            log_level="warning",
            access_log=False,
            lifespan="off",
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        while not self._server.started:
            threading.Event().wait(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        if self._server:
            self._server.should_exit = True
        if self._thread:
            self._thread.join(10)


def gsm8k_oracle(rows: list[dict[str, Any]], correct_every: int = 2) -> Answer:
    """Answers right for every ``correct_every``-th question, wrong otherwise."""
    by_question = {r["input"]["question"].strip(): (i, r["expected"]) for i, r in enumerate(rows)}

    def answer(prompt: str) -> str:
        for question, (i, expected) in by_question.items():
            if question in prompt:
                value = expected if i % correct_every == 0 else str(int(float(expected)) + 1)
                return f"Step by step. The answer is {value}."
        return "The answer is 0."

    return answer
