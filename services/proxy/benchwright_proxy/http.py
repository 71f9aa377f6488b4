"""The OpenAI-compatible endpoint scorers call: ``POST /v1/chat/completions``; over it,
Anthropic's ``POST /v1/messages`` (``anthropic_messages``) and OpenAI's
``POST /v1/responses`` (``openai_responses``), for agents that speak only one of those.

The caller presents the run's fake key; the proxy finds the run's model and
calls it with the real credentials, which never leave this process. With
``"stream": true`` the answer is Server-Sent Events, passed on as they arrive:
a failure before the first event is an ordinary OpenAI-shaped error response,
one after it ends the stream with an ``error`` event.
"""

import asyncio
import json
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from benchwright_proxy import openai_responses
from benchwright_proxy.anthropic_messages import anthropic_error, from_chat, to_chat
from benchwright_proxy.anthropic_messages import ready as messages_ready
from benchwright_proxy.application import model_id_for
from benchwright_proxy.calls import RecentCalls, call_key
from benchwright_proxy.ceilings import Attribution, TaskSpend, attribution, reached, stamp
from benchwright_proxy.domain import Caller, InvalidProxyKeyError, ModelBinding, Role
from benchwright_proxy.pricing import call_cost_micros
from benchwright_proxy.providers import Provider, ProviderError, unknown_provider
from benchwright_proxy.providers.auth import UpstreamAuth
from benchwright_proxy.providers.registry import PROVIDERS, provider_key
from benchwright_proxy.response_cache import Answers, cache_key, judge_cache, reads, writes
from benchwright_proxy.settings import ProxySettings
from benchwright_proxy.sse import UsageTap, client_wants_usage, error_event
from benchwright_proxy.traces import CallSpan, CallTraces
from benchwright_proxy.usage import CallRecord
from benchwright_shared.contracts import SutRef
from benchwright_shared.settings import Settings

log = logging.getLogger(__name__)

Authenticate = Callable[[str], Awaitable[Caller]]
# The run's credentials for an upstream (vault secrets pinned at attach), if any.
Credentials = Callable[[ModelBinding, SutRef], Awaitable[UpstreamAuth | None]]
RecordUsage = Callable[[CallRecord], None]

STREAM_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def _error(status: int, message: str, kind: str, code: str | None = None) -> JSONResponse:
    # OpenAI's error shape, so any OpenAI client library reports it sensibly.
    error: dict[str, Any] = {"message": message, "type": kind}
    if code is not None:
        error["code"] = code
    return JSONResponse({"error": error}, status_code=status)


class ProviderPool:
    """One instance per provider, created on first use."""

    def __init__(self, settings: Settings, proxy_settings: ProxySettings | None = None) -> None:
        self.settings = settings
        self.proxy_settings = proxy_settings or ProxySettings()
        self._providers: dict[str, Provider] = {}
        self._lock = asyncio.Lock()

    async def get(self, sut: SutRef) -> Provider:
        name = provider_key(sut)
        provider = self._providers.get(name)
        if provider is not None:
            return provider
        if name not in PROVIDERS:
            raise unknown_provider(sut)
        async with self._lock:
            if name not in self._providers:
                self._providers[name] = await asyncio.to_thread(
                    PROVIDERS[name], self.settings, self.proxy_settings
                )
            return self._providers[name]

    async def close(self) -> None:
        for provider in self._providers.values():
            await provider.close()


