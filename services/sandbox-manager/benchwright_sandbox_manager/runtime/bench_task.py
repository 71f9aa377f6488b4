"""The base class a scorer (``task_impl.py``) extends.

A scorer implements three methods:

* ``extract(path, index)`` reads row ``index`` of the dataset file and returns
  ``{"task_id", "input", "expected"}`` (the default reads JSON lines);
* ``solve(index, input)`` calls the model and returns its answer as text;
* ``score(index, output, expected)`` returns a score in [0, 1], or a dict with
  a ``"score"`` key and any per-trial metadata beside it.

The model is reachable only through the run's proxy: ``BW_MODEL_PROXY_URL`` (an
OpenAI-compatible endpoint), ``BW_MODEL_MODEL`` and ``BW_MODEL_PROXY_KEY``.

A call the platform failed (the proxy unreachable or cut off mid-answer, a 503
from it) is made again with growing pauses, within the task's own ceiling, under
the same call id, so the proxy answers a repeat it already served from its record
instead of asking the model twice. One that still fails is an infrastructure
error (``infra:proxy_unreachable``), not the model's or the scorer's.
"""

import hashlib
import http.client
import json
import os
import random
import socket
import threading
import time
import urllib.parse
from typing import Any


class ModelCallError(RuntimeError):
    """The proxy answered with an error."""


class ModelUnavailableError(ModelCallError):
    """The proxy could not be reached (or kept failing) within the task's time."""

    infra_error = "infra:proxy_unreachable"


class ProviderCrashedError(ModelCallError):
    """The model's own process kept crashing (the proxy said so)."""

    infra_error = "infra:provider_crashed"


class LimitExceededError(ModelCallError):
    """The task (or this trial of it) reached its cost ceiling: it ends ``err`` with
    ``limit_exceeded:<ceiling>`` and the run goes on."""

    def __init__(self, ceiling: str, message: str) -> None:
        super().__init__(message)
        self.task_error_type = f"limit_exceeded:{ceiling}"


def _call_failed(status: int, raw: bytes) -> ModelCallError:
    detail = raw.decode(errors="replace")[:500]
    try:
        error = json.loads(raw)["error"]
        kind, code = error.get("type"), error.get("code")
    except (ValueError, KeyError, TypeError, AttributeError):
        kind = code = None
    if kind == "provider_crashed":
        return ProviderCrashedError(f"model proxy answered {status}: {detail}")
    if kind == "limit_exceeded" and isinstance(code, str):
        return LimitExceededError(code, f"model proxy answered {status}: {detail}")
    return ModelCallError(f"model proxy answered {status}: {detail}")


# Which task the calling thread works on: the runner sets it around each task, and
# every model call carries it (the proxy attributes and deduplicates calls by it).
_task = threading.local()
# Retrying a call the platform failed: pauses grow to this, within the task's deadline.
RETRY_PAUSE_MAX_S = 4.0
# Without a task deadline (a scorer run by hand), retries stop after this long.
RETRY_BUDGET_S = 60.0
# Failures of the platform, not of the call: worth another try.
_RETRYABLE = (ConnectionError, http.client.HTTPException, socket.timeout, OSError)


def begin_task(index: int, trial: int, deadline: float | None) -> None:
    """Called by the runner before a task's ``solve``: calls made now belong to it."""
    _task.index, _task.trial, _task.deadline, _task.calls = index, trial, deadline, 0
    _task.spend, _task.over = None, None


def end_task() -> None:
    _task.index = _task.trial = _task.deadline = None
    _task.calls = 0
    _task.spend, _task.over = None, None


def task_spend() -> tuple[dict[str, int] | None, str | None]:
    """What this trial's model calls cost, summed from the proxy's stamps (None when no
    answer carried one), and the ceiling the proxy said the task went over, if any."""
    return getattr(_task, "spend", None), getattr(_task, "over", None)


# An answer's cost stamp (the proxy's ``x-benchwright-*`` headers) -> the spend key.
_STAMPS = {
    "x-benchwright-call-cost-micros": "cost_micros",
    "x-benchwright-call-prompt-tokens": "prompt_tokens",
    "x-benchwright-call-completion-tokens": "completion_tokens",
}


def note_stamp(headers: Any) -> None:
    """Add one answer's cost stamp to the task the calling thread works on."""
    if getattr(_task, "index", None) is None:
        return
    found = {key: headers.get(name) for name, key in _STAMPS.items()}
    if found["cost_micros"] is None:
        return  # a streamed answer, or a proxy that does not stamp
    spend = _task.spend = _task.spend or dict.fromkeys(
        (*_STAMPS.values(), "calls", "cached_calls"), 0
    )
    for key, value in found.items():
        spend[key] += int(value or 0)
    spend["calls"] += 1
    if headers.get("x-benchwright-cache") == "hit":
        spend["cached_calls"] += 1
    over = headers.get("x-benchwright-limit-exceeded")
    if over:
        _task.over = over


def call_headers(body: bytes) -> dict[str, str]:
    """The headers naming this call: its task, trial and its place among the task's calls.

    The call id repeats when a task runs again after a sandbox was lost, and the
    proxy serves a repeat with the same body from its record.
    """
    index = getattr(_task, "index", None)
    if index is None:
        return {"X-Benchwright-Call-Id": "adhoc." + hashlib.sha256(body).hexdigest()[:16]}
    _task.calls += 1
    trial = _task.trial
    return {
        "X-Benchwright-Task": str(index),
        "X-Benchwright-Trial": str(trial),
        "X-Benchwright-Call-Id": f"{index}.{trial}.{_task.calls}",
    }


def retry_deadline() -> float:
    deadline = getattr(_task, "deadline", None)
    return deadline if deadline is not None else time.monotonic() + RETRY_BUDGET_S


