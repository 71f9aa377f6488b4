"""The model providers by name, and which one serves a system under test.

Each factory imports its provider's module when a run first names it, so a heavy
one (LiteLLM, llama.cpp) costs nothing until then. Adding a provider is adding a
module beside this one and a line in ``PROVIDERS``.
"""

from collections.abc import Callable

from benchwright_proxy.providers import Provider
from benchwright_proxy.settings import ProxySettings
from benchwright_shared.contracts import SutRef
from benchwright_shared.settings import Settings

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


# Providers that need a key, and the deployment setting that may hold it (an account
# may bring its own as a secret for the provider's host instead).
KEYED_PROVIDERS = {"openrouter": "openrouter_api_key", "together": "together_api_key"}


def deployment_key(settings: Settings, sut: SutRef) -> str | None:
    """The deployment's key for ``sut``'s provider, when it needs one and has one."""
    setting = KEYED_PROVIDERS.get(provider_key(sut))
    value = getattr(settings, setting, None) if setting else None
    return value if isinstance(value, str) and value else None


def needs_key(sut: SutRef) -> bool:
    return provider_key(sut) in KEYED_PROVIDERS


# Providers that serve one call at a time: more concurrent tasks only queue.
SERIAL_PROVIDERS = {"local"}


def max_concurrency(sut: SutRef) -> int | None:
    return 1 if provider_key(sut) in SERIAL_PROVIDERS else None
