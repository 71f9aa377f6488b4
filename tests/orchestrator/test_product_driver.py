"""The product driver's relay and environment, in process (the driver is a stdlib
script; ``test_harbor_product.py`` runs it in real sandboxes)."""

import http.client
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from benchwright_orchestrator.agents import product_driver

SEEN: list[dict[str, str]] = []


class Upstream(BaseHTTPRequestHandler):
    """A proxy stand-in: records each call's path and headers, streams two events."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        size = int(self.headers.get("content-length") or 0)
        SEEN.append({"path": self.path, "body": self.rfile.read(size).decode(), **self.headers})
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("x-benchwright-call-cost-micros", "42")
        self.send_header("x-benchwright-call-prompt-tokens", "7")
        self.send_header("x-benchwright-call-completion-tokens", "3")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in (b"data: 1\n\n", b"data: 2\n\n"):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
            time.sleep(0.5)
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def upstream() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    SEEN.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}/proxy"
    server.shutdown()


def test_the_relay_names_the_task_and_streams_the_answer_as_it_comes(upstream: str) -> None:
    usage: dict[str, int] = {}
    attribution = {"x-benchwright-task": "4", "x-benchwright-trial": "1"}
    relay = product_driver.relay_to(upstream, attribution, usage)
    try:
        client = http.client.HTTPConnection("127.0.0.1", relay.server_address[1], timeout=10)
        started = time.monotonic()
        client.request(
            "POST", "/v1/chat/completions", b'{"stream": true}', {"authorization": "Bearer k"}
        )
        answer = client.getresponse()
        first = answer.read1(1 << 16)
        first_after = time.monotonic() - started
        rest = answer.read()
    finally:
        relay.shutdown()
    assert answer.status == 200 and answer.getheader("content-type") == "text/event-stream"
    assert first == b"data: 1\n\n" and rest == b"data: 2\n\n"
    assert first_after < 0.4  # before the upstream sent its second event: not buffered
    (call,) = SEEN
    assert call["path"] == "/proxy/v1/chat/completions" and call["body"] == '{"stream": true}'
    assert call["authorization"] == "Bearer k"
    assert (call["x-benchwright-task"], call["x-benchwright-trial"]) == ("4", "1")
    assert usage == {"calls": 1, "cost_micros": 42, "input_tokens": 7, "output_tokens": 3}


def test_the_product_gets_the_relay_and_the_run_key_under_the_usual_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BW_MODEL_PROXY_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("BW_MODEL_PROXY_KEY", "run-key")
    monkeypatch.setenv("BW_MODEL_MODEL", "scripted")
    env = product_driver.product_env({"env": {"MODE": "eval"}}, "http://127.0.0.1:4000")
    assert not any(name.startswith("BW_MODEL_") for name in env)
    assert env["OPENAI_BASE_URL"] == "http://127.0.0.1:4000/v1"
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:4000"
    assert env["OPENAI_API_KEY"] == env["ANTHROPIC_API_KEY"] == "run-key"
    assert env["OPENAI_MODEL"] == "scripted" and env["MODE"] == "eval"
