"""The base class a scorer (``task_impl.py``) extends.

A scorer implements three methods:

* ``extract(path, index)`` reads row ``index`` of the dataset file and returns
  ``{"task_id", "input", "expected"}`` (the default reads JSON lines);
* ``solve(index, input)`` calls the model and returns its answer as text;
* ``score(index, output, expected)`` returns a score in [0, 1], or a dict with
  a ``"score"`` key and any per-trial metadata beside it.

The model is reachable only through the run's proxy: ``BW_MODEL_PROXY_URL`` (an
OpenAI-compatible endpoint), ``BW_MODEL_MODEL`` and ``BW_MODEL_PROXY_KEY``. A run
with a judge also gets ``BW_JUDGE_PROXY_KEY`` (the same proxy, another key),
``BW_JUDGE_MODEL`` (the first judge's id) and ``BW_JUDGE_MODELS`` (every judge's,
as JSON); ``judge``/``judge_chat`` call one of them (``bench_judge`` grades with them).

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


class JudgeUnavailableError(ModelCallError):
    """The run has no judge (no ``BW_JUDGE_PROXY_KEY``) but its scorer called one. The
    platform should have refused to start such a run, so this is its failure, not the
    model's: retrying the task cannot help, and the summary counts it apart."""

    infra_error = "infra:no_judge"


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
    """Called by the runner before a task's ``solve`` (``score``, with ``--check``): calls
    made now belong to it."""
    _task.index, _task.trial, _task.deadline = index, trial, deadline
    _task.calls = _task.judge_calls = 0
    _task.spend, _task.over = None, None


def end_task() -> None:
    _task.index = _task.trial = _task.deadline = None
    _task.calls = _task.judge_calls = 0
    _task.spend, _task.over = None, None


def task_spend() -> tuple[dict[str, int] | None, str | None]:
    """What this trial's calls cost, summed from the proxy's stamps (None when no answer
    carried one), and the ceiling the proxy said the task went over, if any.

    ``cost_micros``, the tokens and ``calls`` count every metered call, the judge's
    too (the proxy's task ceilings add them up the same way); when a judge answered,
    ``judge_cost_micros`` and the other ``judge_`` keys say how much of it was the
    judge's. A task that called no judge has no ``judge_`` key.
    """
    return getattr(_task, "spend", None), getattr(_task, "over", None)


# An answer's cost stamp (the proxy's ``x-benchwright-*`` headers) -> the spend key.
_COST_STAMP = "x-benchwright-call-cost-micros"
_STAMPS = {
    _COST_STAMP: "cost_micros",
    "x-benchwright-call-prompt-tokens": "prompt_tokens",
    "x-benchwright-call-completion-tokens": "completion_tokens",
}
_SPEND_KEYS = (*_STAMPS.values(), "calls", "cached_calls")


def note_stamp(headers: Any, role: str = "model") -> None:
    """Add one answer's cost stamp to the task the calling thread works on (a judge's
    answer, ``role="judge"``, to its ``judge_`` keys as well)."""
    if getattr(_task, "index", None) is None:
        return
    if headers.get(_COST_STAMP) is None:
        return  # a streamed answer, or a proxy that does not stamp
    found = {key: int(headers.get(name) or 0) for name, key in _STAMPS.items()}
    found["calls"] = 1
    found["cached_calls"] = int(headers.get("x-benchwright-cache") == "hit")
    spend = _task.spend = _task.spend or dict.fromkeys(_SPEND_KEYS, 0)
    for key, value in found.items():
        spend[key] += value
        if role == "judge":
            spend[f"judge_{key}"] = spend.get(f"judge_{key}", 0) + value
    over = headers.get("x-benchwright-limit-exceeded")
    if over:
        _task.over = over


def call_headers(body: bytes, role: str = "model") -> dict[str, str]:
    """The headers naming this call: its task, trial and its place among the task's calls.

    The call id repeats when a task runs again after a sandbox was lost, and the
    proxy serves a repeat with the same body from its record. A judge's calls are
    numbered apart (``<index>.<trial>.j<n>``), so a scorer that starts calling a
    judge never moves the ids of the model's calls, which replays and rescores
    match by.
    """
    index = getattr(_task, "index", None)
    if index is None:
        return {"X-Benchwright-Call-Id": "adhoc." + hashlib.sha256(body).hexdigest()[:16]}
    trial = _task.trial
    if role == "judge":
        _task.judge_calls += 1
        call = f"j{_task.judge_calls}"
    else:
        _task.calls += 1
        call = str(_task.calls)
    return {
        "X-Benchwright-Task": str(index),
        "X-Benchwright-Trial": str(trial),
        "X-Benchwright-Call-Id": f"{index}.{trial}.{call}",
    }


