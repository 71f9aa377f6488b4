"""The direct provider retries what is transient and honours Retry-After."""

import pytest

from benchwright_proxy.providers import ProviderError
from benchwright_proxy.providers.openai_compatible import MAX_ATTEMPTS, OpenAICompatibleProvider
from benchwright_shared.contracts import SutRef
from tests.support.fake_openai import FakeOpenAIServer

BODY = {"messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def provider() -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(backoff_initial_s=0.01, backoff_max_s=0.05)


async def test_rate_limits_are_retried_after_the_time_the_server_asks(
    provider: OpenAICompatibleProvider,
) -> None:
    server = FakeOpenAIServer(failures=[(429, {"Retry-After": "0.4"}), (503, {})]).start()
    try:
        sut = SutRef(model="m", provider="vllm", api_base=server.base_url)
        result = await provider.chat(sut, BODY)
        assert result["choices"][0]["message"]["content"]
        assert len(server.state["times"]) == 3
        assert server.state["times"][1] - server.state["times"][0] >= 0.35  # waited as asked
    finally:
        server.stop()
        await provider.close()


async def test_the_attempt_ceiling_holds(provider: OpenAICompatibleProvider) -> None:
    server = FakeOpenAIServer(failures=[(500, {})] * 10).start()
    try:
        sut = SutRef(model="m", provider="vllm", api_base=server.base_url)
        with pytest.raises(ProviderError) as info:
            await provider.chat(sut, BODY)
        assert info.value.status == 500
        assert len(server.state["times"]) == MAX_ATTEMPTS
    finally:
        server.stop()
        await provider.close()


async def test_client_errors_are_not_retried(provider: OpenAICompatibleProvider) -> None:
    server = FakeOpenAIServer(failures=[(400, {})]).start()
    try:
        sut = SutRef(model="m", provider="vllm", api_base=server.base_url)
        with pytest.raises(ProviderError) as info:
            await provider.chat(sut, BODY)
        assert info.value.status == 400 and len(server.state["times"]) == 1
    finally:
        server.stop()
        await provider.close()
