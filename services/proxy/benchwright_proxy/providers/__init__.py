"""Model providers, looked up by name.

A provider turns an OpenAI-shaped chat request into a call to the real model
and returns an OpenAI-shaped response with ``usage``, or streams OpenAI-shaped
Server-Sent Events with usage in the last chunk. Heavy providers (LiteLLM,
llama.cpp) are imported only when a run names them, by ``providers.registry``
(which names them all): this package holds only what every provider module
shares, so none of them imports a module that imports it back.
"""

from collections.abc import AsyncGenerator
from typing import Any, Protocol

from benchwright_proxy.providers.auth import UpstreamAuth
from benchwright_shared.contracts import SutRef
from benchwright_shared.refusal import Refused


class ProviderError(Refused):
    """The model provider failed, or cannot be reached at all: a refusal with its cause.

    ``status`` is what the proxy answers with (the upstream's own, when it answered),
    ``detail`` what went wrong in the upstream's or the proxy's words, and ``code`` the
    kind of failure, which the proxy's OpenAI-shaped error carries as its ``type``:
    ``upstream_error`` unless the raiser knows better (``provider_crashed``,
    ``unknown_provider``, ...). Over the bus it is a problem like any refusal.
    """

    detail: str
    code: str

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        code: str = "upstream_error",
        field: str | None = None,
    ) -> None:
        super().__init__(status, None, detail, field=field, code=code)


def unknown_provider(sut: SutRef) -> ProviderError:
    return ProviderError(
        400, f"unknown provider {sut.provider!r}", code="unknown_provider", field="sut.provider"
    )


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
