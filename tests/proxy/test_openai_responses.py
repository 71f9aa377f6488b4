"""OpenAI's Responses API over the proxy: a request in the Responses shape reaches the
run's model as a chat completion (instructions, tools, function calls and their outputs
translated), its answer comes back in the Responses shape (function_call items, or the
stream's events), stamped with its cost and metered against its task like any call of
the run."""

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwright_proxy import openai_responses
from benchwright_proxy.app import ProxyService, build
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
SCRIPT = {"greet": [call("shell", command="echo hi > /app/out.txt"), final("done: wrote it")]}
SHELL = {
    "type": "function",
    "name": "shell",
    "description": "Run a shell command",
    "strict": False,
    "parameters": {
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
async def proxy(
    tmp_path: Path, model: ScriptedAgentServer
) -> AsyncIterator[tuple[str, str, ProxyService]]:
    settings = Settings(
        data_dir=tmp_path, proxy_port=0, nats_url=None, database_url=None, model_prices=PRICES
    )
    service = build(settings)
    url = await service.runtime.serve_http()
    # LiteLLM's first import takes seconds (tens on a loaded machine): not what these
    # tests time, so it is done before them.
    await openai_responses.ready()
    sut = SutRef(model="scripted", provider="openai_compatible", api_base=model.base_url)
    _, key = await service.runtime.bind(str(uuid.uuid4()), "acct_test", sut, None, (None, None))
    yield url, key, service
    await service.stop()


def cost(prompt: int, completion: int) -> int:
    return prompt + 2 * completion


def request(items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "model": "gpt-whatever",
        "instructions": "You are scripted.",
        "input": items,
        "tools": [SHELL],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "store": False,
        **extra,
    }


async def test_a_tool_loop_in_the_responses_shape_through_the_proxy(
    proxy: tuple[str, str, ProxyService], model: ScriptedAgentServer
) -> None:
    url, key, service = proxy
    headers = {"authorization": f"Bearer {key}"}
    asked: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "greet"}]}
    ]
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
        reasoning = {"effort": "low", "summary": "auto"}
        first = await client.post("/v1/responses", json=request(asked, reasoning=reasoning))
        assert first.status_code == 200, first.text
        answer = first.json()
        assert answer["object"] == "response" and answer["status"] == "completed"
        (used,) = answer["output"]
        assert used["type"] == "function_call" and used["name"] == "shell"
        assert json.loads(used["arguments"]) == {"command": "echo hi > /app/out.txt"}
        # The model saw a chat completion: the instructions and the tool, translated.
        sent = model.requests[0]["body"]
        assert [m["role"] for m in sent["messages"]] == ["system", "user"]
        assert sent["messages"][0]["content"] == "You are scripted."
        assert sent["tools"][0]["function"]["name"] == "shell"
        # Codex's reasoning setting: the chat API's effort, not LiteLLM's routing hints.
        assert sent["reasoning_effort"] == "low" and "reasoning_summary" not in sent
        prompt = INPUT_TOKENS_PER_MESSAGE * 2
        assert answer["usage"]["input_tokens"] == prompt
        assert answer["usage"]["output_tokens"] == OUTPUT_TOKENS_PER_TURN
        assert first.headers["x-benchwright-call-cost-micros"] == str(
            cost(prompt, OUTPUT_TOKENS_PER_TURN)
        )

        # The call and its output go back as input items; the model ends the loop.
        asked += [
            {k: used[k] for k in ("type", "call_id", "name", "arguments")},
            {"type": "function_call_output", "call_id": used["call_id"], "output": ""},
        ]
        second = await client.post(
            "/v1/responses", json=request(asked, stream=True), headers={"x-benchwright-task": "0"}
        )
    assert second.status_code == 200, second.text
    assert second.headers["content-type"].startswith("text/event-stream")
    names = [
        line.removeprefix("event: ") for line in second.text.splitlines() if line[:6] == "event:"
    ]
    events = [
        json.loads(line.removeprefix("data: "))
        for line in second.text.splitlines()
        if line.startswith("data: ")
    ]
    assert (
        names
        == [e["type"] for e in events]
        == [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    )
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[4]["delta"] == "done: wrote it"
    done = events[-1]["response"]
    assert done["status"] == "completed"
    assert done["output"][0]["content"][0]["text"] == "done: wrote it"
    roles = [m["role"] for m in model.requests[1]["body"]["messages"]]
    assert roles == ["system", "user", "assistant", "tool"]
    second_cost = cost(INPUT_TOKENS_PER_MESSAGE * 4, OUTPUT_TOKENS_PER_TURN)
    assert second.headers["x-benchwright-call-cost-micros"] == str(second_cost)
    # Metered as any call of the run: both calls, their tokens, their cost.
    (usage,) = service.runtime.meter.drain()
    assert (usage.calls, usage.failed_calls) == (2, 0)
    assert usage.prompt_tokens == prompt + INPUT_TOKENS_PER_MESSAGE * 4
    assert usage.completion_tokens == 2 * OUTPUT_TOKENS_PER_TURN
    assert usage.cost_micros == cost(prompt, OUTPUT_TOKENS_PER_TURN) + second_cost


async def test_a_streamed_function_call_carries_its_arguments(
    proxy: tuple[str, str, ProxyService],
) -> None:
    url, key, _ = proxy
    asked = [{"type": "message", "role": "user", "content": "greet"}]
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        streamed = await client.post(
            "/v1/responses",
            json=request(asked, stream=True),
            headers={"authorization": f"Bearer {key}"},
        )
    assert streamed.status_code == 200, streamed.text
    events = [
        json.loads(line.removeprefix("data: "))
        for line in streamed.text.splitlines()
        if line.startswith("data: ")
    ]
    assert [e["type"] for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert events[2]["item"]["arguments"] == ""
    item = events[5]["item"]
    assert json.loads(events[3]["delta"]) == json.loads(item["arguments"])
    assert json.loads(item["arguments"]) == {"command": "echo hi > /app/out.txt"}
    assert events[-1]["response"]["usage"]["output_tokens"] == OUTPUT_TOKENS_PER_TURN


async def test_refusals_take_openais_shape(proxy: tuple[str, str, ProxyService]) -> None:
    url, key, service = proxy
    hello = [{"type": "message", "role": "user", "content": "hi"}]
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        wrong = await client.post(
            "/v1/responses", json=request(hello), headers={"authorization": "Bearer bw-nope"}
        )
        assert wrong.status_code == 401
        assert wrong.json()["error"]["type"] == "authentication_error"
        bearer = {"authorization": f"Bearer {key}"}
        body = request(hello)
        del body["input"]
        missing = await client.post("/v1/responses", json=body, headers=bearer)
        assert missing.status_code == 400
        assert missing.json()["error"] == {
            "message": "input: field required",
            "type": "invalid_request_error",
            "param": "input",
            "code": None,
        }
        chained = await client.post(
            "/v1/responses", json=request(hello, previous_response_id="resp_1"), headers=bearer
        )
        assert chained.status_code == 400
        assert chained.json()["error"]["param"] == "previous_response_id"
        # What the shared path refuses, or the model's failure, keeps its status and shape.
        sut = SutRef(model="scripted", provider="openai_compatible", api_base="http://127.0.0.1:9")
        _, bounded = await service.runtime.bind(
            str(uuid.uuid4()), "acct_test", sut, None, bounds=(1, 1)
        )
        as_bounded = {"authorization": f"Bearer {bounded}"}
        outside = await client.post(
            "/v1/responses",
            json=request(hello),
            headers={**as_bounded, "x-benchwright-task": "7", "x-benchwright-trial": "0"},
        )
        assert outside.status_code == 400
        assert outside.json()["error"]["type"] == "invalid_request_error"
        assert "task 7 trial 0 is not one of this run's" in outside.json()["error"]["message"]
        unreachable = await client.post("/v1/responses", json=request(hello), headers=as_bounded)
        assert unreachable.status_code == 502
        assert set(unreachable.json()["error"]) >= {"message", "type"}
    # Only the call that reached for the model was metered: failed, free.
    (usage,) = service.runtime.meter.drain()
    assert (usage.calls, usage.failed_calls, usage.cost_micros) == (1, 1, 0)
