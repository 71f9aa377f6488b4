"""The fast path: any server that speaks OpenAI's chat API (vLLM, Ollama, llama.cpp)."""

from typing import Any

import httpx

from benchwright_proxy.providers import ProviderError
from benchwright_shared.contracts import SutRef


class OpenAICompatibleProvider:
    name = "openai_compatible"

    def __init__(self) -> None:
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(600.0, connect=10.0),
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
        )

    async def chat(self, sut: SutRef, body: dict[str, Any]) -> dict[str, Any]:
        assert sut.api_base
        url = sut.api_base.rstrip("/") + "/chat/completions"
        try:
            response = await self._client.post(url, json={**body, "model": sut.model})
        except httpx.HTTPError as exc:
            raise ProviderError(502, f"upstream unreachable: {type(exc).__name__}") from None
        if response.status_code >= 400:
            raise ProviderError(response.status_code, response.text[:1000])
        result: dict[str, Any] = response.json()
        return result

    def cost_micros(self, sut: SutRef, usage: dict[str, Any]) -> int:
        return 0  # a self-hosted server has no per-token price we know of

    async def close(self) -> None:
        await self._client.aclose()
