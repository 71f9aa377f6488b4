"""Hosted providers through LiteLLM (OpenRouter, Together): translation and pricing.

Each hosted provider is one upstream (``providers/upstream.py``): LiteLLM's own
retries are off, ours honour ``Retry-After`` and lower the concurrency toward
a provider that answers 429.
"""

import os
from collections.abc import AsyncGenerator, Mapping
from typing import Any

from benchwright_proxy.providers import ProviderError
from benchwright_proxy.providers.auth import UpstreamAuth, upstream_host
from benchwright_proxy.providers.upstream import (
    MAX_ATTEMPTS,
    TransientUpstreamError,
    Upstream,
    failure,
)
from benchwright_proxy.sse import DONE, event, with_usage_requested
from benchwright_shared.contracts import SutRef
from benchwright_shared.money import dollars_to_micros
from benchwright_shared.settings import Settings

ROUTE_PREFIX = {"openrouter": "openrouter", "together": "together_ai"}


def _headers(exc: Exception) -> Mapping[str, str] | None:
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    return headers if isinstance(headers, Mapping) else None


def _as_failure(exc: Exception) -> ProviderError | TransientUpstreamError:
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) and status >= 400 else 502
    return failure(status, f"{type(exc).__name__}: {exc}"[:1000], _headers(exc))


def import_litellm() -> Any:
    """LiteLLM, imported offline: it otherwise fetches price maps and tokenizers from
    the internet (and waits on them where there is none)."""
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ProviderError(
            501,
            "provider needs LiteLLM: pip install 'benchwright[providers]'",
            code="provider_not_installed",
        ) from exc
    litellm.suppress_debug_info = True  # else each error prints a help banner to stdout
    return litellm


class LiteLLMProvider:
    name = "litellm"

    def __init__(
        self,
        settings: Settings,
        *,
        max_concurrency: int = 64,
        max_attempts: int = MAX_ATTEMPTS,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 8.0,
        api_bases: dict[str, str] | None = None,
    ) -> None:
        self._litellm = import_litellm()
        self._keys = {
            "openrouter": settings.openrouter_api_key,
            "together": settings.together_api_key,
        }
        # Where each provider is reached, when not its public endpoint (a test's fake).
        self._api_bases = dict(api_bases or {})
        self._upstreams = {
            name: Upstream(
                name,
                max_concurrency=max_concurrency,
                max_attempts=max_attempts,
                backoff_initial_s=backoff_initial_s,
                backoff_max_s=backoff_max_s,
            )
            for name in ROUTE_PREFIX
        }

    def _route(self, sut: SutRef) -> str:
        return f"{ROUTE_PREFIX[sut.provider]}/{sut.model}"

    def upstream(self, sut: SutRef) -> Upstream:
        return self._upstreams[sut.provider]

    def _params(
        self, sut: SutRef, body: dict[str, Any], auth: UpstreamAuth | None
    ) -> dict[str, Any]:
        # The account's own secret for the provider's host wins over the deployment's key.
        key = (auth.bearer() if auth else None) or self._keys.get(sut.provider)
        if not key:
            raise ProviderError(
                424,
                f"no {sut.provider} key: add a secret for {upstream_host(sut)} "
                f"(POST /v1/secrets) or set BW_{sut.provider.upper()}_API_KEY",
                code="missing_credentials",
            )
        params = {k: v for k, v in body.items() if k not in {"model", "stream", "stream_options"}}
        params.update(model=self._route(sut), api_key=key, num_retries=0)
        extra = {k: v for k, v in (auth.headers if auth else {}).items() if k != "Authorization"}
        if extra:
            params["extra_headers"] = extra
        if sut.provider in self._api_bases:
            params["api_base"] = self._api_bases[sut.provider]
        return params

    async def _acompletion(self, params: dict[str, Any]) -> Any:
        try:
            return await self._litellm.acompletion(**params)
        except Exception as exc:
            raise _as_failure(exc) from None

    async def chat(
        self, sut: SutRef, body: dict[str, Any], auth: UpstreamAuth | None = None
    ) -> dict[str, Any]:
        params = self._params(sut, body, auth)
        response = await self.upstream(sut).call(lambda: self._acompletion(params))
        result: dict[str, Any] = response.model_dump()
        return result

    async def stream(
        self, sut: SutRef, body: dict[str, Any], auth: UpstreamAuth | None = None
    ) -> AsyncGenerator[bytes, None]:
        params = self._params(sut, body, auth)
        params.update(stream=True, stream_options=with_usage_requested(body)["stream_options"])
        chunks, permit = await self.upstream(sut).open(lambda: self._acompletion(params))
        try:
            async for chunk in chunks:
                yield event(chunk.model_dump(exclude_none=True))
            yield DONE
        except Exception as exc:
            # Mid-stream nothing is retried: the client already has part of the answer.
            error = _as_failure(exc)
            raise ProviderError(error.status, error.detail) from None
        finally:
            permit.release()
            close = getattr(chunks, "aclose", None)
            if close is not None:
                await close()

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
