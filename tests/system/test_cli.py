"""The ``benchwright`` CLI against the live embedded platform: a CI gate (guide 11.1)
that streams, re-attaches on a retry, and names its run ``@last``."""

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from benchwright.cli import app
from benchwright_registry.catalog import builtin_catalog
from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer, gsm8k_oracle

pytestmark = [pytest.mark.slow, pytest.mark.connected]


@pytest.fixture
def oracle() -> Any:
    bench = next(b for b in builtin_catalog() if b.name == "GSM8K")
    rows = bench.subsets[0].load_rows()[:20]
    server = FakeOpenAIServer(gsm8k_oracle(rows, correct_every=2)).start()
    yield server
    server.stop()


@pytest.fixture
def cli_env(platform: Platform, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The CLI as CI runs it: token and server from the environment, a private config."""
    assert platform.client is not None
    monkeypatch.setenv("BW_PAT", platform.token)
    monkeypatch.setenv("BW_BASE_URL", str(platform.client.base_url).rstrip("/"))
    monkeypatch.setenv("BW_CONFIG", str(tmp_path / "config" / "config.toml"))
    for name in ("BW_PROFILE", "BW_OUTPUT"):
        monkeypatch.delenv(name, raising=False)
    workdir = tmp_path / "checkout"
    workdir.mkdir()
    monkeypatch.chdir(workdir)


async def cli(*args: str) -> Result:
    # The platform shares this event loop: the CLI's blocking calls go to a thread.
    return await asyncio.to_thread(CliRunner().invoke, app, list(args))


async def test_ci_gate_reattaches_and_names_its_run_last(
    platform: Platform, oracle: FakeOpenAIServer, cli_env: None
) -> None:
    launch = [
        "run",
        "--benchmark",
        "GSM8K",
        "--model",
        "fake-gsm8k@openai_compatible",
        "--api-base",
        oracle.base_url,
        "--limit",
        "4",
        "--limit-to",
        "run.duration=600",
    ]
    held = await cli(*launch, "--gate", "pass_rate=0.5", "-o", "json")
    assert held.exit_code == 0, held.output
    document = json.loads(held.stdout)
    run_id = document["run"]["id"]
    assert document["run"]["status"] == "ok"
    assert document["run"]["limits"] == {"run": {"duration": 600.0}}
    assert document["summary"]["total"] == 4 and document["summary"]["passed"] == 2
    assert document["gate"] == {"metric": "pass_rate", "threshold": 0.5, "value": 0.5, "held": True}
    assert "gate held: pass_rate 0.500 >= 0.500" in held.stderr
    assert "▶ materialize" in held.stderr  # progress goes to stderr beside a JSON document

    # The CI job retried with a stricter gate: same invocation, same run, no new spend.
    strict = await cli(*launch, "--gate", "pass_rate=0.9", "-o", "json")
    assert strict.exit_code == 3, strict.output
    assert f"re-attached to run {run_id}" in strict.stderr
    assert json.loads(strict.stdout)["run"]["id"] == run_id
    assert "gate failed: pass_rate 0.500 < 0.900" in strict.stderr
    assert platform.client is not None
    listed = (await platform.client.get("/v1/runs")).json()["data"]
    assert [r["id"] for r in listed] == [run_id]

    shown = await cli("run", "show", "@last", "-o", "json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["id"] == run_id
    failures = await cli("run", "tasks", "@last", "--passed=false")
    rows = [json.loads(line) for line in failures.stdout.splitlines()]
    assert len(rows) == 3 and rows[-1]["object"] == "task_summary"
    assert all(r["outcome"] != "pass" for r in rows[:-1])

    # A replay of @last streams its events as ndjson and becomes @last itself.
    replay = await cli("run", "--replay-from", "@last", "--gate", "pass_rate=0.5")
    assert replay.exit_code == 0, replay.output
    lines = [json.loads(line) for line in replay.stdout.splitlines()]
    assert lines[0]["type"] == "RunLaunched"
    final = lines[-1]
    assert final["run"]["derived_from"] == run_id and final["gate"]["held"] is True
    assert final["run"]["id"] != run_id
    again = await cli("run", "show", "@last", "-o", "json")
    assert json.loads(again.stdout)["id"] == final["run"]["id"]


async def test_an_inspect_evals_task_without_offline_data_is_refused_in_one_line(
    platform: Platform, cli_env: None
) -> None:
    result = await cli(
        "run",
        "launch",
        "Run MMLU abstract_algebra via Inspect",
        "--harness",
        "inspect",
        "--harness-task",
        "inspect_evals/drop",
    )
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "inspect_evals/drop loads its data from the Hugging Face hub" in result.stderr
    assert "(field: metadata.inspect_harness.task)" in result.stderr
