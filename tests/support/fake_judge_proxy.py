"""A stand-in for a run's model proxy with a judge: one OpenAI-compatible endpoint on
loopback, two keys. The model key reaches the model under test (whatever the body's
``model`` says, as the real proxy's does); the judge key reaches the judge its body's
``model`` names. Each answer is a pure function of the prompt (and, for a judge, of its
model id), so a test knows every grade in advance. Every request is kept (headers,
lowercased, and body), and every answer carries the proxy's cost stamp: ``MODEL_COST``
or ``JUDGE_COST`` micro-dollars, with fixed token counts.
"""

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL_KEY = "bw_run_test.model"
JUDGE_KEY = "bw_judge_test.judge"
MODEL_COST, JUDGE_COST = 1000, 300
MODEL_TOKENS, JUDGE_TOKENS = (10, 5), (40, 8)


@dataclass
class Recorded:
    """One request as the proxy saw it, and whose key it carried."""

    role: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def call_id(self) -> str:
        return self.headers.get("x-benchwright-call-id", "")

    @property
    def prompt(self) -> str:
        return str(self.body["messages"][-1]["content"])


@dataclass
class FakeJudgeProxy:
    """``model(prompt)`` answers for the model under test, ``judge(model, prompt)`` for
    the judge named ``model``; ``judges`` are the ids the judge key may name."""

    model: Callable[[str], str]
    judge: Callable[[str, str], str]
    judges: tuple[str, ...]
    requests: list[Recorded] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def by_role(self, role: str) -> list[Recorded]:
        return [r for r in self.requests if r.role == role]

    def start(self) -> "FakeJudgeProxy":
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, answer, stamp = proxy.answer(headers, body)
                raw = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for name, value in stamp.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(raw)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def answer(
        self, headers: dict[str, str], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        auth = headers.get("authorization", "")
        role = {f"Bearer {MODEL_KEY}": "model", f"Bearer {JUDGE_KEY}": "judge"}.get(auth)
        if role is None:
            return 401, {"error": {"message": "unknown key"}}, {}
        with self._lock:
            self.requests.append(Recorded(role, headers, body))
        prompt = str(body["messages"][-1]["content"])
        if role == "model":
            text, cost, (prompt_tokens, completion_tokens) = (
                self.model(prompt),
                MODEL_COST,
                MODEL_TOKENS,
            )
        else:
            named = body.get("model") or self.judges[0]
            if named not in self.judges:
                return 400, {"error": {"message": f"no judge {named}"}}, {}
            text, cost, (prompt_tokens, completion_tokens) = (
                self.judge(named, prompt),
                JUDGE_COST,
                JUDGE_TOKENS,
            )
        stamp = {
            "x-benchwright-call-cost-micros": str(cost),
            "x-benchwright-call-prompt-tokens": str(prompt_tokens),
            "x-benchwright-call-completion-tokens": str(completion_tokens),
        }
        message = {"role": "assistant", "content": text}
        return 200, {"choices": [{"index": 0, "message": message}]}, stamp