class _Call:
    """One call's bookkeeping: turns what the upstream said into a ``CallRecord``."""

    __slots__ = (
        "at",
        "auth",
        "binding",
        "finished",
        "pool",
        "provider",
        "record_usage",
        "role",
        "span",
        "spend",
        "stamp",
        "started",
        "sut",
    )

    def __init__(
        self,
        binding: ModelBinding,
        sut: SutRef,
        pool: ProviderPool,
        record_usage: RecordUsage,
        auth: UpstreamAuth | None = None,
        spend: TaskSpend | None = None,
        at: Attribution | None = None,
        span: CallSpan | None = None,
        role: Role = "model",
    ) -> None:
        self.binding = binding
        self.sut = sut
        self.role = role
        self.auth = auth
        self.pool = pool
        self.record_usage = record_usage
        self.spend = spend
        self.at = at
        # The call's trace span, when the run is traced.
        self.span = span
        self.provider: Provider | None = None
        self.started = time.perf_counter()
        self.finished = False
        # What the answer says about its cost (``ceilings.stamp``), once it is known.
        self.stamp: dict[str, str] = {}

    def finish(
        self,
        usage: dict[str, Any],
        ok: bool,
        *,
        cached: bool = False,
        answer: dict[str, Any] | None = None,
        response_model: str | None = None,
        error_type: str | None = None,
    ) -> None:
        """Record the call; only the first of several calls counts. A ``cached`` call
        was answered from the response cache: no tokens spent, nothing to pay.
        ``answer``, ``response_model`` and ``error_type`` are for the call's span."""
        if self.finished:
            return
        self.finished = True
        if cached:
            usage = {}
        cost = call_cost_micros(self.pool.settings.model_prices, self.sut, usage, self.provider)
        self.record_usage(
            CallRecord(
                run_id=self.binding.run_id,
                account=self.binding.account,
                model_id=model_id_for(self.sut),
                provider=self.sut.provider,
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
                cost_micros=cost,
                latency_ms=int((time.perf_counter() - self.started) * 1000),
                ok=ok,
                cached=cached,
                role=self.role,
            )
        )
        spent = over = None
        if self.spend is not None and self.at is not None:
            spent = self.spend.add(self.binding.run_id, self.at, cost)
            over = reached(spent, self.binding.ceilings, passed=True)
        self.stamp = stamp(cost, usage, spent, over)
        if cached:
            self.stamp["x-benchwright-cache"] = "hit"
        if self.span is not None:
            self.span.end(
                usage,
                ok,
                answer=answer,
                response_model=response_model,
                error_type=error_type,
                cached=cached,
            )


Keep = Callable[[dict[str, Any]], Awaitable[None]]


async def _complete(call: _Call, body: dict[str, Any], keep: Keep | None = None) -> Response:
    try:
        call.provider = await call.pool.get(call.sut)
        result = await call.provider.chat(call.sut, body, call.auth)
    except ProviderError as exc:
        call.finish({}, False, error_type=exc.code)
        return _error(exc.status, exc.detail, exc.code)
    except BaseException as exc:
        call.finish({}, False, error_type=type(exc).__name__)
        raise
    call.finish(result.get("usage") or {}, True, answer=result)
    if keep is not None:
        try:
            await keep(result)
        except Exception:  # the answer is good whether or not it could be kept
            log.exception("could not keep an answer for run %s", call.binding.run_id)
    return JSONResponse(result, headers=call.stamp)


async def _cached(call: _Call, answer: dict[str, Any]) -> Response:
    call.finish({}, True, cached=True, answer=answer)
    return JSONResponse(answer, headers=call.stamp)


async def _stream(call: _Call, body: dict[str, Any]) -> Response:
    # Usage is read from the stream's last chunk, which the proxy asks every
    # upstream for; an upstream that sends none gets the call counted with no
    # tokens and no cost: a guess from the text would be billed as a fact.
    tap = UsageTap(forward_usage_chunk=client_wants_usage(body))
    try:
        call.provider = await call.pool.get(call.sut)
        frames = call.provider.stream(call.sut, body, call.auth)
    except ProviderError as exc:
        call.finish({}, False, error_type=exc.code)
        return _error(exc.status, exc.detail, exc.code)
    first = b""
    try:
        # The status line waits for the first whole event, so that whatever
        # fails before it (a missing provider key, the connection, a 429 past
        # its retries) is still an ordinary error response.
        while not first:
            first = tap.feed(await anext(frames))
    except StopAsyncIteration:
        first = tap.flush()
        if not first:
            call.finish(tap.usage, False)
            return _error(502, "the upstream answered with an empty stream", "upstream_error")
    except ProviderError as exc:
        call.finish(tap.usage, False, error_type=exc.code)
        await frames.aclose()
        return _error(exc.status, exc.detail, exc.code)
    except BaseException:
        call.finish(tap.usage, False)
        await frames.aclose()
        raise
    return _EventStream(call, first, frames, tap)


