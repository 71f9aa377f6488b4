"""What the CLI tests share: a fake gateway behind every command, and private config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwright import Benchwright
from benchwright.cli import _common

from .fakes import RUN_ID, SUMMARY, TOKEN, FakeGateway, run_body, run_events, sse_response

RUN = f"/v1/runs/{RUN_ID}"
ROWS = [
    {"id": "r:1:0", "task_id": "gsm8k/test/0", "index": 0, "outcome": "pass", "score": 1.0},
    {"id": "r:1:1", "task_id": "gsm8k/test/1", "index": 1, "outcome": "fail", "score": 0.0},
]


def use_gateway(monkeypatch: pytest.MonkeyPatch, gateway: FakeGateway) -> list[dict[str, Any]]:
    """Point every CLI command at ``gateway``; returns the client kwargs each one got."""
    calls: list[dict[str, Any]] = []

    def factory(api_key: str | None = None, base_url: str | None = None) -> Benchwright:
        calls.append({"api_key": api_key, "base_url": base_url})
        client = Benchwright(
            api_key=api_key or TOKEN,
            base_url=base_url or "http://bw.test",
            http_client=gateway.client(),
        )
        client._http.sleep = lambda seconds: None
        return client

    monkeypatch.setattr(_common, "client_factory", factory)
    return calls


def isolate_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A private config file (and state beside it); no profile or output from outside."""
    path = tmp_path / "config" / "config.toml"
    monkeypatch.setenv("BW_CONFIG", str(path))
    for name in ("BW_PROFILE", "BW_OUTPUT", "BW_USERNAME", "BW_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    return path


def script_run(gateway: FakeGateway, final_status: str = "ok", summary: Any = None) -> None:
    """A launch that streams three tasks to ``final_status``."""
    gateway.on("POST", "/v1/runs", httpx.Response(201, json=run_body("running")))
    gateway.on("GET", f"{RUN}/stream", sse_response(run_events(total=3, status=final_status)))
    gateway.on("GET", RUN, httpx.Response(200, json=run_body(final_status)))
    page = {"object": "list", "summary": summary or SUMMARY, "data": ROWS[:1]}
    gateway.on("GET", f"{RUN}/tasks", httpx.Response(200, json=page))


def sent_json(request: httpx.Request) -> Any:
    """The JSON body of a recorded request."""
    return json.loads(request.content)
