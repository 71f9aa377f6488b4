"""The ``benchwright`` command line against the fake gateway: launching and reading runs."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from benchwright import Benchwright
from benchwright.cli import _common, app

from .cli_support import ROWS, RUN, isolate_config, script_run, use_gateway
from .fakes import RUN_ID, SUMMARY, FakeGateway, problem, run_body, run_events


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(autouse=True)
def cli_env(monkeypatch: pytest.MonkeyPatch, gateway: FakeGateway, tmp_path: Path) -> None:
    """Every command talks to the fake gateway, with private config, printing tables."""
    use_gateway(monkeypatch, gateway)
    isolate_config(monkeypatch, tmp_path)
    monkeypatch.setenv("BW_OUTPUT", "table")


def launch_args(*extra: str) -> list[str]:
    return ["run", "--benchmark", "GSM8K", "--model", "qwen/qwen3-32b@openrouter", *extra]


def test_run_streams_progress_and_prints_the_summary(
    runner: CliRunner, gateway: FakeGateway
) -> None:
    script_run(gateway)
    result = runner.invoke(app, launch_args("--limit", "3", "--subset", "test"))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "▶ fetch" in out and "✓ materialize" in out and "finished: ok" in out
    assert "1 pass" in out and "1 fail" in out and "1 err" in out
    assert "3/3" in out  # the progress bar reached selected_tasks
    assert "33.3%" in out
    assert f"dashboard: http://127.0.0.1:8765/runs/{RUN_ID}" in out
    body = json.loads(gateway.seen("POST", "/v1/runs")[0].content)
    assert body == {
        "benchmark": "GSM8K",
        "subset": "test",
        "sut": {"model": "qwen/qwen3-32b", "provider": "openrouter"},
        "metadata": {"limit": 3},
    }


def test_run_that_errors_exits_1(runner: CliRunner, gateway: FakeGateway) -> None:
    script_run(gateway, final_status="error")
    result = runner.invoke(app, launch_args())
    assert result.exit_code == 1
    assert "finished: error" in result.stdout


def test_run_json_prints_one_document(runner: CliRunner, gateway: FakeGateway) -> None:
    script_run(gateway)
    result = runner.invoke(app, launch_args("--output", "json"))
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["run"]["status"] == "ok"
    assert document["summary"]["passed"] == 1


def test_run_ndjson_prints_each_event_then_the_summary(
    runner: CliRunner, gateway: FakeGateway
) -> None:
    script_run(gateway)
    result = runner.invoke(app, launch_args("-o", "ndjson"))
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["seq"] for line in lines[:-1]] == list(range(len(run_events(total=3))))
    assert lines[-1]["summary"]["total"] == 3


def test_run_no_wait_prints_the_id_and_does_not_stream(
    runner: CliRunner, gateway: FakeGateway
) -> None:
    script_run(gateway)
    result = runner.invoke(app, launch_args("--no-wait"))
    assert result.exit_code == 0
    assert f"launched run {RUN_ID}" in result.stdout
    assert gateway.seen("GET", f"{RUN}/stream") == []


def test_api_base_is_part_of_the_sut(runner: CliRunner, gateway: FakeGateway) -> None:
    script_run(gateway)
    result = runner.invoke(
        app,
        [
            "run",
            "--benchmark",
            "GSM8K",
            "--model",
            "me@corp/m@openai_compatible",
            "--api-base",
            "http://127.0.0.1:9000/v1",
            "--no-wait",
        ],
    )
    assert result.exit_code == 0, result.output
    body = json.loads(gateway.seen("POST", "/v1/runs")[0].content)
    assert body["sut"] == {
        "model": "me@corp/m",
        "provider": "openai_compatible",
        "api_base": "http://127.0.0.1:9000/v1",
    }


def test_model_without_provider_is_a_one_line_usage_error(
    runner: CliRunner, gateway: FakeGateway
) -> None:
    result = runner.invoke(app, ["run", "--benchmark", "GSM8K", "--model", "qwen3-32b"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: --model must be MODEL@PROVIDER")
    assert gateway.requests == []


def test_api_error_is_one_line_without_traceback(runner: CliRunner, gateway: FakeGateway) -> None:
    gateway.on(
        "GET", "/v1/runs/missing", problem(404, "run not found", "no run 'missing'", field="run_id")
    )
    result = runner.invoke(app, ["run", "show", "missing"])
    assert result.exit_code == 1
    assert result.stderr == "error: run not found: no run 'missing' (field: run_id)\n"
    assert "Traceback" not in result.output


def test_launch_validation_error_names_the_field(runner: CliRunner, gateway: FakeGateway) -> None:
    gateway.on(
        "POST",
        "/v1/runs",
        problem(422, "invalid request", "unknown provider 'x'", field="sut.provider"),
    )
    result = runner.invoke(app, ["run", "--benchmark", "GSM8K", "--model", "m@x"])
    assert result.exit_code == 1
    assert result.stderr == "error: invalid request: unknown provider 'x' (field: sut.provider)\n"


def test_missing_credentials_explain_what_to_do(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_common, "client_factory", Benchwright)
    result = runner.invoke(app, ["run", "show", RUN_ID])
    assert result.exit_code == 2
    assert "benchwright up" in result.stderr and result.stderr.count("\n") == 1


def test_run_show_json(runner: CliRunner, gateway: FakeGateway) -> None:
    gateway.on("GET", RUN, httpx.Response(200, json=run_body("ok", summary=SUMMARY)))
    result = runner.invoke(app, ["run", "show", RUN_ID, "--output", "json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["id"] == RUN_ID

    table = runner.invoke(app, ["run", "show", RUN_ID])
    assert table.exit_code == 0
    assert "GSM8K" in table.stdout and "qwen/qwen3-32b@openrouter" in table.stdout
    assert "33.3%" in table.stdout


def test_run_tasks_filters_and_renders(runner: CliRunner, gateway: FakeGateway) -> None:
    page = {"object": "list", "summary": SUMMARY, "data": ROWS, "next_page_token": "p2"}
    gateway.on("GET", f"{RUN}/tasks", httpx.Response(200, json=page))
    result = runner.invoke(app, ["run", "tasks", RUN_ID, "--failed", "--limit", "2"])
    assert result.exit_code == 0, result.output
    assert "gsm8k/test/1" in result.stdout and "1/3 passed" in result.stdout
    assert "--page-token p2" in result.stdout
    assert dict(gateway.requests[0].url.params) == {"passed": "false", "limit": "2"}

    ndjson = runner.invoke(app, ["run", "tasks", RUN_ID, "-o", "ndjson"])
    lines = [json.loads(line) for line in ndjson.stdout.splitlines()]
    assert [line.get("task_id") for line in lines[:2]] == ["gsm8k/test/0", "gsm8k/test/1"]
    assert lines[2]["object"] == "task_summary"
    assert "passed" not in gateway.requests[1].url.params


def test_admin_rebuild_reports_digest_equality(runner: CliRunner, gateway: FakeGateway) -> None:
    gateway.on(
        "POST",
        "/v1/admin/projections/runs/rebuild",
        httpx.Response(
            200, json={"projection": "runs", "applied": 7, "digest": "d1", "before_digest": "d0"}
        ),
    )
    result = runner.invoke(app, ["admin", "rebuild", "runs"])
    assert result.exit_code == 0
    assert "applied 7 events" in result.stdout
    assert "differs from the digest before the rebuild (d0)" in result.stdout


def test_up_and_serve_delegate_to_the_runtime(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[tuple[str, object]] = []
    fake = types.ModuleType("benchwright_runtime.cli")
    fake.up = lambda data_dir, port, proxy_port: calls.append(  # type: ignore[attr-defined]
        ("up", (data_dir, port, proxy_port))
    )
    fake.serve = lambda service: calls.append(("serve", service))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "benchwright_runtime.cli", fake)

    assert runner.invoke(app, ["up", "--data-dir", str(tmp_path), "--port", "9000"]).exit_code == 0
    assert runner.invoke(app, ["up", "--proxy-port", "9001"]).exit_code == 0
    assert runner.invoke(app, ["serve", "gateway"]).exit_code == 0
    assert calls == [
        ("up", (tmp_path, 9000, None)),
        ("up", (None, None, 9001)),
        ("serve", "gateway"),
    ]


def test_up_without_the_server_package_prints_an_install_hint(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # None in sys.modules makes the import fail as if the package were not installed.
    monkeypatch.setitem(sys.modules, "benchwright_runtime.cli", None)
    result = runner.invoke(app, ["up"])
    assert result.exit_code == 2
    assert result.stderr == "install the server: pip install 'benchwright[server]'\n"


def test_version(runner: CliRunner) -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.startswith("benchwright ")


def test_without_a_dashboard_the_cli_prints_the_runs_api_url(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchwright._models import Run
    from benchwright.cli.commands.run._group import echo_link

    run = Run.model_validate(
        {"id": "r1", "status": "ok", "links": {"self": "http://h/v1/runs/r1", "dashboard": None}}
    )
    echo_link(run)
    assert capsys.readouterr().out.strip() == "url: http://h/v1/runs/r1"