class _EventStream(StreamingResponse):
    """An SSE response that closes its upstream however it ends, a client hanging up included."""

    def __init__(
        self, call: _Call, first: bytes, frames: AsyncGenerator[bytes, None], tap: UsageTap
    ) -> None:
        self._relay = _relay(call, first, frames, tap)
        super().__init__(self._relay, media_type="text/event-stream", headers=STREAM_HEADERS)
        self._call, self._frames, self._tap = call, frames, tap

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self._relay.aclose()
            # When the relay never ran (the client left before the status line went out).
            self._call.finish(self._tap.usage, False)
            await self._frames.aclose()


async def _relay(
    call: _Call, first: bytes, frames: AsyncGenerator[bytes, None], tap: UsageTap
) -> AsyncGenerator[bytes, None]:
    ok = False
    error_type: str | None = None
    try:
        if first:
            yield first
        async for data in frames:
            out = tap.feed(data)
            if out:
                yield out
        rest = tap.flush()
        if rest:
            yield rest
        ok = True
    except ProviderError as exc:
        error_type = exc.code
        yield error_event(exc.status, exc.detail)
    except Exception as exc:
        error_type = type(exc).__name__
        log.exception("stream for run %s failed", call.binding.run_id)
        yield error_event(502, f"the proxy failed mid-stream: {type(exc).__name__}")
    finally:
        # Recorded first: a client that hung up cancels this generator, and an
        # await here may be cancelled again before it returns.
        call.finish(tap.usage, ok, response_model=tap.model, error_type=error_type)
        await frames.aclose()  # the upstream stops too


async def _no_credentials(binding: ModelBinding, sut: SutRef) -> UpstreamAuth | None:
    return None


