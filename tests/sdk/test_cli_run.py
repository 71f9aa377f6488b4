"""``benchwright run``: launch modes and flags, the gate, @last, re-attaching, and
managing runs, against the fake gateway."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from benchwright import AsyncBenchwright, Benchwright
from benchwright.cli import app
from benchwright.cli._launch import git_commit, invocation_key

from .cli_support import RUN, isolate_config, script_run, sent_json, use_gateway
from .fakes import RUN_ID, SUMMARY, TOKEN, FakeGateway, problem, run_body

PINNED = ["run", "--benchmark", "GSM8K", "--model", "qwen/qwen3-32b@openrouter"]
OTHER_ID = "3f2b9c1e-0000-4000-8000-000000000002"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(autouse=True)
def cli_env(monkeypatch: pytest.MonkeyPatch, gateway: FakeGateway, tmp_path: Path) -> Path:
    use_gateway(monkeypatch, gateway)
    return isolate_config(monkeypatch, tmp_path)


def launches(gateway: FakeGateway) -> list[httpx.Request]:
    return gateway.seen("POST", "/v1/runs")


def test_a_positional_request_is_a_natural_language_launch(
    runner: CliRunner, gateway: FakeGateway
) -> None:
    script_run(gateway)
    result = runner.invoke(app, ["run", "Run GSM8K on local/smollm2, first 2", "--no-wait"])
    assert result.exit_code == 0, result.output
    assert sent_json(launches(gateway)[0]) == {"request": "Run GSM8K on local/smollm2, first 2"}
    # `run launch` is the same command, spelled out.
    spelled = runner.invoke(app, ["run", "launch", "-r", "Run GSM8K", "--no-wait"])
    assert spelled.exit_code == 0, spelled.output
    assert sent_json(launches(gateway)[1]) == {"request": "Run GSM8K"}


def test_launch_flags_map_onto_the_launch_body(runner: CliRunner, gateway: FakeGateway) -> None:
    script_run(gateway)
    result = runner.invoke(
        app,
        [
            "run",
            "launch",
            "Run MMLU on qwen3-32b via Inspect",
            "--harness",
            "inspect",
            "--harness-task",
            "inspect_evals/mmlu_0_shot",
            "--compute",
            "sandbox0",
            "--limit",
            "50",
            "--limit-to",
            "run.cost=15",
            "--limit-to",
            "phase:atomize.duration=60",
            "--driver",
            "builtin",
            "--hint",
            "the answer is a letter",
            "--hint",
            "ignore case",
            "--phase-model",
            "atomize=openai://gpt-4o",
            "--no-wait",
        ],
    )
    assert result.exit_code == 0, result.output
    assert sent_json(launches(gateway)[0]) == {
        "request": "Run MMLU on qwen3-32b via Inspect",
        "harness": "inspect",
        "compute": "sandbox0",
        "driver": "builtin",
        "limits": {"run": {"cost": 15.0}, "phase:atomize": {"duration": 60.0}},
        "metadata": {"inspect_harness": {"task": "inspect_evals/mmlu_0_shot"}, "limit": 50},
        "hints": ["the answer is a letter", "ignore case"],
        "phase_models": {"atomize": "openai://gpt-4o"},
    }


def test_an_unsupported_harness_shows_the_servers_reason(
    runner: CliRunner, gateway: FakeGateway
) -> None:
    detail = (
        "harness: Value error, the 'lmeval' harness is not supported here (its tasks fetch "
        "their data from the internet); use 'inspect' (an Inspect AI task file with its "
        "local data, in metadata.inspect_harness), 'harbor' (a Harbor-format dataset of "
        "agentic tasks, in metadata.harbor_harness) or 'benchwright' (the default)"
    )
    gateway.on("POST", "/v1/runs", problem(400, "invalid request", detail, field="harness"))
    argv = ["run", "launch", "Run MMLU", "--harness", "lmeval", "--harness-task", "mmlu"]
    result = runner.invoke(app, argv)
    assert result.exit_code == 1
    assert result.stderr == f"error: invalid request: {detail} (field: harness)\n"


def test_an_inspect_harness_needs_its_task(runner: CliRunner) -> None:
    result = runner.invoke(app, ["run", "launch", "Run MMLU", "--harness", "inspect"])
    assert result.exit_code == 2
    assert result.stderr == "error: --harness inspect needs --harness-task\n"


STARTER = Path(__file__).resolve().parents[2] / "examples" / "harbor" / "benchwright-starter"
HARBOR = ["run", "--harness", "harbor", "--model", "m@local", "--no-wait"]


def harbor_dataset(root: Path) -> Path:
    """A dataset folder of two tasks, with what a folder on disk also holds: caches,
    hidden files."""
    for task in ("fix-bug", "count-lines"):
        for name, text in {
            "task.toml": '[environment]\nnetwork_mode = "no-network"\n',
            "instruction.md": f"Do {task}.\n",
            "environment/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\n",
            "tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
            "solution/solve.sh": "true\n",
        }.items():
            (root / task / name).parent.mkdir(parents=True, exist_ok=True)
            (root / task / name).write_text(text)
    (root / "fix-bug" / "environment" / "__pycache__").mkdir()
    (root / "fix-bug" / "environment" / "__pycache__" / "x.pyc").write_bytes(b"\x00\x01")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return root


def test_a_harbor_launch_sends_the_dataset_folder(
    runner: CliRunner, gateway: FakeGateway, tmp_path: Path
) -> None:
    script_run(gateway)
    folder = harbor_dataset(tmp_path / "my-tasks")
    argv = [
        *HARBOR,
        "--harness-task",
        str(folder),
        "--harbor-task",
        "fix-bug",
        "--agent",
        "benchwright",
        "--agent-arg",
        "max_turns=30",
        "--agent-arg",
        "system_prompt=Be brief.",
    ]
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, result.output
    sent = sent_json(launches(gateway)[0])
    assert sent == {
        "harness": "harbor",
        "sut": {"model": "m", "provider": "local"},
        "metadata": {
            "harbor_harness": {
                "dataset": "my-tasks",
                "files": {
                    f"{task}/{name}": (folder / task / name).read_text()
                    for task in ("count-lines", "fix-bug")
                    for name in (
                        "environment/Dockerfile",
                        "instruction.md",
                        "solution/solve.sh",
                        "task.toml",
                        "tests/test.sh",
                    )
                },
                "agent": "benchwright",
                "agent_args": {"max_turns": 30, "system_prompt": "Be brief."},
            },
            "harbor_task": "fix-bug",
        },
    }
    # The agent defaults to the platform's own; the starter dataset goes whole.
    again = runner.invoke(app, [*HARBOR, "--harness-task", str(STARTER)])
    assert again.exit_code == 0, again.output
    harness = sent_json(launches(gateway)[1])["metadata"]["harbor_harness"]
    assert (harness["dataset"], harness["agent"], harness["agent_args"]) == (
        "benchwright-starter",
        "benchwright",
        {},
    )
    assert "fix-median/environment/stats.py" in harness["files"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--harness-task", "no/such/folder"], "--harness-task no/such/folder: no such folder"),
        (["--harness-task", "BINARY"], "is not UTF-8 text"),
        (["--harness-task", "BIG"], "a dataset's file may hold 524,288"),
        (["--harness-task", "DATASET", "--agent-arg", "max_turns"], "--agent-arg takes KEY=VALUE"),
        (["--harness-task", "DATASET", "--harness-arg", "a=1"], "--harness-arg is an Inspect"),
        (["run my agents", "--agent", "oracle"], "--harness harbor needs --harness-task"),
    ],
)
def test_a_folder_that_cannot_be_sent_is_a_one_line_error(
    runner: CliRunner, gateway: FakeGateway, tmp_path: Path, args: list[str], message: str
) -> None:
    folder = harbor_dataset(tmp_path / "my-tasks")
    (tmp_path / "binary" / "t").mkdir(parents=True)
    (tmp_path / "binary" / "t" / "task.toml").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "data.csv").write_bytes(b"1," * (300 * 1024))
    where = {
        "DATASET": str(folder),
        "BINARY": str(tmp_path / "binary"),
        "BIG": str(tmp_path / "big"),
    }
    result = runner.invoke(app, [*HARBOR, *(where.get(a, a) for a in args)])
    assert result.exit_code == 2, result.output
    assert message in result.stderr and result.stderr.count("\n") == 1
    assert gateway.requests == []


def test_harbor_flags_need_the_harbor_harness(runner: CliRunner, gateway: FakeGateway) -> None:
    result = runner.invoke(app, ["run", "Run GSM8K", "--agent", "oracle"])
    assert result.exit_code == 2
    assert result.stderr == "error: --agent takes --harness harbor\n"
    assert gateway.requests == []


def test_a_refused_harbor_launch_is_one_line_and_exit_1(
    runner: CliRunner, gateway: FakeGateway, tmp_path: Path
) -> None:
    field = 'metadata.harbor_harness.files["fix-bug/environment/Dockerfile"]'
    detail = "task 'fix-bug': environment/Dockerfile line 3: `RUN apt-get install -y jq`: ..."
    gateway.on(
        "POST",
        "/v1/runs",
        problem(422, "the task's environment cannot be built here", detail, field=field),
    )
    folder = harbor_dataset(tmp_path / "my-tasks")
    result = runner.invoke(app, [*HARBOR, "--harness-task", str(folder)])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and field in result.stderr
    assert "RUN apt-get install" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--limit-to", "run.cost", "x"], "--limit-to takes LEVEL.QUANTITY=NUMBER"),
        (["run", "x", "--gate", "pass_rate=1.5"], "--gate takes pass_rate=FRACTION"),
        (["run", "x", "--gate", "accuracy=0.5"], "--gate takes pass_rate=FRACTION"),
        (["run", "x", "--gate", "pass_rate=0.9", "--no-wait"], "--gate needs the run's result"),
        (["run", "x", "--gate", "no-regression-vs=@latest"], "--gate no-regression-vs takes"),
        (["run", "x", "--gate", "no-regression-vs="], "--gate no-regression-vs takes"),
        (["run", "x", "--gate", "no-regression-vs=run_1,alpha=0.9"], "--gate no-regression-vs"),
        (["run", "x", "--gate", "no-regression-vs=run_1,beta=0.1"], "--gate no-regression-vs"),
        (["run", "x", "--harness-task", "t"], "--harness-task needs --harness"),
        (["run", "x", "--benchmark", "GSM8K"], "`benchwright run` needs one of REQUEST"),
        (["run", "x", "--subset", "s"], "--subset and --impl pin a catalog entry"),
        (["run", "--benchmark", "GSM8K"], "a pinned run needs --model"),
        (["run", "x", "--phase-model", "atomize:gpt-4o"], "--phase-model takes PHASE=PROVIDER"),
    ],
)
def test_bad_launch_flags_are_one_line_usage_errors(
    runner: CliRunner, gateway: FakeGateway, args: list[str], message: str
) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {message}")
    assert result.stderr.count("\n") == 1
    assert gateway.requests == []


@pytest.mark.parametrize(
    ("pass_rate", "final", "code", "verdict"),
    [
        (0.95, "ok", 0, "gate held: pass_rate 0.950 >= 0.900"),
        (0.5, "ok", 3, "gate failed: pass_rate 0.500 < 0.900"),
        (0.95, "error", 1, "gate failed: the run ended in error"),
    ],
)
def test_gate_exits_on_the_aggregate_pass_rate_or_a_run_error(
    runner: CliRunner,
    gateway: FakeGateway,
    pass_rate: float,
    final: str,
    code: int,
    verdict: str,
) -> None:
    script_run(gateway, final_status=final, summary={**SUMMARY, "pass_rate": pass_rate})
    table = runner.invoke(app, [*PINNED, "--gate", "pass_rate=0.90", "-o", "table"])
    assert table.exit_code == code, table.output
    assert verdict in table.stdout

    as_json = runner.invoke(app, [*PINNED, "--gate", "pass_rate=0.90", "-o", "json"])
    assert as_json.exit_code == code
    document = json.loads(as_json.stdout)
    assert document["gate"] == {
        "metric": "pass_rate",
        "threshold": 0.9,
        "value": pass_rate,
        "held": code == 0,
    }
    assert verdict in as_json.stderr


def comparison(outcome: str, regressed: int, fixed: int, p_value: float) -> dict[str, Any]:
    """A whole ``RunComparison`` answer, as the gateway writes one."""
    text = f"{RUN_ID} is {outcome} than run_ref: {regressed} regressions vs {fixed} fixes"
    common = 0 if outcome == "no_common_tasks" else 100
    return {
        "object": "run_comparison",
        "a": {"id": "run_ref", "status": "ok"},
        "b": {"id": RUN_ID, "status": "ok"},
        "tasks": {"common": common, "judged": common, "only_in_a": 0, "only_in_b": 0},
        "flips": {
            "fixed": fixed,
            "regressed": regressed,
            "unchanged_pass": max(common - fixed - regressed, 0),
            "unchanged_fail": 0,
        },
        "errored": {"a_only": 0, "b_only": 0, "both": 0},
        "pass_rate": {"a": None, "b": None, "difference": None},
        "mean_score": {"a": None, "b": None, "difference": None},
        "mcnemar": {
            "regressed": regressed,
            "fixed": fixed,
            "p_value": p_value,
            "method": "exact (two-sided binomial on the discordant pairs)",
        },
        "verdict": {"outcome": outcome, "significant": p_value < 0.01, "alpha": 0.01, "text": text},
    }


@pytest.mark.parametrize(
    ("outcome", "regressed", "fixed", "p_value", "code"),
    [
        ("worse", 12, 3, 0.035, 3),
        ("no_significant_difference", 3, 2, 1.0, 0),
        ("better", 0, 9, 0.004, 0),
        ("no_common_tasks", 0, 0, 1.0, 3),
    ],
)
def test_the_regression_gate_fails_only_a_significantly_worse_run(
    runner: CliRunner,
    gateway: FakeGateway,
    outcome: str,
    regressed: int,
    fixed: int,
    p_value: float,
    code: int,
) -> None:
    script_run(gateway)
    answer = comparison(outcome, regressed, fixed, p_value)
    gateway.on("GET", "/v1/runs/run_ref/compare", httpx.Response(200, json=answer))
    gate = "no-regression-vs=run_ref,alpha=0.01"
    result = runner.invoke(app, [*PINNED, "--gate", gate, "-o", "json"])
    assert result.exit_code == code, result.output
    (asked,) = gateway.seen("GET", "/v1/runs/run_ref/compare")
    assert dict(asked.url.params) == {"with": RUN_ID, "alpha": "0.01"}
    document = json.loads(result.stdout)["gate"]
    assert document == {
        "metric": "no_regression",
        "reference": "run_ref",
        "alpha": 0.01,
        "reference_run": "run_ref",
        "outcome": outcome,
        "regressed": regressed,
        "fixed": fixed,
        "p_value": p_value,
        "held": code == 0,
    }
    assert f"gate {'held' if code == 0 else 'failed'}: {answer['verdict']['text']}" in result.stderr


def test_a_parentless_run_fails_a_gate_against_its_parent(
    runner: CliRunner, gateway: FakeGateway
) -> None:
    script_run(gateway)
    result = runner.invoke(app, [*PINNED, "--gate", "no-regression-vs=@parent", "-o", "table"])
    assert result.exit_code == 3, result.output
    assert "gate failed: no run to compare with for @parent" in result.stdout


def test_run_diff_prints_the_flips_and_the_verdict(runner: CliRunner, gateway: FakeGateway) -> None:
    answer = {
        "object": "run_comparison",
        "a": {"id": "run_a", "status": "ok"},
        "b": {"id": "run_b", "status": "ok"},
        "tasks": {"common": 100, "judged": 98, "only_in_a": 0, "only_in_b": 2},
        "flips": {"fixed": 3, "regressed": 12, "unchanged_pass": 80, "unchanged_fail": 3},
        "errored": {"a_only": 0, "b_only": 2, "both": 0},
        "pass_rate": {"a": 0.939, "b": 0.847, "difference": -0.092},
        "mean_score": {
            "a": 0.939,
            "b": 0.847,
            "difference": -0.092,
            "interval": {"low": -0.15, "high": -0.03, "level": 0.95, "method": "bootstrap"},
        },
        "mcnemar": {
            "regressed": 12,
            "fixed": 3,
            "p_value": 0.0352,
            "method": "exact (two-sided binomial on the discordant pairs)",
        },
        "verdict": {
            "outcome": "worse",
            "significant": True,
            "alpha": 0.1,
            "text": "run_b is worse than run_a: 12 vs 3, p = 0.035.",
        },
        "changes": [
            {
                "task_id": "t1",
                "change": "regressed",
                "a": {"index": 0, "outcome": "pass", "score": 1.0},
                "b": {"index": 0, "outcome": "fail", "score": 0.0},
            }
        ],
        "differences": [{"part": "model.model", "a": "m-1", "b": "m-2"}],
    }
    gateway.on("GET", "/v1/runs/run_a/compare", httpx.Response(200, json=answer))
    table = runner.invoke(app, ["run", "diff", "run_a", "run_b", "--alpha", "0.1", "-o", "table"])
    assert table.exit_code == 0, table.output
    assert dict(gateway.seen("GET", "/v1/runs/run_a/compare")[0].url.params) == {
        "with": "run_b",
        "alpha": "0.1",
    }
    lines = table.stdout.splitlines()
    assert any(line.split() == ["regressed", "12"] for line in lines)
    assert "95% interval -0.150 to -0.030" in table.stdout
    assert "differs: model.model  m-1 -> m-2" in table.stdout
    assert lines[-1] == "run_b is worse than run_a: 12 vs 3, p = 0.035."
    ndjson = runner.invoke(app, ["run", "diff", "run_a", "run_b", "-o", "ndjson"])
    rows = [json.loads(line) for line in ndjson.stdout.splitlines()]
    assert rows == [answer["changes"][0], answer["verdict"]]


def test_the_gate_fails_a_run_without_a_pass_rate(runner: CliRunner, gateway: FakeGateway) -> None:
    empty = {"total": 0, "passed": 0, "failed": 0, "errored": 0, "pass_rate": None}
    script_run(gateway, summary=empty)
    result = runner.invoke(app, [*PINNED, "--gate", "pass_rate=0", "-o", "table"])
    assert result.exit_code == 3
    assert "gate failed: pass_rate none < 0.000" in result.stdout


def test_identical_invocations_send_the_same_key_and_reattach(
    runner: CliRunner, gateway: FakeGateway
) -> None:
    script_run(gateway)
    first = runner.invoke(app, [*PINNED, "--no-wait", "-o", "table"])
    assert first.exit_code == 0, first.output
    assert "re-attached" not in first.output
    # Display-only flags do not change the invocation: the server returns the same run.
    again = runner.invoke(app, [*PINNED, "-o", "json", "--gate", "pass_rate=0.1"])
    assert again.exit_code == 0, again.output
    assert f"re-attached to run {RUN_ID}" in again.stderr
    keys = [r.headers["Idempotency-Key"] for r in launches(gateway)]
    assert keys[0] == keys[1] and keys[0].startswith("cli-")
    assert len(keys[0]) == len("cli-") + 64

    runner.invoke(app, [*PINNED, "--limit", "3", "--no-wait"])
    runner.invoke(app, [*PINNED, "--fresh", "--no-wait"])
    runner.invoke(app, [*PINNED, "--idempotency-key", "gha-42", "--no-wait"])
    keys = [r.headers["Idempotency-Key"] for r in launches(gateway)]
    assert len(set(keys)) == 4 and keys[-1] == "gha-42"
    assert keys[3].startswith("cli-fresh-")


def test_the_key_covers_the_flags_the_directory_and_the_commit(tmp_path: Path) -> None:
    params: dict[str, Any] = {"request": "Run GSM8K", "limit": None, "limit_to": []}
    here = invocation_key("run launch", params, cwd=tmp_path)
    assert here == invocation_key("run launch", {"request": "Run GSM8K"}, cwd=tmp_path)
    assert here != invocation_key("run launch", {"request": "Run GSM8K", "limit": 2}, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert here != invocation_key("run launch", params, cwd=elsewhere)
    # Inside a git work tree the commit is part of it (this repository's, here).
    repo = Path(__file__).resolve().parents[2]
    if git_commit(repo):
        assert len(git_commit(repo)) == 40
    assert git_commit(tmp_path) == ""


def test_at_last_names_the_last_launched_or_forked_run(
    runner: CliRunner, gateway: FakeGateway
) -> None:
    missing = runner.invoke(app, ["run", "show", "@last"])
    assert missing.exit_code == 2
    assert "@last names nothing yet" in missing.stderr

    script_run(gateway)
    assert runner.invoke(app, [*PINNED, "--no-wait"]).exit_code == 0
    shown = runner.invoke(app, ["run", "show", "@last", "-o", "json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["id"] == RUN_ID

    forked = run_body("running", id=OTHER_ID, derived_from=RUN_ID)
    gateway.on("POST", f"{RUN}/fork", httpx.Response(201, json=forked))
    result = runner.invoke(app, ["run", "fork", "@last", "-m", "tighter scoring", "--no-wait"])
    assert result.exit_code == 0, result.output
    assert sent_json(gateway.seen("POST", f"{RUN}/fork")[0]) == {
        "description": "tighter scoring",
        "from_phase": "atomize",
    }
    gateway.on("GET", f"/v1/runs/{OTHER_ID}", httpx.Response(200, json=run_body("ok")))
    runner.invoke(app, ["run", "show", "@last"])
    assert gateway.requests[-1].url.path == f"/v1/runs/{OTHER_ID}"

    # A replay of @last replays the fork.
    runner.invoke(app, ["run", "--replay-from", "@last", "--no-wait"])
    assert sent_json(launches(gateway)[-1]) == {"replay": {"from_run": OTHER_ID}}


def test_fork_streams_like_a_launch(runner: CliRunner, gateway: FakeGateway) -> None:
    script_run(gateway)
    gateway.on("POST", f"{RUN}/fork", httpx.Response(201, json=run_body("running")))
    result = runner.invoke(
        app,
        [
            "run",
            "fork",
            RUN_ID,
            "-m",
            "answer zero-shot",
            "--from-phase",
            "attach",
            "--model",
            "qwen/qwen3-14b@openrouter",
            "-o",
            "table",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "finished: ok" in result.stdout and "33.3%" in result.stdout
    body = sent_json(gateway.seen("POST", f"{RUN}/fork")[0])
    assert body["from_phase"] == "attach"
    assert body["sut"] == {"model": "qwen/qwen3-14b", "provider": "openrouter"}
    assert gateway.seen("POST", f"{RUN}/fork")[0].headers["Idempotency-Key"].startswith("cli-")


def test_publish_patches_visibility(runner: CliRunner, gateway: FakeGateway) -> None:
    gateway.on("PATCH", RUN, httpx.Response(200, json=run_body("ok", visibility="public")))
    result = runner.invoke(app, ["run", "publish", RUN_ID, "-o", "table"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"run {RUN_ID} is public\n"
    assert sent_json(gateway.seen("PATCH", RUN)[0]) == {"visibility": "public"}


def test_publish_on_a_server_without_visibility_says_so(
    runner: CliRunner, gateway: FakeGateway
) -> None:
    # What the gateway answers today: the patch body only knows review_resolution.
    refused = problem(
        400,
        "invalid request",
        "review_resolution: Field required",
        field="review_resolution",
        code="invalid_argument",
        errors=[
            {"field": "review_resolution", "message": "Field required"},
            {"field": "visibility", "message": "Extra inputs are not permitted"},
        ],
    )
    gateway.on("PATCH", RUN, refused)
    result = runner.invoke(app, ["run", "publish", RUN_ID])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: this server cannot change a run's visibility yet")
    assert result.stderr.count("\n") == 1

    # A run that does not exist is still reported as such.
    gateway.on("PATCH", RUN, problem(404, "run not found", f"no run {RUN_ID!r}"))
    missing = runner.invoke(app, ["run", "publish", RUN_ID])
    assert missing.stderr.startswith("error: run not found")


def test_kill_stops_and_delete_destroys(runner: CliRunner, gateway: FakeGateway) -> None:
    gateway.on("POST", f"{RUN}/halt", httpx.Response(202, json=run_body("running", halted=True)))
    killed = runner.invoke(app, ["run", "kill", RUN_ID, "--reason", "wrong model", "-o", "table"])
    assert killed.exit_code == 0, killed.output
    assert killed.stdout == f"stopping run {RUN_ID}\n"
    assert sent_json(gateway.seen("POST", f"{RUN}/halt")[0]) == {"reason": "wrong model"}

    refused = runner.invoke(app, ["run", "delete", RUN_ID])
    assert refused.exit_code == 2 and "pass --yes" in refused.stderr
    assert gateway.seen("DELETE", RUN) == []
    gateway.on("DELETE", RUN, httpx.Response(200, json={"id": RUN_ID, "deleted": True}))
    deleted = runner.invoke(app, ["run", "delete", RUN_ID, "--yes", "-o", "json"])
    assert deleted.exit_code == 0, deleted.output
    assert json.loads(deleted.stdout)["deleted"] is True


def test_halt_pause_resume_and_review(runner: CliRunner, gateway: FakeGateway) -> None:
    gateway.on("POST", f"{RUN}/halt", httpx.Response(202, json=run_body("running", halted=True)))
    gateway.on("POST", f"{RUN}/resume", httpx.Response(202, json=run_body("running")))
    gateway.on("PATCH", RUN, httpx.Response(200, json=run_body("running")))
    halted = runner.invoke(app, ["run", "halt", RUN_ID, "-o", "table"])
    assert halted.exit_code == 0 and halted.stdout == f"stopping run {RUN_ID}\n", halted.output
    paused = runner.invoke(app, ["run", "pause", RUN_ID, "--reason", "lunch", "-o", "table"])
    assert paused.exit_code == 0 and paused.stdout == f"pausing run {RUN_ID}\n", paused.output
    halts = [json.loads(r.content or b"{}") for r in gateway.seen("POST", f"{RUN}/halt")]
    assert halts[0].get("pause") in (None, False)
    assert halts[1]["pause"] is True and halts[1]["reason"] == "lunch"
    resumed = runner.invoke(app, ["run", "resume", RUN_ID, "-o", "table"])
    assert resumed.exit_code == 0 and resumed.stdout == f"resuming run {RUN_ID}\n", resumed.output
    assert len(gateway.seen("POST", f"{RUN}/resume")) == 1
    answered = runner.invoke(app, ["run", "review", RUN_ID, "use exact match", "-o", "table"])
    assert answered.exit_code == 0, answered.output
    assert sent_json(gateway.seen("PATCH", RUN)[0]) == {"review_resolution": "use exact match"}


def test_ls_lists_runs(runner: CliRunner, gateway: FakeGateway) -> None:
    page = {
        "object": "list",
        "data": [run_body("running"), run_body("ok", id=OTHER_ID, summary=SUMMARY)],
        "next_page_token": "p2",
    }
    gateway.on("GET", "/v1/runs", httpx.Response(200, json=page))
    result = runner.invoke(app, ["run", "ls", "--status", "running", "-o", "table"])
    assert result.exit_code == 0, result.output
    assert RUN_ID in result.stdout and "33.3%" in result.stdout
    assert "--page-token p2" in result.stdout
    assert dict(gateway.requests[0].url.params) == {"limit": "20", "status": "running"}

    lines = runner.invoke(app, ["run", "ls"]).stdout.splitlines()
    assert [json.loads(line)["id"] for line in lines] == [RUN_ID, OTHER_ID]


def test_tasks_takes_passed_as_a_value(runner: CliRunner, gateway: FakeGateway) -> None:
    page = {"object": "list", "summary": SUMMARY, "data": []}
    gateway.on("GET", f"{RUN}/tasks", httpx.Response(200, json=page))
    assert runner.invoke(app, ["run", "tasks", RUN_ID, "--passed=false"]).exit_code == 0
    assert runner.invoke(app, ["run", "tasks", RUN_ID, "--passed", "true"]).exit_code == 0
    assert [r.url.params["passed"] for r in gateway.requests] == ["false", "true"]
    clash = runner.invoke(app, ["run", "tasks", RUN_ID, "--passed=true", "--failed"])
    assert clash.exit_code == 2


def test_every_command_has_help(runner: CliRunner) -> None:
    commands = [
        [],
        ["run"],
        ["run", "launch"],
        ["run", "fork"],
        ["run", "show"],
        ["run", "tasks"],
        ["run", "ls"],
        ["run", "publish"],
        ["run", "kill"],
        ["run", "halt"],
        ["run", "pause"],
        ["run", "resume"],
        ["run", "review"],
        ["run", "delete"],
        ["secrets"],
        ["secrets", "add"],
        ["billing"],
        ["billing", "export"],
        ["token", "create"],
        ["login"],
        ["doctor"],
    ]
    for command in commands:
        result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "120"})
        assert result.exit_code == 0, (command, result.output)
        assert "Usage: benchwright" in result.stdout
    gate_help = runner.invoke(app, ["run", "launch", "--help"], env={"COLUMNS": "200"}).stdout
    assert "aggregate pass rate" in gate_help


# The SDK calls `run publish` sits on, sync and async alike.


def test_runs_update_and_publish_in_the_sdk(gateway: FakeGateway) -> None:
    gateway.on("PATCH", RUN, httpx.Response(200, json=run_body("ok", visibility="unlisted")))
    with Benchwright(api_key=TOKEN, base_url="http://bw.test", http_client=gateway.client()) as bw:
        assert bw.runs.publish(RUN_ID, visibility="unlisted").visibility == "unlisted"
        bw.runs.update(RUN_ID, review_resolution="use the CoT variant")
        with pytest.raises(ValueError, match="needs visibility=, review_resolution= or metadata="):
            bw.runs.update(RUN_ID)
    bodies = [sent_json(r) for r in gateway.seen("PATCH", RUN)]
    assert bodies == [{"visibility": "unlisted"}, {"review_resolution": "use the CoT variant"}]


async def test_async_runs_publish(gateway: FakeGateway) -> None:
    gateway.on("PATCH", RUN, httpx.Response(200, json=run_body("ok", visibility="public")))
    async with AsyncBenchwright(
        api_key=TOKEN, base_url="http://bw.test", http_client=gateway.async_client()
    ) as abw:
        published = await abw.runs.publish(RUN_ID)
        await abw.runs.update(RUN_ID, visibility="private")
    assert published.visibility == "public"
    bodies = [sent_json(r) for r in gateway.seen("PATCH", RUN)]
    assert bodies == [{"visibility": "public"}, {"visibility": "private"}]


def test_a_bare_model_with_an_api_base_is_an_openai_compatible_server() -> None:
    import typer

    from benchwright.cli._launch import parse_model

    assert parse_model("llama3", "http://127.0.0.1:8000/v1") == {
        "model": "llama3",
        "provider": "openai_compatible",
        "api_base": "http://127.0.0.1:8000/v1",
    }
    assert parse_model("qwen/qwen3-32b@openrouter") == {
        "model": "qwen/qwen3-32b",
        "provider": "openrouter",
    }
    with pytest.raises(typer.Exit):
        parse_model("llama3")  # no provider, nowhere to ask
