"""The local model's own process: llama.cpp behind a JSON-lines pipe.

The proxy starts it (``python -m benchwright_proxy.providers.local_worker``) and
talks to it over stdin/stdout, one request at a time, so that a native crash in
llama.cpp (a CPU feature the VM refuses, say) ends this process, never the
proxy. Protocol, one JSON object per line:

* out, first: ``{"hello": {"system_info": "..."}}`` (what llama.cpp was built with);
* in: ``{"id": 1, "model": "smollm2", "body": {...}, "stream": false}``, or
  ``{"cancel": 1}`` to stop a stream between tokens;
* out: ``{"id": 1, "result": {...}}`` | ``{"id": 1, "chunk": {...}}`` ... then
  ``{"id": 1, "end": true}`` | ``{"id": 1, "error": {"status": 400, "detail": "..."}}``.

Standard library and llama_cpp only: it must start fast and fail plainly.
"""

import json
import os
import queue
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

GENERATION_PARAMS = ("max_tokens", "temperature", "top_p", "stop", "seed")


class Worker:
    def __init__(self, models: dict[str, str], threads: int, n_ctx: int) -> None:
        self.paths = models  # name -> GGUF path
        self.threads = threads
        self.n_ctx = n_ctx
        self.loaded: dict[str, Any] = {}
        self.out_lock = threading.Lock()
        self.cancelled: set[int] = set()

    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message) + "\n"
        with self.out_lock:
            sys.stdout.write(line)
            sys.stdout.flush()

    def model(self, name: str) -> Any:
        if name not in self.loaded:
            from llama_cpp import Llama

            path = self.paths.get(name.lower())
            if path is None:
                raise LookupError(f"unknown local model {name!r}")
            self.loaded[name] = Llama(
                model_path=path,
                n_ctx=self.n_ctx,
                n_threads=self.threads,
                n_threads_batch=self.threads,
                verbose=False,
            )
        return self.loaded[name]

    def handle(self, request: dict[str, Any]) -> None:
        rid = int(request["id"])
        body = request["body"]
        params = {k: body[k] for k in GENERATION_PARAMS if body.get(k) is not None}
        params.setdefault("max_tokens", 256)
        try:
            llm = self.model(request["model"])
            if not request.get("stream"):
                started = time.perf_counter()
                result = llm.create_chat_completion(messages=body["messages"], **params)
                result.setdefault("id", f"chatcmpl-{uuid.uuid4().hex}")
                result["model"] = request["model"]
                result.setdefault("usage", {})
                result["usage"]["latency_ms"] = int((time.perf_counter() - started) * 1000)
                self.send({"id": rid, "result": result})
                return
            chunks = llm.create_chat_completion(messages=body["messages"], stream=True, **params)
            try:
                for chunk in chunks:
                    if rid in self.cancelled:
                        break
                    chunk["model"] = request["model"]
                    self.send({"id": rid, "chunk": chunk})
            finally:
                close = getattr(chunks, "close", None)
                if close is not None:
                    close()
            self.send({"id": rid, "end": True})
        except ValueError as exc:  # llama.cpp's answer to a prompt beyond the context window
            self.send({"id": rid, "error": {"status": 400, "detail": str(exc)}})
        except LookupError as exc:
            self.send({"id": rid, "error": {"status": 404, "detail": str(exc)}})
        except Exception as exc:
            detail = f"local model failed: {type(exc).__name__}: {exc}"
            self.send({"id": rid, "error": {"status": 500, "detail": detail}})
        finally:
            self.cancelled.discard(rid)


def system_info() -> str:
    try:
        import llama_cpp

        raw = llama_cpp.llama_print_system_info()
    except Exception as exc:  # no llama.cpp: the worker still answers, with errors
        return f"unavailable: {type(exc).__name__}: {exc}"
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def main() -> None:
    models = json.loads(os.environ.get("BW_LOCAL_MODELS", "{}"))
    worker = Worker(
        {k: str(Path(v)) for k, v in models.items()},
        threads=int(os.environ.get("BW_LOCAL_MODEL_THREADS", "1")),
        n_ctx=int(os.environ.get("BW_LOCAL_MODEL_CTX", "2048")),
    )
    worker.send({"hello": {"system_info": system_info(), "pid": os.getpid()}})
    requests: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()

    def read() -> None:
        # Cancels must be seen while a stream runs: stdin is read on its own thread.
        for line in sys.stdin:
            if not line.strip():
                continue
            message = json.loads(line)
            if "cancel" in message:
                worker.cancelled.add(int(message["cancel"]))
            else:
                requests.put(message)
        requests.put(None)

    threading.Thread(target=read, daemon=True).start()
    while (request := requests.get()) is not None:
        worker.handle(request)


if __name__ == "__main__":
    main()
