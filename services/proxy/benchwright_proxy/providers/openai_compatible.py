"""The fast path: any server that speaks OpenAI's chat API (vLLM, Ollama, llama.cpp).

Each ``api_base`` is one upstream (``providers/upstream.py``): 429s, 5xx and
dropped connections are retried with backoff that honours ``Retry-After`` up
to an attempt ceiling, and while it answers 429 fewer calls go to it at once.
Streams are passed on as the upstream's bytes arrive.
"""

from collections.abc import AsyncGenerator
from typing import Any

import httpx

from benchwright_proxy.providers import ProviderError
from benchwright_proxy.providers.auth import UpstreamAuth
from benchwright_proxy.providers.upstream import (
    MAX_ATTEMPTS,
    TransientUpstreamError,
    Upstream,
    failure,
)
from benchwright_proxy.sse import with_usage_requested
from benchwright_shared.contracts import SutRef

__all__ = ["MAX_ATTEMPTS", "OpenAICompatibleProvider"]


class OpenAICompatibleProvider:
    name = "openai_compatible"

    def __init__(
        self,
        *,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 8.0,
        max_concurrency: int = 64,
        max_attempts: int = MAX_ATTEMPTS,
    ) -> None:
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(600.0, connect=10.0),
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
        )
        self._upstream_args: dict[str, Any] = {
            "max_concurrency": max_concurrency,
            "max_attempts": max_attempts,
            "backoff_initial_s": backoff_initial_s,
            "backoff_max_s": backoff_max_s,
        }
        self._upstreams: dict[str, Upstream] = {}

    def upstream(self, sut: SutRef) -> Upstream:
        """The upstream ``sut`` is served by: one per ``api_base``."""
        assert sut.api_base
        base = sut.api_base.rstrip("/")
        upstream = self._upstreams.get(base)
        if upstream is None:
            upstream = self._upstreams[base] = Upstream(base, **self._upstream_args)
        return upstream

    async def _post(
        self, url: str, body: dict[str, Any], auth: UpstreamAuth | None
    ) -> dict[str, Any]:
        try:
            response = await self._client.post(
                url,
                json=body,
                headers=auth.headers if auth else None,
                params=auth.params if auth else None,
            )
        except httpx.TransportError as exc:
            raise TransientUpstreamError(
                502, f"upstream unreachable: {type(exc).__name__}"
            ) from None
        if response.status_code >= 400:
            raise failure(response.status_code, response.text[:1000], response.headers)
        result: dict[str, Any] = response.json()
        return result

    async def _open(
        self, url: str, body: dict[str, Any], auth: UpstreamAuth | None
    ) -> httpx.Response:
        request = self._client.build_request(
            "POST",
            url,
            json=body,
            headers=auth.headers if auth else None,
            params=auth.params if auth else None,
        )
        try:
            response = await self._client.send(request, stream=True)
        except httpx.TransportError as exc:
            raise TransientUpstreamError(
                502, f"upstream unreachable: {type(exc).__name__}"
            ) from None
        if response.status_code >= 400:
            try:
                detail = (await response.aread())[:1000].decode(errors="replace")
            except httpx.TransportError:
                detail = f"HTTP {response.status_code}"
            finally:
                await response.aclose()
            raise failure(response.status_code, detail, response.headers)
        return response

    async def chat(
        self, sut: SutRef, body: dict[str, Any], auth: UpstreamAuth | None = None
    ) -> dict[str, Any]:
        assert sut.api_base
        url = sut.api_base.rstrip("/") + "/chat/completions"
        payload = {**body, "model": sut.model}
        return await self.upstream(sut).call(lambda: self._post(url, payload, auth))

    async def stream(
        self, sut: SutRef, body: dict[str, Any], auth: UpstreamAuth | None = None
    ) -> AsyncGenerator[bytes, None]:
        assert sut.api_base
        url = sut.api_base.rstrip("/") + "/chat/completions"
        payload = with_usage_requested({**body, "model": sut.model})
        response, permit = await self.upstream(sut).open(lambda: self._open(url, payload, auth))
        try:
            async for data in response.aiter_bytes():
                yield data
        except httpx.RequestError as exc:
            raise ProviderError(502, f"upstream stream broke: {type(exc).__name__}") from None
        finally:
            permit.release()
            await response.aclose()

    def cost_micros(self, sut: SutRef, usage: dict[str, Any]) -> int:
        return 0  # a self-hosted server has no per-token price we know of

    async def close(self) -> None:
        await self._client.aclose()
