"""The proxy's response cache: an answer kept for the same account, model, request and
trial is served again at no cost; a different trial, account or request goes upstream;
``read`` never keeps, ``off`` never reads; kept answers outlive a restart and expire."""

import asyncio
import itertools
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwright_proxy.app import ProxyService, build
from benchwright_proxy.response_cache import cache_key
from benchwright_shared.contracts import SutRef
from benchwright_shared.settings import Settings
from tests.support.fake_openai import FakeOpenAIServer

BODY = {"model": "fake", "messages": [{"role": "user", "content": "a fresh thought"}]}


@pytest.fixture
def model() -> Any:
    """Every answer is different (a counter), so a cached one is recognisable."""
    counter = itertools.count(1)
    server = FakeOpenAIServer(lambda prompt: f"thought number {next(counter)}").start()
    yield server
    server.stop()


async def started(tmp_path: Path) -> tuple[ProxyService, str]:
    settings = Settings(data_dir=tmp_path, proxy_port=0, nats_url=None, database_url=None)
    service = build(settings)
    return service, await service.runtime.serve_http()


async def bind(
    service: ProxyService, model: FakeOpenAIServer, cache: dict[str, Any] | None, account: str
) -> str:
    sut = SutRef(model="fake", provider="openai_compatible", api_base=model.base_url)
    _, key = await service.runtime.bind(str(uuid.uuid4()), account, sut, None, (None, None), cache)
    return key


async def ask(url: str, key: str, trial: int = 0, body: dict[str, Any] = BODY) -> httpx.Response:
    headers = {
        "Authorization": f"Bearer {key}",
        "X-Benchwright-Task": "0",
        "X-Benchwright-Trial": str(trial),
    }
    async with httpx.AsyncClient(timeout=30) as client:
        return await client.post(f"{url}/v1/chat/completions", json=body, headers=headers)


def text(answer: httpx.Response) -> str:
    assert answer.status_code == 200, answer.text
    return str(answer.json()["choices"][0]["message"]["content"])


READ_WRITE = {"mode": "read_write", "ttl": 3600}


async def test_a_kept_answer_is_served_again_only_for_the_same_call(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    service, url = await started(tmp_path)
    try:
        run = await bind(service, model, READ_WRITE, "acct_a")
        first = await ask(url, run)
        assert "x-benchwright-cache" not in first.headers
        again = await ask(url, run)
        assert text(again) == text(first)
        assert again.headers["x-benchwright-cache"] == "hit"
        assert again.headers["x-benchwright-call-cost-micros"] == "0"
        assert len(model.state["times"]) == 1  # the model was asked once

        # Another trial is another sample; another request another answer.
        assert text(await ask(url, run, trial=1)) != text(first)
        other = {**BODY, "temperature": 0.7}
        assert text(await ask(url, run, body=other)) != text(first)
        # The same request in a later run of the account: served from the cache.
        later = await bind(service, model, {"mode": "read", "ttl": 3600}, "acct_a")
        assert text(await ask(url, later)) == text(first)
        # Never across accounts; and a run with the cache off always asks the model.
        stranger = await bind(service, model, READ_WRITE, "acct_b")
        assert text(await ask(url, stranger)) != text(first)
        off = await bind(service, model, None, "acct_a")
        assert text(await ask(url, off)) != text(first)
        assert len(model.state["times"]) == 5

        usage = service.runtime.meter.drain()
        cached = sum(u.cached_calls for u in usage)
        assert cached == 2 and sum(u.calls for u in usage) == 7
    finally:
        await service.stop()


async def test_read_only_never_keeps_and_answers_outlive_a_restart(
    tmp_path: Path, model: FakeOpenAIServer
) -> None:
    service, url = await started(tmp_path)
    try:
        reader = await bind(service, model, {"mode": "read", "ttl": 3600}, "acct_a")
        unkept = text(await ask(url, reader))
        assert text(await ask(url, reader)) != unkept  # read: nothing was kept
        writer = await bind(service, model, READ_WRITE, "acct_a")
        kept = text(await ask(url, writer))
    finally:
        await service.stop()

    service, url = await started(tmp_path)  # the same store, a new process's worth
    try:
        after = await bind(service, model, READ_WRITE, "acct_a")
        assert text(await ask(url, after)) == kept
        fresh_only = await bind(service, model, {"mode": "read", "ttl": 1}, "acct_a")
        await asyncio.sleep(1.1)
        assert text(await ask(url, fresh_only)) != kept  # older than its TTL
    finally:
        await service.stop()


def test_the_key_holds_account_model_endpoint_request_and_trial() -> None:
    sut = SutRef(model="m", provider="openai", api_base=None)
    base = cache_key("a", sut, BODY, 0)
    assert cache_key("a", sut, {**BODY, "stream": False}, 0) == base  # delivery only
    assert cache_key("b", sut, BODY, 0) != base
    assert cache_key("a", sut, BODY, 1) != base
    assert cache_key("a", sut.model_copy(update={"model": "n"}), BODY, 0) != base
    assert cache_key("a", sut.model_copy(update={"api_base": "http://x"}), BODY, 0) != base
    assert cache_key("a", sut, {**BODY, "tools": [{"type": "function"}]}, 0) != base
