"""The OpenAI-compatible endpoint scorers call: ``POST /v1/chat/completions``.

The caller presents the run's fake key; the proxy finds the run's model and
calls it with the real credentials, which never leave this process.
"""

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from benchwright_proxy.domain import InvalidProxyKeyError, ModelBinding
from benchwright_proxy.pricing import call_cost_micros
from benchwright_proxy.providers import PROVIDERS, Provider, ProviderError, provider_key
from benchwright_proxy.usage import CallRecord
from benchwright_shared.contracts import SutRef
from benchwright_shared.settings import Settings

Authenticate = Callable[[str], Awaitable[ModelBinding]]
RecordUsage = Callable[[CallRecord], None]


def _error(status: int, message: str, kind: str) -> JSONResponse:
    # OpenAI's error shape, so any OpenAI client library reports it sensibly.
    return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status)


class ProviderPool:
    """One instance per provider, created on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._providers: dict[str, Provider] = {}
        self._lock = asyncio.Lock()

    async def get(self, sut: SutRef) -> Provider:
        name = provider_key(sut)
        if name not in PROVIDERS:
            raise ProviderError(400, f"unknown provider {sut.provider!r}")
        async with self._lock:
            if name not in self._providers:
                self._providers[name] = await asyncio.to_thread(PROVIDERS[name], self.settings)
            return self._providers[name]

    async def close(self) -> None:
        for provider in self._providers.values():
            await provider.close()


def build_http_app(
    pool: ProviderPool, authenticate: Authenticate, record_usage: RecordUsage
) -> FastAPI:
    app = FastAPI(title="Benchwright model proxy", docs_url=None, redoc_url=None)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Any:
        header = request.headers.get("authorization", "")
        if not header.lower().startswith("bearer "):
            return _error(401, "missing bearer proxy key", "authentication_error")
        try:
            binding = await authenticate(header[7:].strip())
        except InvalidProxyKeyError as exc:
            return _error(401, str(exc), "authentication_error")
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "body is not JSON", "invalid_request_error")
        if not isinstance(body, dict):
            return _error(400, "body must be a JSON object", "invalid_request_error")
        if body.get("stream"):
            return _error(
                400, "streaming is not supported by this proxy yet", "invalid_request_error"
            )
        sut = SutRef.model_validate(binding.sut)
        started = time.perf_counter()
        status = 200
        usage: dict[str, Any] = {}
        provider: Provider | None = None
        try:
            provider = await pool.get(sut)
            result = await provider.chat(sut, body)
            usage = result.get("usage") or {}
            return result
        except ProviderError as exc:
            status = exc.status
            return _error(exc.status, exc.detail, "upstream_error")
        finally:
            record_usage(
                CallRecord(
                    run_id=binding.run_id,
                    account=binding.account,
                    model_id=binding.model_id,
                    provider=sut.provider,
                    prompt_tokens=int(usage.get("prompt_tokens") or 0),
                    completion_tokens=int(usage.get("completion_tokens") or 0),
                    cost_micros=call_cost_micros(pool.settings.model_prices, sut, usage, provider),
                    latency_ms=int((time.perf_counter() - started) * 1000),
                    ok=status < 400,
                )
            )

    return app