# One keep-alive connection per worker thread: a sweep makes thousands of calls
# to the same proxy, and a fresh connection (and TLS context) per call would cost
# more than the call.
_connections = threading.local()
# A reused connection the server has closed fails before any response: safe to retry.
_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


def _post_json(
    url: str, body: bytes, headers: dict[str, str], timeout: float
) -> tuple[int, bytes, http.client.HTTPMessage]:
    parts = urllib.parse.urlsplit(url)
    target = (parts.scheme, parts.netloc)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    for attempt in (1, 2):
        conn = getattr(_connections, "conn", None)
        reused = conn is not None and getattr(_connections, "target", None) == target
        if not reused:
            if conn is not None:
                conn.close()
            cls = (
                http.client.HTTPSConnection
                if parts.scheme == "https"
                else http.client.HTTPConnection
            )
            conn = cls(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
            _connections.conn, _connections.target = conn, target
        assert conn is not None
        try:
            conn.request("POST", path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.read(), response.headers
        except _STALE:
            conn.close()
            _connections.conn = None
            if not reused or attempt == 2:
                raise
        except Exception:
            conn.close()
            _connections.conn = None
            raise
    raise AssertionError("unreachable")


def patch_requests() -> None:
    """Give ``requests`` calls to the model proxy the same call ids and retries as ``chat``.

    Scorers written against the developer guide post to ``BW_MODEL_PROXY_URL`` with
    ``requests`` themselves; the runner calls this once ``requests`` is imported.
    """
    import requests

    if getattr(requests.Session.request, "_benchwright", False):
        return
    original = requests.Session.request

    def request(self: Any, method: str, url: Any, *args: Any, **kwargs: Any) -> Any:
        proxy = os.environ.get("BW_MODEL_PROXY_URL", "").rstrip("/")
        if not proxy or not str(url).startswith(proxy):
            return original(self, method, url, *args, **kwargs)
        payload = kwargs.get("json", kwargs.get("data")) or b""
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        kwargs["headers"] = {**(kwargs.get("headers") or {}), **call_headers(body)}
        deadline = retry_deadline()
        pause, attempts = 0.25, 0
        while True:
            attempts += 1
            try:
                response = original(self, method, url, *args, **kwargs)
                if response.status_code != 503:
                    note_stamp(response.headers)
                    return response
                failure = "answered 503"
            except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
                failure = f"{type(exc).__name__}: {exc}"
            wait = pause * (0.5 + random.random())
            if time.monotonic() + wait >= deadline:
                raise ModelUnavailableError(f"the model proxy failed {attempts} times: {failure}")
            time.sleep(wait)
            pause = min(pause * 2, RETRY_PAUSE_MAX_S)

    request._benchwright = True  # type: ignore[attr-defined]
    requests.Session.request = request  # type: ignore[method-assign]


class BenchTask:
    """Base class for scorers. Subclass it as ``Task`` in ``task_impl.py``."""

    _rows: list[dict[str, Any]] | None = None
    _rows_lock = threading.Lock()

    # -- the three methods ------------------------------------------------------
    def extract(self, path: str, index: int) -> dict[str, Any]:
        rows = self._load_rows(path)
        row = rows[index]
        extracted = {
            "task_id": str(row.get("task_id", index)),
            "input": row.get("input"),
            "expected": row.get("expected"),
        }
        # The row's group (an MMLU subject): the summary's intervals resample by it.
        if isinstance(row.get("category"), str):
            extracted["category"] = row["category"]
        return extracted

    def solve(self, index: int, input: Any) -> str:
        raise NotImplementedError

    def score(self, index: int, output: str, expected: Any) -> float | dict[str, Any]:
        raise NotImplementedError

    # -- helpers ----------------------------------------------------------------
    def _load_rows(self, path: str) -> list[dict[str, Any]]:
        with self._rows_lock:
            if self._rows is None:
                with open(path, encoding="utf-8") as f:
                    self._rows = [json.loads(line) for line in f if line.strip()]
            return self._rows

    def chat(self, messages: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
        """POST a chat completion to the run's model proxy and return the JSON body.

        Retried while the proxy is unreachable, cuts the answer off or answers 503,
        up to the task's deadline; then ``ModelUnavailableError``.
        """
        url = os.environ["BW_MODEL_PROXY_URL"].rstrip("/") + "/v1/chat/completions"
        body = {"model": os.environ.get("BW_MODEL_MODEL", ""), "messages": messages, **params}
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", **call_headers(data)}
        key = os.environ.get("BW_MODEL_PROXY_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        timeout = float(os.environ.get("BW_MODEL_TIMEOUT", "600"))
        deadline = retry_deadline()
        pause, attempts = 0.25, 0
        while True:
            attempts += 1
            try:
                status, raw, answered = _post_json(url, data, headers, timeout)
                failure = f"answered {status}" if status == 503 else None
            except _RETRYABLE as exc:
                failure, status, raw = f"{type(exc).__name__}: {exc}", 0, b""
            if failure is None:
                break
            wait = pause * (0.5 + random.random())
            if time.monotonic() + wait >= deadline:
                raise ModelUnavailableError(f"the model proxy failed {attempts} times: {failure}")
            time.sleep(wait)
            pause = min(pause * 2, RETRY_PAUSE_MAX_S)
        if status >= 400:
            raise _call_failed(status, raw)
        note_stamp(answered)
        reply: dict[str, Any] = json.loads(raw)
        return reply

    def complete(self, prompt: str, **params: Any) -> str:
        """One user message in, the assistant's text out."""
        reply = self.chat([{"role": "user", "content": prompt}], **params)
        return reply["choices"][0]["message"].get("content") or ""