def judge_models() -> list[str]:
    """The run's judges' model ids, the default first (``BW_JUDGE_MODELS``, else
    ``BW_JUDGE_MODEL``); empty when the run has no judge."""
    listed = os.environ.get("BW_JUDGE_MODELS")
    if listed:
        try:
            models = json.loads(listed)
        except ValueError:
            models = None
        if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
            raise JudgeUnavailableError(f"BW_JUDGE_MODELS is not a JSON list of ids: {listed!r}")
        return models
    first = os.environ.get("BW_JUDGE_MODEL")
    return [first] if first else []


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
        given = kwargs.get("headers") or {}
        # A call with the judge key is the judge's: numbered and metered as such.
        judge_key = os.environ.get("BW_JUDGE_PROXY_KEY")
        authorization = next((v for k, v in given.items() if k.lower() == "authorization"), "")
        role = "judge" if judge_key and authorization == f"Bearer {judge_key}" else "model"
        kwargs["headers"] = {**given, **call_headers(body, role)}
        deadline = retry_deadline()
        pause, attempts = 0.25, 0
        while True:
            attempts += 1
            try:
                response = original(self, method, url, *args, **kwargs)
                if response.status_code != 503:
                    note_stamp(response.headers, role)
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

    def row_input(self, index: int) -> Any:
        """Row ``index``'s input as the default ``extract`` read it (None when no rows
        are loaded): ``score`` gets only the output and the expected answer, and a
        judge needs the question too, also when the output was given (``--check``)."""
        rows = self._rows
        return rows[index].get("input") if rows is not None and 0 <= index < len(rows) else None

    def chat(self, messages: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
        """POST a chat completion to the run's model proxy and return the JSON body.

        Retried while the proxy is unreachable, cuts the answer off or answers 503,
        up to the task's deadline; then ``ModelUnavailableError``.
        """
        body = {"model": os.environ.get("BW_MODEL_MODEL", ""), "messages": messages, **params}
        return _proxy_chat(body, os.environ.get("BW_MODEL_PROXY_KEY"), "model")

    def complete(self, prompt: str, **params: Any) -> str:
        """One user message in, the assistant's text out."""
        return _text(self.chat([{"role": "user", "content": prompt}], **params))

    def judge_chat(
        self, messages: list[dict[str, Any]], *, judge: str | None = None, **params: Any
    ) -> dict[str, Any]:
        """POST a chat completion to the run's judge (``judge``: one of ``judge_models()``,
        the first by default) through the same proxy, with the judge key; the JSON body.

        Retried as ``chat`` is. ``JudgeUnavailableError`` when the run has no judge.
        """
        key = os.environ.get("BW_JUDGE_PROXY_KEY")
        if not key:
            raise JudgeUnavailableError(
                "the scorer calls a judge but the run names none (no BW_JUDGE_PROXY_KEY): "
                "launch it with a judge"
            )
        model = judge or next(iter(judge_models()), None)
        # With no id known, the body names none and the proxy takes the first judge.
        body = {**({"model": model} if model else {}), "messages": messages, **params}
        return _proxy_chat(body, key, "judge")

    def judge(self, prompt: str, *, judge: str | None = None, **params: Any) -> str:
        """One user message to the judge in, its text out (see ``judge_chat``)."""
        return _text(self.judge_chat([{"role": "user", "content": prompt}], judge=judge, **params))


def _text(reply: dict[str, Any]) -> str:
    """The assistant's text in a chat completion ("" when it has none)."""
    text: str = reply["choices"][0]["message"].get("content") or ""
    return text


def _proxy_chat(body: dict[str, Any], key: str | None, role: str) -> dict[str, Any]:
    """POST ``body`` to the proxy's chat completions with ``key``, as ``role``'s call;
    retried while the platform fails it, up to the task's deadline."""
    url = os.environ["BW_MODEL_PROXY_URL"].rstrip("/") + "/v1/chat/completions"
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **call_headers(data, role)}
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
    note_stamp(answered, role)
    reply: dict[str, Any] = json.loads(raw)
    return reply
