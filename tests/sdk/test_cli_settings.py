"""``benchwright settings`` and ``benchwright host-policy`` against a fake gateway."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from benchwright.cli import app

from .cli_support import isolate_config, sent_json, use_gateway
from .fakes import FakeGateway


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(autouse=True)
def cli_env(monkeypatch: pytest.MonkeyPatch, gateway: FakeGateway, tmp_path: Path) -> Path:
    use_gateway(monkeypatch, gateway)
    return isolate_config(monkeypatch, tmp_path)


def setting(key: str, value: object) -> dict[str, object]:
    return {"object": "setting", "key": key, "value": value, "updated_at": "2026-12-01T00:00:00Z"}


def test_settings_set_takes_json_and_ls_lists(runner: CliRunner, gateway: FakeGateway) -> None:
    limits = {"run": {"cost": 5}}
    gateway.on(
        "PUT",
        "/v1/settings/default_limits",
        httpx.Response(200, json=setting("default_limits", limits)),
    )
    gateway.on(
        "PUT",
        "/v1/settings/default_driver",
        httpx.Response(200, json=setting("default_driver", "llm")),
    )
    page = {"object": "list", "data": [setting("default_limits", limits)]}
    gateway.on("GET", "/v1/settings", httpx.Response(200, json=page))
    gateway.on("DELETE", "/v1/settings/default_limits", httpx.Response(200, json={"deleted": True}))

    done = runner.invoke(
        app, ["settings", "set", "default_limits", json.dumps(limits), "-o", "table"]
    )
    assert done.exit_code == 0, done.output
    assert sent_json(gateway.seen("PUT", "/v1/settings/default_limits")[0]) == {"value": limits}
    assert done.stdout == 'default_limits = {"run": {"cost": 5}}\n'
    word = runner.invoke(app, ["settings", "set", "default_driver", "llm"])
    assert word.exit_code == 0, word.output
    assert sent_json(gateway.seen("PUT", "/v1/settings/default_driver")[0]) == {"value": "llm"}
    listed = runner.invoke(app, ["settings", "ls", "-o", "json"])
    assert listed.exit_code == 0 and json.loads(listed.stdout)[0]["key"] == "default_limits"
    cleared = runner.invoke(app, ["settings", "unset", "default_limits", "-o", "table"])
    assert cleared.exit_code == 0 and cleared.stdout == "default_limits cleared\n"


def test_host_policy_commands(runner: CliRunner, gateway: FakeGateway) -> None:
    policy = {
        "object": "host_policy",
        "default_mode": "block",
        "rules": [{"pattern": "*.huggingface.co", "action": "allow"}],
    }
    gateway.on("PATCH", "/v1/host-policy", httpx.Response(200, json=policy))
    gateway.on("GET", "/v1/host-policy", httpx.Response(200, json=policy))
    shown = runner.invoke(app, ["host-policy", "show", "-o", "table"])
    assert shown.exit_code == 0, shown.output
    assert shown.stdout == "default: block\nallow  *.huggingface.co\n"
    for args, sent in (
        (
            ["allow", "*.huggingface.co"],
            {"add": [{"pattern": "*.huggingface.co", "action": "allow"}]},
        ),
        (["block", "evil.example"], {"add": [{"pattern": "evil.example", "action": "block"}]}),
        (["remove", "evil.example"], {"remove": ["evil.example"]}),
        (["default", "block"], {"default_mode": "block"}),
        (["starter-pack"], {"starter_pack": True}),
    ):
        result = runner.invoke(app, ["host-policy", *args])
        assert result.exit_code == 0, (args, result.output)
        body = sent_json(gateway.seen("PATCH", "/v1/host-policy")[-1])
        assert {k: v for k, v in body.items() if v not in ([], None, False)} == sent, args
    wrong = runner.invoke(app, ["host-policy", "default", "maybe"])
    assert wrong.exit_code == 2 and "allow or block" in wrong.stderr
