"""A real OpenAI-compatible server on loopback for tests and benchmarks.

It answers GSM8K-style prompts with "The answer is <n>", where n is read from
a table the test supplies (or 42), and counts the calls it saw.

Built with ``streaming=True`` it answers ``"stream": true`` requests with
Server-Sent Events as OpenAI does: a role chunk, one chunk per word (with
``stream_chunk_delay_s`` between them), a finish chunk, a usage chunk when the
request asks for it (``stream_options.include_usage``) and ``stream_usage`` is
on, then ``[DONE]``; ``stream_break_after=n`` drops the connection after n
words. ``state["in_flight"]`` counts the calls being answered at once (a
stream until its end), ``state["in_flight_at_arrival"]`` that count as each
call arrived (itself included, in the order of ``state["times"]``).
"""

import asyncio
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

Answer = Callable[[str], str]


def default_answer(prompt: str) -> str:
    return "Let me think. The answer is 42."


class StreamBrokenError(Exception):
    """Raised inside a stream on purpose: uvicorn drops the connection mid-answer."""


def _sse(chunk: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


# Words and punctuation marks, each a token: close to how GPT-style tokenizers count
# short English (``"What is 3 + 1?"`` is 6), for tests that compare with real counts.
WORDPIECES = re.compile(r"\w+|[^\w\s]")


def _usage(prompt: str, text: str, state: dict[str, Any] | None = None) -> dict[str, int]:
    def count(value: str) -> int:
        if state is not None and state.get("wordpiece_tokens"):
            return len(WORDPIECES.findall(value))
        return len(value.split())

    return {
        "prompt_tokens": count(prompt),
        "completion_tokens": count(text),
        "total_tokens": count(prompt) + count(text),
    }


async def _stream(
    state: dict[str, Any], body: dict[str, Any], prompt: str, text: str, call_id: str
) -> AsyncIterator[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": call_id,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    try:
        yield _sse(chunk({"role": "assistant", "content": ""}))
        for i, word in enumerate(text.split(" ")):
            if state["stream_break_after"] is not None and i >= state["stream_break_after"]:
                raise StreamBrokenError("scripted: connection dropped mid-stream")
            if state["stream_chunk_delay_s"]:
                await asyncio.sleep(state["stream_chunk_delay_s"])
            yield _sse(chunk({"content": word if i == 0 else " " + word}))
        yield _sse(chunk({}, "stop"))
        options = body.get("stream_options") or {}
        if options.get("include_usage") and state["stream_usage"]:
            usage = _usage(prompt, text, state)
            yield _sse({**chunk({}), "choices": [], "usage": usage})
        yield b"data: [DONE]\n\n"
    finally:
        state["in_flight"] -= 1


def build_app(answer: Answer, state: dict[str, Any]) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        body = await request.json()
        state["calls"] += 1
        state["times"].append(time.monotonic())
        state.setdefault("in_flight", 0)
        state["in_flight"] += 1
        state["max_in_flight"] = max(state.get("max_in_flight", 0), state["in_flight"])
        state.setdefault("in_flight_at_arrival", []).append(state["in_flight"])
        streamed = False
        try:
            if state["failures"]:
                # Scripted upstream trouble first: (status, headers) per call.
                status, headers = state["failures"].pop(0)
                return JSONResponse({"error": {"message": "busy"}}, status, headers=headers)
            state["auth"].add(request.headers.get("authorization", ""))
            prompt = body["messages"][-1]["content"]
            # Who asked what, and when: (time, the request's model name, the prompt).
            state.setdefault("log", []).append((time.monotonic(), body.get("model"), prompt))
            # A slow answer must not hold up the other calls, as a real server's would not.
            text = await asyncio.to_thread(answer, prompt) if state["threaded"] else answer(prompt)
            if body.get("stream") and state.get("streaming"):
                streamed = True
                return StreamingResponse(
                    _stream(state, body, prompt, text, f"chatcmpl-{state['calls']}"),
                    media_type="text/event-stream",
                )
        finally:
            if not streamed:
                state["in_flight"] -= 1
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
            "usage": _usage(prompt, text, state),
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
        streaming: bool = False,
        stream_chunk_delay_s: float = 0.0,
        stream_usage: bool = True,
        stream_break_after: int | None = None,
        wordpiece_tokens: bool = False,
    ) -> None:
        self.state: dict[str, Any] = {
            # Count usage in word pieces (``WORDPIECES``) rather than whitespace words.
            "wordpiece_tokens": wordpiece_tokens,
            "threaded": threaded,
            "calls": 0,
            "auth": set(),
            "times": [],
            "failures": list(failures),
            "streaming": streaming,
            "stream_chunk_delay_s": stream_chunk_delay_s,
            "stream_usage": stream_usage,
            "stream_break_after": stream_break_after,
            "in_flight": 0,
            "max_in_flight": 0,
            "in_flight_at_arrival": [],
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
