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

import json
import os
import threading
import urllib.error
import urllib.request
from typing import Any


class ModelCallError(RuntimeError):
    """The proxy answered with an error."""


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
        request = urllib.request.Request(
            url, data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        timeout = float(os.environ.get("BW_MODEL_TIMEOUT", "600"))
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                reply: dict[str, Any] = json.loads(response.read())
                return reply
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:500]
            raise ModelCallError(f"model proxy answered {exc.code}: {detail}") from None

    def complete(self, prompt: str, **params: Any) -> str:
        """One user message in, the assistant's text out."""
        reply = self.chat([{"role": "user", "content": prompt}], **params)
        return reply["choices"][0]["message"].get("content") or ""
