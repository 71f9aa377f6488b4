"""The LiteLLM path, pointed at the fake: retries honour Retry-After, streams pass on."""

import importlib.util
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from benchwright_proxy.sse import UsageTap
from benchwright_shared.contracts import SutRef
from benchwright_shared.settings import Settings
from tests.support.fake_openai import FakeOpenAIServer, default_answer

if TYPE_CHECKING:
    from benchwright_proxy.providers.litellm_provider import LiteLLMProvider

pytestmark = [
    pytest.mark.slow,  # importing LiteLLM takes seconds
    pytest.mark.skipif(importlib.util.find_spec("litellm") is None, reason="LiteLLM not installed"),
]

SUT = SutRef(model="vendor/some-model", provider="openrouter")
BODY = {"messages": [{"role": "user", "content": "hi"}], "stream": True}


def provider_for(server: FakeOpenAIServer, tmp_path: Path) -> "LiteLLMProvider":
    from benchwright_proxy.providers.litellm_provider import LiteLLMProvider

    settings = Settings(data_dir=tmp_path, openrouter_api_key="sk-or-test")
    return LiteLLMProvider(
        settings, api_bases={"openrouter": server.base_url}, backoff_initial_s=0.01
    )


async def test_a_litellm_stream_arrives_chunk_by_chunk_with_usage(tmp_path: Path) -> None:
    upstream = FakeOpenAIServer(
        streaming=True,
        stream_chunk_delay_s=0.1,
        failures=[(429, {"Retry-After": "0.2"})],
    ).start()
    try:
        provider = provider_for(upstream, tmp_path)
        tap = UsageTap(forward_usage_chunk=False)
        started = time.monotonic()
        arrivals = []
        async for data in provider.stream(SUT, BODY):
            if out := tap.feed(data):
                arrivals.append((time.monotonic() - started, out))
        assert upstream.state["times"][1] - upstream.state["times"][0] >= 0.18  # Retry-After
        assert upstream.state["auth"] == {"Bearer sk-or-test"}  # the real key, server-side
        assert arrivals[-1][1] == b"data: [DONE]\n\n"
        text = b"".join(out for _, out in arrivals)
        assert b'"usage"' not in text  # asked for by the proxy, not the client
        assert tap.usage["completion_tokens"] == len(default_answer("").split())
        words = [t for t, out in arrivals if b'"content":"' in out and b'"content":""' not in out]
        assert len(words) == 7 and words[-1] - words[0] >= 0.5  # not buffered into one
        assert provider.upstream(SUT).limiter.limit < provider.upstream(SUT).limiter.ceiling
    finally:
        upstream.stop()


async def test_a_litellm_stream_that_breaks_raises_after_its_first_chunks(tmp_path: Path) -> None:
    from benchwright_proxy.providers import ProviderError

    upstream = FakeOpenAIServer(streaming=True, stream_break_after=2).start()
    try:
        provider = provider_for(upstream, tmp_path)
        received = []
        with pytest.raises(ProviderError) as info:
            async for data in provider.stream(SUT, BODY):
                received.append(data)
        assert received and info.value.status >= 500
        assert provider.upstream(SUT).limiter.in_flight == 0
    finally:
        upstream.stop()


async def test_a_litellm_call_without_a_key_is_refused(tmp_path: Path) -> None:
    from benchwright_proxy.providers import ProviderError
    from benchwright_proxy.providers.litellm_provider import LiteLLMProvider

    provider = LiteLLMProvider(Settings(data_dir=tmp_path))
    with pytest.raises(ProviderError) as info:
        async for _ in provider.stream(SUT, BODY):
            pass
    assert info.value.status == 424
