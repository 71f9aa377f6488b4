"""Profiles, ``login``, ``token create`` and the global ``--output``/``--debug`` flags."""

from __future__ import annotations

import json
import stat
import tomllib
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from benchwright import Benchwright
from benchwright.cli import _common, app
from benchwright.cli._profiles import save_profile

from .cli_support import RUN, isolate_config, use_gateway
from .fakes import RUN_ID, TOKEN, FakeGateway, problem, run_body

WORK = {"base_url": "https://work.example", "token": "bw_live_pat_work"}
HOME = {"base_url": "http://127.0.0.1:9999", "token": "bw_live_pat_home"}


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    return isolate_config(monkeypatch, tmp_path)


@pytest.fixture
def calls(
    monkeypatch: pytest.MonkeyPatch, gateway: FakeGateway, config: Path
) -> list[dict[str, Any]]:
    gateway.on("GET", RUN, httpx.Response(200, json=run_body("ok")))
    return use_gateway(monkeypatch, gateway)


def write_config(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_default_profile_fills_what_the_environment_leaves_unset(
    runner: CliRunner, calls: list[dict[str, Any]], config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_profile("work", WORK)
    save_profile("home", HOME)
    assert runner.invoke(app, ["run", "show", RUN_ID]).exit_code == 0
    assert calls[-1] == {"api_key": WORK["token"], "base_url": WORK["base_url"]}

    monkeypatch.setenv("BW_PAT", "bw_live_pat_env")
    runner.invoke(app, ["run", "show", RUN_ID])
    assert calls[-1] == {"api_key": None, "base_url": WORK["base_url"]}

    # A profile asked for by name wins over the environment.
    runner.invoke(app, ["--profile", "home", "run", "show", RUN_ID])
    assert calls[-1] == {"api_key": HOME["token"], "base_url": HOME["base_url"]}
    monkeypatch.setenv("BW_PROFILE", "home")
    runner.invoke(app, ["run", "show", RUN_ID])
    assert calls[-1] == {"api_key": HOME["token"], "base_url": HOME["base_url"]}


def test_without_a_config_file_the_client_configures_itself(
    runner: CliRunner, calls: list[dict[str, Any]]
) -> None:
    assert runner.invoke(app, ["run", "show", RUN_ID]).exit_code == 0
    assert calls[-1] == {"api_key": None, "base_url": None}


def test_profile_errors_are_one_line(
    runner: CliRunner, calls: list[dict[str, Any]], config: Path
) -> None:
    save_profile("work", WORK)
    missing = runner.invoke(app, ["--profile", "nope", "run", "show", RUN_ID])
    assert missing.exit_code == 2
    assert missing.stderr == f"error: no profile 'nope' in {config} (profiles: work)\n"

    write_config(config, "[profiles.work\nbase_url = 1")
    broken = runner.invoke(app, ["run", "show", RUN_ID])
    assert broken.exit_code == 2
    assert broken.stderr.startswith(f"error: {config} is not valid TOML")
    assert calls == []


def test_a_hand_written_config_with_default_profile(
    runner: CliRunner, calls: list[dict[str, Any]], config: Path
) -> None:
    write_config(
        config,
        'default_profile = "home"\n\n'
        '[profiles.work]\nbase_url = "https://work.example"\ntoken = "w"\n\n'
        '[profiles.home]\nbase_url = "http://127.0.0.1:9999"\ntoken = "h"\n',
    )
    runner.invoke(app, ["run", "show", RUN_ID])
    assert calls[-1] == {"api_key": "h", "base_url": "http://127.0.0.1:9999"}


def test_save_profile_keeps_others_and_the_file_private(config: Path) -> None:
    save_profile("work", WORK)
    save_profile("odd name", {"base_url": 'http://h/"q"', "token": "t\u00e9"})
    save_profile("work", {**WORK, "token": "bw_live_pat_new"})
    parsed = tomllib.loads(config.read_text())
    assert parsed == {
        "default_profile": "work",
        "profiles": {
            "work": {**WORK, "token": "bw_live_pat_new"},
            "odd name": {"base_url": 'http://h/"q"', "token": "t\u00e9"},
        },
    }
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


def fake_login(
    gateway: FakeGateway, monkeypatch: pytest.MonkeyPatch, seen: list[tuple[str, str, Any]]
) -> None:
    def session(username: str, password: str, base_url: str | None = None) -> Benchwright:
        seen.append((username, password, base_url))
        return Benchwright(
            api_key="bw_session",
            base_url=base_url or "http://127.0.0.1:8765",
            http_client=gateway.client(),
        )

    monkeypatch.setattr(_common, "session_factory", session)
    minted = {"object": "token", "token": "bw_live_pat_minted", "scopes": ["runs:read"]}
    gateway.on("POST", "/v1/tokens", httpx.Response(201, json=minted))


def test_login_mints_a_token_and_saves_a_profile(
    runner: CliRunner, gateway: FakeGateway, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, str, Any]] = []
    fake_login(gateway, monkeypatch, seen)
    result = runner.invoke(
        app,
        [
            "--profile",
            "work",
            "login",
            "--url",
            "https://work.example",
            "--username",
            "ada",
            "--password",
            "correct horse",
            "--scopes",
            "runs:read runs:write",
            "-o",
            "table",
        ],
    )
    assert result.exit_code == 0, result.output
    assert seen == [("ada", "correct horse", "https://work.example")]
    request = gateway.seen("POST", "/v1/tokens")[0]
    assert request.headers["Authorization"] == "Bearer bw_session"
    body = json.loads(request.content)
    assert body["scopes"] == ["runs:read", "runs:write"]
    assert body["label"].startswith("benchwright CLI on ")
    assert "profile 'work' saved" in result.stdout
    assert "bw_live_pat_minted" not in result.output
    assert tomllib.loads(config.read_text())["profiles"]["work"] == {
        "base_url": "https://work.example",
        "token": "bw_live_pat_minted",
    }

    # Logging in again to the same profile reuses its server.
    runner.invoke(app, ["login", "--profile", "work", "--username", "ada", "--password", "x"])
    assert seen[-1][2] == "https://work.example"


def test_login_without_credentials_off_a_terminal_says_what_to_pass(
    runner: CliRunner, gateway: FakeGateway, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_login(gateway, monkeypatch, [])
    result = runner.invoke(app, ["login", "--url", "https://work.example"])
    assert result.exit_code == 2
    assert "pass --username and --password" in result.stderr
    assert not config.exists()


def test_login_uses_the_local_servers_saved_admin_login(
    runner: CliRunner,
    gateway: FakeGateway,
    config: Path,
    monkeypatch: pytest.MonkeyPatch,
    isolated_env: Path,
) -> None:
    seen: list[tuple[str, str, Any]] = []
    fake_login(gateway, monkeypatch, seen)
    isolated_env.mkdir(parents=True)
    (isolated_env / "credentials.json").write_text(
        json.dumps(
            {
                "base_url": "http://127.0.0.1:8765",
                "token": TOKEN,
                "login": {"username": "admin", "password": "s3cret"},
            }
        )
    )
    result = runner.invoke(app, ["login", "--url", "http://127.0.0.1:8765"])
    assert result.exit_code == 0, result.output
    assert seen == [("admin", "s3cret", "http://127.0.0.1:8765")]
    assert "logging in as admin" in result.stderr


def test_token_create_prints_the_bare_token_unless_asked(
    runner: CliRunner, gateway: FakeGateway, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, str, Any]] = []
    fake_login(gateway, monkeypatch, seen)
    save_profile("work", WORK)
    result = runner.invoke(app, ["token", "create", "--username", "ada", "--password", "pw"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "bw_live_pat_minted\n"
    assert seen == [("ada", "pw", WORK["base_url"])]
    as_json = runner.invoke(
        app, ["-o", "json", "token", "create", "--username", "ada", "--password", "pw"]
    )
    assert json.loads(as_json.stdout)["token"] == "bw_live_pat_minted"


def test_output_defaults_to_ndjson_off_a_terminal_and_follows_the_global_flag(
    runner: CliRunner, calls: list[dict[str, Any]]
) -> None:
    piped = runner.invoke(app, ["run", "show", RUN_ID])
    assert json.loads(piped.stdout)["id"] == RUN_ID and piped.stdout.count("\n") == 1
    pretty = runner.invoke(app, ["--output", "json", "run", "show", RUN_ID])
    assert pretty.stdout.startswith("{\n")
    table = runner.invoke(app, ["-o", "table", "run", "show", RUN_ID])
    assert "qwen/qwen3-32b@openrouter" in table.stdout
    # The command's own flag wins over the global one.
    both = runner.invoke(app, ["-o", "table", "run", "show", RUN_ID, "-o", "ndjson"])
    assert json.loads(both.stdout)["id"] == RUN_ID


def test_yaml_output(runner: CliRunner, calls: list[dict[str, Any]]) -> None:
    import yaml

    result = runner.invoke(app, ["run", "show", RUN_ID, "-o", "yaml"])
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.stdout)["id"] == RUN_ID


def test_debug_adds_the_problem_body(
    runner: CliRunner, gateway: FakeGateway, calls: list[dict[str, Any]]
) -> None:
    gateway.on("GET", RUN, problem(404, "run not found", "no such run", code="not_found"))
    plain = runner.invoke(app, ["run", "show", RUN_ID])
    assert plain.stderr == "error: run not found: no such run\n"
    debug = runner.invoke(app, ["--debug", "run", "show", RUN_ID])
    assert debug.exit_code == 1
    first, rest = debug.stderr.split("\n", 1)
    assert first == "error: run not found: no such run"
    assert json.loads(rest)["code"] == "not_found"
