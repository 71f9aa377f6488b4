"""``benchwright secrets``, ``billing`` and ``doctor`` against the fake gateway."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from benchwright.cli import app
from benchwright.cli.commands import doctor as doctor_module

from .cli_support import isolate_config, sent_json, use_gateway
from .fakes import FakeGateway, problem

SECRET = {
    "object": "secret",
    "name": "OPENROUTER_API_KEY",
    "description": "",
    "rules": [
        {"host_pattern": "openrouter.ai", "inject_kind": "bearer", "inject_target": "Authorization"}
    ],
    "preview": "••••ZZZZ",
    "version": 1,
    "created_at": "2026-11-29T10:00:00Z",
    "updated_at": "2026-11-29T10:00:00Z",
}
BALANCE = {
    "object": "balance",
    "balance": {"amount_cents": 4215, "currency": "USD"},
    "month_spent": {"amount_cents": 1230, "currency": "USD"},
    "monthly_cap": {"amount_cents": 10000, "currency": "USD"},
    "stop_reason": None,
}
ME = {
    "object": "principal",
    "account": "acct_default",
    "kind": "pat",
    "scopes": ["runs:read", "runs:write", "secrets:read"],
}


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(autouse=True)
def cli_env(monkeypatch: pytest.MonkeyPatch, gateway: FakeGateway, tmp_path: Path) -> None:
    use_gateway(monkeypatch, gateway)
    isolate_config(monkeypatch, tmp_path)
    monkeypatch.setenv("BW_OUTPUT", "table")


def test_secrets_add_with_rules(runner: CliRunner, gateway: FakeGateway) -> None:
    gateway.on("POST", "/v1/secrets", httpx.Response(201, json=SECRET))
    result = runner.invoke(
        app,
        [
            "secrets",
            "add",
            "OPENROUTER_API_KEY",
            "sk-or-v1-abc",
            "--rule",
            "openrouter.ai:bearer:Authorization",
            "--rule",
            "*.example.com:query:key",
            "--rule",
            "api.other.dev",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "added OPENROUTER_API_KEY (version 1, ••••ZZZZ)\n"
    assert sent_json(gateway.requests[0]) == {
        "name": "OPENROUTER_API_KEY",
        "value": "sk-or-v1-abc",
        "description": "",
        "rules": [
            {
                "host_pattern": "openrouter.ai",
                "inject_kind": "bearer",
                "inject_target": "Authorization",
            },
            {"host_pattern": "*.example.com", "inject_kind": "query", "inject_target": "key"},
            {"host_pattern": "api.other.dev", "inject_kind": "bearer"},
        ],
    }


def test_secret_values_can_come_from_stdin(runner: CliRunner, gateway: FakeGateway) -> None:
    gateway.on("PATCH", "/v1/secrets/OPENROUTER_API_KEY", httpx.Response(200, json=SECRET))
    result = runner.invoke(
        app, ["secrets", "rotate", "OPENROUTER_API_KEY", "-"], input="sk-or-new\n"
    )
    assert result.exit_code == 0, result.output
    assert sent_json(gateway.requests[0]) == {"value": "sk-or-new"}
    assert "sk-or-new" not in result.output

    empty = runner.invoke(app, ["secrets", "rotate", "OPENROUTER_API_KEY"], input="")
    assert empty.exit_code == 2 and "no value on stdin" in empty.stderr


def test_a_bad_rule_is_a_usage_error(runner: CliRunner, gateway: FakeGateway) -> None:
    result = runner.invoke(app, ["secrets", "add", "K", "v", "--rule", "h.com:cookie"])
    assert result.exit_code == 2
    assert "--rule takes HOST[:KIND[:TARGET]]" in result.stderr
    assert gateway.requests == []


def test_secrets_ls(runner: CliRunner, gateway: FakeGateway) -> None:
    gateway.on("GET", "/v1/secrets", httpx.Response(200, json={"object": "list", "data": [SECRET]}))
    table = runner.invoke(app, ["secrets", "ls"], env={"COLUMNS": "120"})
    assert table.exit_code == 0, table.output
    assert "OPENROUTER_API_KEY" in table.stdout
    assert "openrouter.ai:bearer:Authorization" in table.stdout
    lines = runner.invoke(app, ["secrets", "ls", "-o", "ndjson"]).stdout.splitlines()
    assert [json.loads(line)["name"] for line in lines] == ["OPENROUTER_API_KEY"]


def test_billing_balance_topup_and_export(runner: CliRunner, gateway: FakeGateway) -> None:
    gateway.on("GET", "/v1/billing/balance", httpx.Response(200, json=BALANCE))
    balance = runner.invoke(app, ["billing", "balance"])
    assert balance.exit_code == 0, balance.output
    assert "42.15 USD" in balance.stdout and "100.00 USD" in balance.stdout

    topup = {
        "object": "topup",
        "id": "top_1",
        "amount": {"amount_cents": 5000, "currency": "USD"},
        "status": "pending",
        "checkout_url": "https://pay.example/c/1",
    }
    gateway.on("POST", "/v1/billing/topups", httpx.Response(201, json=topup))
    result = runner.invoke(app, ["billing", "topup", "50", "--idempotency-key", "k1"])
    assert result.exit_code == 0, result.output
    assert "top-up top_1: 50.00 USD, pending" in result.stdout
    assert "pay here: https://pay.example/c/1" in result.stdout
    request = gateway.seen("POST", "/v1/billing/topups")[0]
    assert sent_json(request) == {"amount_cents": 5000, "flow": "hosted"}
    assert request.headers["Idempotency-Key"] == "k1"

    csv = b"id,kind,amount_cents\ntx_1,topup,5000\n"
    gateway.on(
        "GET",
        "/v1/billing/export",
        httpx.Response(200, content=csv, headers={"content-type": "text/csv"}),
    )
    exported = runner.invoke(app, ["billing", "export", "--type", "runs"])
    assert exported.exit_code == 0, exported.output
    assert exported.stdout_bytes == csv
    assert gateway.seen("GET", "/v1/billing/export")[0].url.params["type"] == "runs"


def test_billing_alerts(runner: CliRunner, gateway: FakeGateway) -> None:
    alert = {
        "id": "alrt_1",
        "kind": "cap_threshold",
        "account": "acct_default",
        "period": "2026-11",
        "threshold_pct": 80,
        "month_spent": {"amount_cents": 8000, "currency": "USD"},
        "monthly_cap": {"amount_cents": 10000, "currency": "USD"},
        "balance": {"amount_cents": 4215, "currency": "USD"},
        "detail": "this month's spend (8000 cents) reached 80% of the monthly cap (10000 cents)",
        "created_at": "2026-11-29T10:00:00Z",
    }
    listed = {"object": "list", "data": [alert]}
    gateway.on("GET", "/v1/billing/alerts", httpx.Response(200, json=listed))
    result = runner.invoke(app, ["billing", "alerts", "--limit", "5"])
    assert result.exit_code == 0, result.output
    assert "cap_threshold" in result.stdout and "reached 80%" in result.stdout
    assert gateway.seen("GET", "/v1/billing/alerts")[0].url.params["limit"] == "5"
    lines = runner.invoke(app, ["billing", "alerts", "-o", "ndjson"]).stdout.splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["alrt_1"]


@pytest.mark.parametrize(
    ("args", "endpoint"),
    [
        (["billing", "alerts"], "GET /v1/billing/alerts"),
        (["billing", "balance"], "GET /v1/billing/balance"),
        (["billing", "topup", "5"], "POST /v1/billing/topups"),
        (["billing", "export"], "GET /v1/billing/export"),
    ],
)
def test_billing_on_an_older_server_says_what_is_missing(
    runner: CliRunner, args: list[str], endpoint: str
) -> None:
    # The fake gateway answers 404 on every route it was not given.
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: this server does not offer ")
    assert endpoint in result.stderr and result.stderr.count("\n") == 1


def test_a_missing_resource_is_not_mistaken_for_a_missing_endpoint(
    runner: CliRunner, gateway: FakeGateway
) -> None:
    gateway.on("POST", "/v1/billing/topups", problem(402, "payment required", "no card on file"))
    result = runner.invoke(app, ["billing", "topup", "5"])
    assert result.stderr == "error: payment required: no card on file\n"


def test_doctor_passes_with_a_provider_secret(runner: CliRunner, gateway: FakeGateway) -> None:
    gateway.on("GET", "/v1/me", httpx.Response(200, json=ME))
    gateway.on("GET", "/v1/secrets", httpx.Response(200, json={"object": "list", "data": [SECRET]}))
    result = runner.invoke(app, ["doctor"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert "✗" not in result.stdout
    assert "provider secrets: OPENROUTER_API_KEY" in result.stdout
    assert "a pat of account acct_default" in result.stdout


def test_doctor_fails_without_a_model_and_lists_each_check(
    runner: CliRunner, gateway: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(doctor_module, "_local_model", lambda base_url: False)
    gateway.on("GET", "/v1/me", httpx.Response(200, json={**ME, "scopes": ["runs:read"]}))
    gateway.on("GET", "/v1/secrets", problem(403, "missing scope", "lacks secrets:read"))
    result = runner.invoke(app, ["doctor", "-o", "json"])
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["ok"] is False
    statuses = {c["name"]: c["status"] for c in document["checks"]}
    assert statuses == {
        "profile": "ok",
        "server": "ok",
        "token": "ok",
        "scopes": "fail",
        "models": "fail",
    }
    models = next(c for c in document["checks"] if c["name"] == "models")
    assert "lacks secrets:read" in models["detail"] and "secrets add" in models["detail"]


def test_doctor_counts_the_local_model(
    runner: CliRunner, gateway: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(doctor_module, "_local_model", lambda base_url: True)
    gateway.on("GET", "/v1/me", httpx.Response(200, json=ME))
    gateway.on("GET", "/v1/secrets", httpx.Response(200, json={"object": "list", "data": []}))
    result = runner.invoke(app, ["doctor", "-o", "json"])
    assert result.exit_code == 0, result.output
    models = next(c for c in json.loads(result.stdout)["checks"] if c["name"] == "models")
    assert models == {
        "name": "models",
        "status": "ok",
        "detail": "the local model (provider 'local') on this machine",
    }


def test_doctor_reports_a_rejected_token_and_an_unreachable_server(
    runner: CliRunner, gateway: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway.on("GET", "/v1/me", problem(401, "unauthorized", "unknown token"))
    rejected = runner.invoke(app, ["doctor", "-o", "ndjson"])
    assert rejected.exit_code == 1
    checks = [json.loads(line) for line in rejected.stdout.splitlines()]
    assert [(c["name"], c["status"]) for c in checks] == [
        ("profile", "ok"),
        ("server", "ok"),
        ("token", "fail"),
    ]

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    gateway.on("GET", "/v1/me", refuse)
    down = runner.invoke(app, ["doctor", "-o", "ndjson"])
    assert down.exit_code == 1
    last = json.loads(down.stdout.splitlines()[-1])
    assert last["name"] == "server" and last["status"] == "fail"
    assert "connection refused" in last["detail"]


def test_doctor_on_a_server_without_me(runner: CliRunner, gateway: FakeGateway) -> None:
    gateway.on("GET", "/v1/runs", httpx.Response(200, json={"object": "list", "data": []}))
    gateway.on("GET", "/v1/secrets", httpx.Response(200, json={"object": "list", "data": [SECRET]}))
    result = runner.invoke(app, ["doctor", "-o", "json"])
    assert result.exit_code == 0, result.output
    statuses = {c["name"]: c["status"] for c in json.loads(result.stdout)["checks"]}
    assert statuses["scopes"] == "skip" and statuses["token"] == "ok"
