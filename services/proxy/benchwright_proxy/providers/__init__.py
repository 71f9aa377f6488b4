"""Model providers, looked up by name.

A provider turns an OpenAI-shaped chat request into a call to the real model
and returns an OpenAI-shaped response with ``usage``, or streams OpenAI-shaped
Server-Sent Events with usage in the last chunk. Heavy providers (LiteLLM,
llama.cpp) are imported only when a run names them.
"""

from collections.abc import AsyncGenerator, Callable
from typing import Any, Protocol

from benchwright_proxy.providers.auth import UpstreamAuth
from benchwright_proxy.settings import ProxySettings
from benchwright_shared.contracts import SutRef
from benchwright_shared.settings import Settings


class ProviderError(Exception):
    """The upstream failed; ``status`` is what the proxy answers with."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


class Provider(Protocol):
    name: str

    async def chat(
        self, sut: SutRef, body: dict[str, Any], auth: UpstreamAuth | None = None
    ) -> dict[str, Any]:
        """Send a chat completion request; return the OpenAI-shaped response.

        ``auth`` is the run's credentials for the upstream (from the vault), if any.
        """

    def stream(
        self, sut: SutRef, body: dict[str, Any], auth: UpstreamAuth | None = None
    ) -> AsyncGenerator[bytes, None]:
        """Send a streaming request; yield its Server-Sent Events as they arrive.

        Asks the upstream for usage in the stream. Nothing is sent before the
        first item is awaited; a failure before the first event raises
        ``ProviderError``, and so does one later (the caller ends the stream).
        """

    def cost_micros(self, sut: SutRef, usage: dict[str, Any]) -> int:
        """What the call cost, in micro-dollars."""

    async def close(self) -> None: ...


ProviderFactory = Callable[[Settings, ProxySettings], Provider]


def _openai_compatible(settings: Settings, proxy: ProxySettings) -> Provider:
    from benchwright_proxy.providers.openai_compatible import OpenAICompatibleProvider

    return OpenAICompatibleProvider(
        max_concurrency=proxy.upstream_concurrency, max_attempts=proxy.upstream_max_attempts
    )


def _litellm(settings: Settings, proxy: ProxySettings) -> Provider:
    from benchwright_proxy.providers.litellm_provider import LiteLLMProvider

    return LiteLLMProvider(
        settings,
        max_concurrency=proxy.upstream_concurrency,
        max_attempts=proxy.upstream_max_attempts,
    )


def _local(settings: Settings, proxy: ProxySettings) -> Provider:
    from benchwright_proxy.providers.local import LocalModelProvider

    return LocalModelProvider(settings)


PROVIDERS: dict[str, ProviderFactory] = {
    "openai_compatible": _openai_compatible,
    "openrouter": _litellm,
    "together": _litellm,
    "local": _local,
}

# Names a user may give for a server they run themselves; all speak OpenAI's API.
SELF_HOSTED = {"openai_compatible", "vllm", "ollama", "llamacpp", "openai"}


def provider_key(sut: SutRef) -> str:
    """Which registered provider serves ``sut``: an ``api_base`` means a direct call."""
    if sut.api_base:
        return "openai_compatible"
    return sut.provider


def known_provider(sut: SutRef) -> bool:
    return provider_key(sut) in PROVIDERS


# Providers that serve one call at a time: more concurrent tasks only queue.
SERIAL_PROVIDERS = {"local"}


def max_concurrency(sut: SutRef) -> int | None:
    return 1 if provider_key(sut) in SERIAL_PROVIDERS else None
