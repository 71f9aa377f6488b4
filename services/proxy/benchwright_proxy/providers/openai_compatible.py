"""The fast path: any server that speaks OpenAI's chat API (vLLM, Ollama, llama.cpp).

Rate limits and transient upstream failures (429, 5xx, dropped connections) are
retried with backoff that honours ``Retry-After``, up to an attempt ceiling.
"""

from typing import Any

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)

from benchwright_proxy.providers import ProviderError
from benchwright_shared.contracts import SutRef

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_ATTEMPTS = 5
# A server asking for longer than this is treated as down rather than waited on.
MAX_RETRY_AFTER_S = 30.0


class _Transient(Exception):
    """An upstream answer worth another attempt."""

    def __init__(self, status: int, detail: str, retry_after: float | None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.retry_after = retry_after


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER_S)
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


class OpenAICompatibleProvider:
    name = "openai_compatible"

    def __init__(self, *, backoff_initial_s: float = 0.5, backoff_max_s: float = 8.0) -> None:
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(600.0, connect=10.0),
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
        )
        self._backoff = wait_exponential_jitter(multiplier=backoff_initial_s, max=backoff_max_s)

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, _Transient) and error.retry_after is not None:
            return error.retry_after
        return float(self._backoff(state))

    async def _post(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            response = await self._client.post(url, json=body)
        except httpx.TransportError as exc:
            raise _Transient(502, f"upstream unreachable: {type(exc).__name__}", None) from None
        if response.status_code in RETRY_STATUSES:
            raise _Transient(response.status_code, response.text[:1000], _retry_after(response))
        if response.status_code >= 400:
            raise ProviderError(response.status_code, response.text[:1000])
        result: dict[str, Any] = response.json()
        return result

    async def chat(self, sut: SutRef, body: dict[str, Any]) -> dict[str, Any]:
        assert sut.api_base
        url = sut.api_base.rstrip("/") + "/chat/completions"
        payload = {**body, "model": sut.model}
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(MAX_ATTEMPTS),
                wait=self._wait,
                retry=retry_if_exception_type(_Transient),
                reraise=True,
            ):
                with attempt:
                    return await self._post(url, payload)
        except _Transient as exc:
            raise ProviderError(exc.status, exc.detail) from None
        raise AssertionError("unreachable: tenacity either returns or raises")

    def cost_micros(self, sut: SutRef, usage: dict[str, Any]) -> int:
        return 0  # a self-hosted server has no per-token price we know of

    async def close(self) -> None:
        await self._client.aclose()