def build_http_app(
    pool: ProviderPool,
    authenticate: Authenticate,
    record_usage: RecordUsage,
    credentials: Credentials = _no_credentials,
    recent: RecentCalls | None = None,
    spend: TaskSpend | None = None,
    answers: Answers | None = None,
    traces: CallTraces | None = None,
) -> FastAPI:
    app = FastAPI(title="Benchwright model proxy", docs_url=None, redoc_url=None)
    recent = recent or RecentCalls()

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        header = request.headers.get("authorization", "")
        if not header.lower().startswith("bearer "):
            return _error(401, "missing bearer proxy key", "authentication_error")
        raw = await request.body()
        try:
            body = json.loads(raw)
        except ValueError:
            return _error(400, "body is not JSON", "invalid_request_error")
        if not isinstance(body, dict):
            return _error(400, "body must be a JSON object", "invalid_request_error")
        return await answer(request, header[7:].strip(), body, raw)

    @app.post("/v1/messages")
    async def messages(request: Request) -> Response:
        """Anthropic's Messages API over the same path: translated to a chat completion
        and back (``anthropic_messages``), metered and capped as any call of the run."""
        header = request.headers.get("authorization", "")
        key = request.headers.get("x-api-key") or (
            header[7:].strip() if header.lower().startswith("bearer ") else ""
        )
        if not key:
            return anthropic_error(401, "missing proxy key (x-api-key)", "authentication_error")
        await messages_ready()
        try:
            body = json.loads(await request.body())
            chat = to_chat(body)
        except ValueError as exc:
            return anthropic_error(400, str(exc), "invalid_request_error")
        raw = json.dumps(chat.body, sort_keys=True).encode()
        return from_chat(await answer(request, key, chat.body, raw), chat)

    @app.post("/v1/responses")
    async def responses(request: Request) -> Response:
        """OpenAI's Responses API over the same path: translated to a chat completion
        and back (``openai_responses``), metered and capped as any call of the run."""
        header = request.headers.get("authorization", "")
        if not header.lower().startswith("bearer "):
            return _error(401, "missing bearer proxy key", "authentication_error")
        await openai_responses.ready()
        try:
            chat = openai_responses.to_chat(json.loads(await request.body()))
        except ValueError as exc:
            return openai_responses.refused(str(exc))
        raw = json.dumps(chat.body, sort_keys=True).encode()
        answered = await answer(request, header[7:].strip(), chat.body, raw)
        return openai_responses.from_chat(answered, chat)

    async def answer(request: Request, key: str, body: dict[str, Any], raw: bytes) -> Response:
        """One chat completion for the run whose proxy key (or judge key) is ``key``."""
        try:
            caller = await authenticate(key)
        except InvalidProxyKeyError as exc:
            return _error(401, str(exc), "authentication_error")
        binding = caller.binding
        if caller.role == "judge":
            judge = binding.judge_named(body.get("model"))
            if judge is None:
                named = ", ".join(f"{j['provider']}/{j['model']}" for j in binding.judges or [])
                return _error(
                    400,
                    f"model {body.get('model')!r} is not one of this run's judges ({named})",
                    "invalid_request_error",
                )
            sut = SutRef.model_validate(judge)
        else:
            sut = SutRef.model_validate(binding.sut)
        at = attribution(
            request.headers.get("x-benchwright-task"), request.headers.get("x-benchwright-trial")
        )
        rows, trials = binding.task_bounds
        if at is not None and (
            (rows is not None and at.task >= rows) or (trials is not None and at.trial >= trials)
        ):
            return _error(
                400,
                f"task {at.task} trial {at.trial} is not one of this run's "
                f"({rows} rows, {trials} trial(s) a task)",
                "invalid_request_error",
            )
        if spend is not None and at is not None:
            ceiling = reached(spend.spent(binding.run_id, at), binding.ceilings)
            if ceiling is not None:
                return _error(
                    402,
                    f"task {at.task} (trial {at.trial}) reached its {ceiling} ceiling: "
                    "no more model calls for it",
                    "limit_exceeded",
                    code=ceiling,
                )
        auth = await credentials(binding, sut)
        span = traces.start(binding, sut, body, at) if traces is not None else None
        call = _Call(binding, sut, pool, record_usage, auth, spend, at, span, caller.role)
        if body.get("stream"):
            return await _stream(call, body)
        keep: Keep | None = None
        # A judge's answers are always kept and read again: the same graded output under
        # the same judge and prompt gets the same grade, and a rescore pays nothing.
        setting = (
            judge_cache(binding.cache_setting) if caller.role == "judge" else binding.cache_setting
        )
        if answers is not None and (reads(setting) or writes(setting)):
            assert setting is not None
            # A judge call's ``model`` only picks the judge, which ``sut`` already names:
            # the same judge asked with or without it gives the same grade.
            asked = (
                {k: v for k, v in body.items() if k != "model"} if caller.role == "judge" else body
            )
            cached_key = cache_key(binding.account, sut, asked, at.trial if at else 0)
            if reads(setting):
                kept = await answers.get(cached_key, float(setting["ttl"]))
                if kept is not None:
                    return await _cached(call, kept)
            if writes(setting):
                store = answers

                async def keep(answer: dict[str, Any]) -> None:
                    await store.put(cached_key, binding.account, answer, float(setting["ttl"]))

        call_id = request.headers.get("x-benchwright-call-id")
        if call_id:
            once = call_key(binding.run_id, call_id, raw)
            return await recent.once(once, lambda: _complete(call, body, keep))
        return await _complete(call, body, keep)

    return app
