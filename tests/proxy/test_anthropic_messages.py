"""Anthropic's Messages API over the proxy: a request in Anthropic's shape reaches the
run's model as a chat completion (system, tools, tool results translated), its answer
comes back in Anthropic's shape (tool_use blocks, or the stream's events), stamped with
its cost and metered against its task like any call of the run."""

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwright_proxy import anthropic_messages
from benchwright_proxy.app import build
from benchwright_shared.contracts import SutRef
from benchwright_shared.settings import Settings
from tests.support.scripted_agent_model import (
    INPUT_TOKENS_PER_MESSAGE,
    OUTPUT_TOKENS_PER_TURN,
    ScriptBook,
    ScriptedAgentServer,
    call,
    final,
)

# A micro-dollar a prompt token, two a completion token.
PRICES = {"openai_compatible/scripted": {"prompt_per_mtok": 1.0, "completion_per_mtok": 2.0}}
SCRIPT = {"greet": [call("bash", command="echo hi > /app/out.txt"), final("done: wrote it")]}
BASH = {
    "name": "bash",
    "description": "Run a shell command",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
}


@pytest.fixture
def model() -> Iterator[ScriptedAgentServer]:
    server = ScriptedAgentServer(ScriptBook(SCRIPT))
    server.start()
    yield server
    server.stop()


@pytest.fixture
async def proxy(tmp_path: Path, model: ScriptedAgentServer) -> AsyncIterator[tuple[str, str]]:
    settings = Settings(
        data_dir=tmp_path, proxy_port=0, nats_url=None, database_url=None, model_prices=PRICES
    )
    service = build(settings)
    url = await service.runtime.serve_http()
    # LiteLLM's first import takes seconds (tens on a loaded machine): not what these
    # tests time, so it is done before them.
    await anthropic_messages.ready()
    sut = SutRef(model="scripted", provider="openai_compatible", api_base=model.base_url)
    _, key = await service.runtime.bind(str(uuid.uuid4()), "acct_test", sut, None, (None, None))
    yield url, key
    await service.stop()


def cost(prompt: int, completion: int) -> int:
    return prompt + 2 * completion


def request(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-whatever",
        "max_tokens": 1024,
        "system": "You are scripted.",
        "tools": [BASH],
        "messages": messages,
        **extra,
    }


async def test_a_tool_loop_in_anthropics_shape_through_the_proxy(
    proxy: tuple[str, str], model: ScriptedAgentServer
) -> None:
    url, key = proxy
    headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    asked = [{"role": "user", "content": "Please greet."}]
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
        first = await client.post("/v1/messages", json=request(asked))
        assert first.status_code == 200, first.text
        answer = first.json()
        assert answer["type"] == "message" and answer["stop_reason"] == "tool_use"
        (use,) = [b for b in answer["content"] if b["type"] == "tool_use"]
        assert (use["name"], use["input"]) == ("bash", {"command": "echo hi > /app/out.txt"})
        # The model saw a chat completion: the system prompt and the tool, translated.
        sent = model.requests[0]["body"]
        assert [m["role"] for m in sent["messages"]] == ["system", "user"]
        assert sent["tools"][0]["function"]["name"] == "bash"
        prompt = INPUT_TOKENS_PER_MESSAGE * 2
        assert answer["usage"] == {"input_tokens": prompt, "output_tokens": OUTPUT_TOKENS_PER_TURN}
        assert first.headers["x-benchwright-call-cost-micros"] == str(
            cost(prompt, OUTPUT_TOKENS_PER_TURN)
        )

        # The tool's result goes back as Anthropic's tool_result; the model ends the loop.
        asked += [
            {"role": "assistant", "content": answer["content"]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": ""}],
            },
        ]
        second = await client.post(
            "/v1/messages", json=request(asked, stream=True), headers={"x-benchwright-task": "0"}
        )
    assert second.status_code == 200, second.text
    assert second.headers["content-type"].startswith("text/event-stream")
    events = [
        json.loads(line.removeprefix("data: "))
        for line in second.text.splitlines()
        if line.startswith("data: ")
    ]
    assert [e["type"] for e in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[2]["delta"] == {"type": "text_delta", "text": "done: wrote it"}
    assert events[4]["delta"]["stop_reason"] == "end_turn"
    roles = [m["role"] for m in model.requests[1]["body"]["messages"]]
    assert roles == ["system", "user", "assistant", "tool"]
    assert second.headers["x-benchwright-call-cost-micros"] == str(
        cost(INPUT_TOKENS_PER_MESSAGE * 4, OUTPUT_TOKENS_PER_TURN)
    )


async def test_refusals_take_anthropics_shape(proxy: tuple[str, str]) -> None:
    url, key = proxy
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        hello = [{"role": "user", "content": "hi"}]
        wrong = await client.post(
            "/v1/messages", json=request(hello), headers={"x-api-key": "bw-not-a-key"}
        )
        assert wrong.status_code == 401
        assert wrong.json()["type"] == "error"
        assert wrong.json()["error"]["type"] == "authentication_error"
        body = request(hello)
        del body["max_tokens"]
        missing = await client.post("/v1/messages", json=body, headers={"x-api-key": key})
        assert missing.status_code == 400
        assert missing.json()["error"] == {
            "type": "invalid_request_error",
            "message": "max_tokens: field required",
        }
