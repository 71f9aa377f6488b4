"""Hosted providers through LiteLLM (OpenRouter, Together): translation and pricing."""

import os
from typing import Any

from benchwright_proxy.providers import ProviderError
from benchwright_shared.contracts import SutRef
from benchwright_shared.money import dollars_to_micros
from benchwright_shared.settings import Settings


class LiteLLMProvider:
    name = "litellm"

    def __init__(self, settings: Settings) -> None:
        # LiteLLM otherwise fetches price maps and tokenizers from the internet.
        os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        try:
            import litellm
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ProviderError(
                501, "provider needs LiteLLM: pip install 'benchwright[providers]'"
            ) from exc
        self._litellm = litellm
        self._keys = {
            "openrouter": settings.openrouter_api_key,
            "together": settings.together_api_key,
        }

    def _route(self, sut: SutRef) -> str:
        prefix = {"openrouter": "openrouter", "together": "together_ai"}[sut.provider]
        return f"{prefix}/{sut.model}"

    async def chat(self, sut: SutRef, body: dict[str, Any]) -> dict[str, Any]:
        key = self._keys.get(sut.provider)
        if not key:
            raise ProviderError(
                424, f"no {sut.provider} key is configured (BW_{sut.provider.upper()}_API_KEY)"
            )
        params = {k: v for k, v in body.items() if k not in {"model", "stream"}}
        try:
            response = await self._litellm.acompletion(
                model=self._route(sut), api_key=key, num_retries=0, **params
            )
        except Exception as exc:
            status = int(getattr(exc, "status_code", 502) or 502)
            raise ProviderError(status, f"{type(exc).__name__}: {exc}"[:1000]) from None
        result: dict[str, Any] = response.model_dump()
        return result

    def cost_micros(self, sut: SutRef, usage: dict[str, Any]) -> int:
        try:
            prompt_cost, completion_cost = self._litellm.cost_per_token(
                model=self._route(sut),
                prompt_tokens=int(usage.get("prompt_tokens", 0)),
                completion_tokens=int(usage.get("completion_tokens", 0)),
            )
        except Exception:
            return 0  # unknown price: recorded as zero, tokens are still recorded
        return dollars_to_micros(prompt_cost + completion_cost)

    async def close(self) -> None:
        return None
