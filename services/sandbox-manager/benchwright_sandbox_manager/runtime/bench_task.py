"""The base class a scorer (``task_impl.py``) extends.

A scorer implements three methods:

* ``extract(path, index)`` reads row ``index`` of the dataset file and returns
  ``{"task_id", "input", "expected"}`` (the default reads JSON lines);
* ``solve(index, input)`` calls the model and returns its answer as text;
* ``score(index, output, expected)`` returns a score in [0, 1], or a dict with
  a ``"score"`` key and any per-trial metadata beside it.

The model is reachable only through the run's proxy: ``BW_MODEL_PROXY_URL`` (an
OpenAI-compatible endpoint), ``BW_MODEL_MODEL`` and ``BW_MODEL_PROXY_KEY``.
"""

import http.client
import json
import os
import threading
import urllib.parse
from typing import Any


class ModelCallError(RuntimeError):
    """The proxy answered with an error."""


# One keep-alive connection per worker thread: a sweep makes thousands of calls
# to the same proxy, and a fresh connection (and TLS context) per call would cost
# more than the call.
_connections = threading.local()
# A reused connection the server has closed fails before any response: safe to retry.
_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


def _post_json(url: str, body: bytes, headers: dict[str, str], timeout: float) -> tuple[int, bytes]:
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
            return response.status, response.read()
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


class BenchTask:
    """Base class for scorers. Subclass it as ``Task`` in ``task_impl.py``."""

    _rows: list[dict[str, Any]] | None = None
    _rows_lock = threading.Lock()

    # -- the three methods ------------------------------------------------------
    def extract(self, path: str, index: int) -> dict[str, Any]:
        rows = self._load_rows(path)
        row = rows[index]
        return {
            "task_id": str(row.get("task_id", index)),
            "input": row.get("input"),
            "expected": row.get("expected"),
        }

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
        """POST a chat completion to the run's model proxy and return the JSON body."""
        url = os.environ["BW_MODEL_PROXY_URL"].rstrip("/") + "/v1/chat/completions"
        body = {"model": os.environ.get("BW_MODEL_MODEL", ""), "messages": messages, **params}
        headers = {"Content-Type": "application/json"}
        key = os.environ.get("BW_MODEL_PROXY_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        timeout = float(os.environ.get("BW_MODEL_TIMEOUT", "600"))
        status, raw = _post_json(url, json.dumps(body).encode(), headers, timeout)
        if status >= 400:
            detail = raw.decode(errors="replace")[:500]
            raise ModelCallError(f"model proxy answered {status}: {detail}")
        reply: dict[str, Any] = json.loads(raw)
        return reply

    def complete(self, prompt: str, **params: Any) -> str:
        """One user message in, the assistant's text out."""
        reply = self.chat([{"role": "user", "content": prompt}], **params)
        return reply["choices"][0]["message"].get("content") or ""
