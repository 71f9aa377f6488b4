"""Token and base URL resolution: arguments, then environment, then credentials file."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from benchwright import Benchwright, ConfigurationError, credentials_path, resolve_config
from benchwright._config import DEFAULT_BASE_URL


def write_credentials(directory: Path, **body: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "credentials.json"
    path.write_text(json.dumps(body))
    return path


def test_credentials_file_is_used_when_nothing_else_is_set(isolated_env: Path) -> None:
    write_credentials(isolated_env, base_url="http://127.0.0.1:9999/", token="bw_live_pat_file")
    config = resolve_config()
    assert config.api_key == "bw_live_pat_file"
    assert config.base_url == "http://127.0.0.1:9999"


def test_environment_beats_the_file(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_credentials(isolated_env, base_url="http://file.test", token="bw_live_pat_file")
    monkeypatch.setenv("BW_PAT", "bw_live_pat_env")
    monkeypatch.setenv("BW_BASE_URL", "http://env.test")
    config = resolve_config()
    assert (config.api_key, config.base_url) == ("bw_live_pat_env", "http://env.test")


def test_arguments_beat_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BW_PAT", "bw_live_pat_env")
    monkeypatch.setenv("BW_BASE_URL", "http://env.test")
    config = resolve_config(api_key="bw_live_pat_arg", base_url="http://arg.test")
    assert (config.api_key, config.base_url) == ("bw_live_pat_arg", "http://arg.test")


def test_each_setting_falls_back_on_its_own(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_credentials(isolated_env, base_url="http://file.test", token="bw_live_pat_file")
    monkeypatch.setenv("BW_PAT", "bw_live_pat_env")
    config = resolve_config()
    assert (config.api_key, config.base_url) == ("bw_live_pat_env", "http://file.test")


def test_default_base_url_when_only_a_token_is_given() -> None:
    assert resolve_config(api_key="bw_live_pat_x").base_url == DEFAULT_BASE_URL


def test_home_directory_is_the_default_location(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("BW_DATA_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    write_credentials(tmp_path / ".benchwright", token="bw_live_pat_home")
    assert credentials_path() == tmp_path / ".benchwright" / "credentials.json"
    assert resolve_config().api_key == "bw_live_pat_home"


def test_missing_token_explains_how_to_get_one(isolated_env: Path) -> None:
    with pytest.raises(ConfigurationError) as info:
        Benchwright()
    message = str(info.value)
    assert "benchwright up" in message
    assert "BW_PAT" in message
    assert str(isolated_env / "credentials.json") in message


def test_unreadable_credentials_file_is_a_clear_error(isolated_env: Path) -> None:
    isolated_env.mkdir()
    (isolated_env / "credentials.json").write_text("{not json")
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        resolve_config()


def test_explicit_token_never_reads_a_broken_file(isolated_env: Path) -> None:
    isolated_env.mkdir()
    (isolated_env / "credentials.json").write_text("{not json")
    config = resolve_config(api_key="bw_live_pat_arg", base_url="http://arg.test")
    assert config.api_key == "bw_live_pat_arg"


def test_token_is_sent_as_bearer_and_kept_out_of_repr() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"object": "list", "data": [], "next_page_token": None})

    with Benchwright(
        api_key="bw_live_pat_secret123456",
        base_url="http://bw.test/",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    ) as bw:
        bw.runs.list()
        assert "secret123456" not in repr(bw._http.config)
    assert seen[0].headers["authorization"] == "Bearer bw_live_pat_secret123456"
    assert str(seen[0].url).startswith("http://bw.test/v1/runs?")
