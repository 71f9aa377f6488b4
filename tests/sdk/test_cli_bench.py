"""``benchwright bench`` against the fake gateway: what each command sends and prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from benchwright.cli import app

from .cli_support import isolate_config, sent_json, use_gateway
from .fakes import FakeGateway, problem

BM = "bm_00000000-0000-4000-8000-000000000001"
SUB, NEW = "sub_0123456789ab", "sub_ba9876543210"
IMPL, IMPL2, IMPL3 = f"{SUB}:aaaaaaaaaaaa", f"{SUB}:bbbbbbbbbbbb", f"{NEW}:cccccccccccc"
TASKS = [{"task_id": f"t{i}", "input": {"a": i, "b": i}, "expected": str(2 * i)} for i in range(3)]
CONFIG = {
    "aggregator": "any_pass",
    "answer_pattern": None,
    "case_sensitive": False,
    "extraction": "last_number",
    "grading": "numeric",
    "max_tokens": 16,
    "prompt_template": "What is {input.a} + {input.b}?",
    "run_timeout": 300,
    "system_prompt": None,
    "temperature": 0.0,
    "tolerance": 0.0,
    "trials": 1,
}


def built(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "object": "built_subset",
        "subset_id": SUB,
        "benchmark_id": BM,
        "slug": "sums",
        "name": "sums",
        "owner": "acct_a",
        "task_count": 3,
        "config": CONFIG,
        "impl_id": IMPL,
        "default_trials": {"plan": {"k": 1}, "aggregator": {"name": "any_pass"}},
        "retired": False,
        "successor_id": None,
        "predecessor_id": None,
        "history": [
            {
                "at": "2026-11-29T10:00:00Z",
                "kind": "created",
                "note": "first cut",
                "by": "acct_a",
                "subset_id": SUB,
                "impl_id": IMPL,
                "changes": CONFIG,
            }
        ],
    }
    body.update(overrides)
    return body


def subset(**overrides: Any) -> dict[str, Any]:
    body = {
        "object": "subset",
        "id": SUB,
        "benchmark_id": BM,
        "slug": "v1",
        "task_count": 3,
        "snapshot_id": SUB,
        "snapshots": [{"id": SUB, "task_count": 3}],
    }
    body.update(overrides)
    return body


def impl(impl_id: str, subset_id: str | None, label: str = "") -> dict[str, Any]:
    return {
        "object": "impl",
        "id": impl_id,
        "benchmark_id": BM,
        "subset_id": subset_id,
        "label": label,
        "sha256": "0" * 64,
        "created_at": "2026-11-29T10:00:00Z",
    }


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(autouse=True)
def cli_env(monkeypatch: pytest.MonkeyPatch, gateway: FakeGateway, tmp_path: Path) -> None:
    use_gateway(monkeypatch, gateway)
    isolate_config(monkeypatch, tmp_path)
    monkeypatch.setenv("BW_OUTPUT", "table")
    monkeypatch.setenv("COLUMNS", "200")  # ids unfolded


def jsonl(tmp_path: Path, rows: list[dict[str, Any]], name: str = "tasks.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_bench_create(runner: CliRunner, gateway: FakeGateway) -> None:
    body = {"object": "benchmark", "id": BM, "name": "BFCL v4 mirror"}
    gateway.on("POST", "/v1/benchmarks", httpx.Response(201, json=body))
    result = runner.invoke(
        app,
        [
            "bench",
            "create",
            "BFCL v4 mirror",
            "--category",
            "tool-use",
            "--tag",
            "fc",
            "--tag",
            "x",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == f"created {BM} (BFCL v4 mirror)\n"
    assert sent_json(gateway.requests[0]) == {
        "name": "BFCL v4 mirror",
        "description": "",
        "category": "tool-use",
        "tags": ["fc", "x"],
    }


def test_subset_create_with_a_grader(
    runner: CliRunner, gateway: FakeGateway, tmp_path: Path
) -> None:
    gateway.on(
        "POST",
        f"/v1/benchmarks/{BM}/subsets",
        httpx.Response(201, json=subset(grader_impl_id=f"{BM}:dddddddddddd")),
    )
    grader = tmp_path / "strict.py"
    grader.write_text("class Task: pass\n")
    result = runner.invoke(
        app,
        [
            *("bench", "subset", "create", BM, "--slug", "v1"),
            *("--file", str(jsonl(tmp_path, TASKS)), "--grader-file", str(grader)),
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"created {SUB} (v1, 3 tasks)",
        f"grader impl: {BM}:dddddddddddd",
    ]
    sent = sent_json(gateway.requests[0])
    assert sent["tasks"] == TASKS and sent["rolling"] is False
    assert sent["grader"] == {"code": "class Task: pass\n", "label": "strict"}


def test_a_big_rolling_subset_goes_in_chunks_with_stable_keys(
    runner: CliRunner, gateway: FakeGateway, tmp_path: Path
) -> None:
    rows = [{"task_id": f"t{i}"} for i in range(2500)]
    gateway.on("POST", f"/v1/benchmarks/{BM}/subsets", httpx.Response(201, json=subset()))
    append = {"object": "subset_append", "subset_id": SUB, "snapshot_id": NEW, "task_count": 2}
    gateway.on(
        "POST", f"/v1/subsets/{SUB}/tasks", httpx.Response(201, json={**append, "appended": 1000})
    )
    gateway.on("GET", f"/v1/subsets/{SUB}", httpx.Response(200, json=subset(task_count=2500)))
    args = ["bench", "subset", "create", BM, "--slug", "v1", "--file", str(jsonl(tmp_path, rows))]
    result = runner.invoke(app, [*args, "--rolling"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"created {SUB} (v1, 2500 tasks)\n"
    appends = gateway.seen("POST", f"/v1/subsets/{SUB}/tasks")
    assert [len(sent_json(r)["tasks"]) for r in appends] == [1000, 500]
    keys = [r.headers["idempotency-key"] for r in appends]
    assert keys[0].endswith("-1") and keys[1].endswith("-2")
    # A frozen subset cannot take them: refused before anything is sent.
    sent = len(gateway.requests)
    frozen = runner.invoke(app, args)
    assert frozen.exit_code == 2 and "at most 1,000" in frozen.stderr
    assert len(gateway.requests) == sent


def test_subset_create_built_from_a_recipe(
    runner: CliRunner, gateway: FakeGateway, tmp_path: Path
) -> None:
    gateway.on("POST", "/v1/build/subsets", httpx.Response(201, json=built()))
    recipe = tmp_path / "recipe.json"
    recipe.write_text(json.dumps({"prompt_template": "What is {input.a} + {input.b}?"}))
    result = runner.invoke(
        app,
        [
            *("bench", "subset", "create", BM, "--slug", "sums"),
            *("--file", str(jsonl(tmp_path, TASKS)), "--recipe-file", str(recipe)),
            *("--set", "max_tokens=16", "--note", "first cut"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert sent_json(gateway.requests[0]) == {
        "benchmark": BM,
        "slug": "sums",
        "name": "",
        "description": "",
        "tasks": TASKS,
        "recipe": {"prompt_template": "What is {input.a} + {input.b}?", "max_tokens": 16},
        "note": "first cut",
    }
    assert SUB in result.stdout and IMPL in result.stdout and "first cut" in result.stdout


def test_subset_append_derives_a_key_from_the_file(
    runner: CliRunner, gateway: FakeGateway, tmp_path: Path
) -> None:
    answer = {
        "object": "subset_append",
        "subset_id": SUB,
        "snapshot_id": NEW,
        "appended": 3,
        "task_count": 6,
    }
    gateway.on("POST", f"/v1/subsets/{SUB}/tasks", httpx.Response(201, json=answer))
    path = str(jsonl(tmp_path, TASKS))
    for _ in range(2):
        result = runner.invoke(app, ["bench", "subset", "append", SUB, "--file", path])
        assert result.exit_code == 0, result.output
        assert result.stdout == f"appended 3 to {SUB}: snapshot {NEW}, 6 tasks\n"
    first, second = (r.headers["idempotency-key"] for r in gateway.requests)
    assert first == second  # the same command again cannot append twice
    chosen = runner.invoke(
        app, ["bench", "subset", "append", SUB, "--file", path, "--idempotency-key", "day-2"]
    )
    assert chosen.exit_code == 0 and gateway.requests[-1].headers["idempotency-key"] == "day-2"
    gateway.on(
        "POST",
        f"/v1/subsets/{SUB}/tasks",
        problem(409, "subset is frozen", f"subset {SUB} is frozen", code="subset_frozen"),
    )
    frozen = runner.invoke(app, ["bench", "subset", "append", SUB, "--file", path])
    assert frozen.exit_code == 1
    assert frozen.stderr.count("\n") == 1 and "frozen" in frozen.stderr


def test_bad_files_are_one_line_usage_errors(runner: CliRunner, tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"task_id": "a"}\n{oops\n')
    result = runner.invoke(app, ["bench", "subset", "append", SUB, "--file", str(broken)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {broken} line 2: not JSON")
    assert result.stderr.count("\n") == 1
    missing = runner.invoke(app, ["bench", "impl", "create", SUB, "--file", "nope.py"])
    assert missing.exit_code == 2 and "cannot read nope.py" in missing.stderr
    no_knob = runner.invoke(app, ["bench", "recipe", "set", "sums", "--set", "novalue"])
    assert no_knob.exit_code == 2 and "KEY=VALUE" in no_knob.stderr
    nothing = runner.invoke(app, ["bench", "samples", "set", "sums"])
    assert nothing.exit_code == 2 and "--upsert-file" in nothing.stderr
    backwards = runner.invoke(app, ["bench", "range", BM, "5-2"])
    assert backwards.exit_code == 2 and "END must be greater" in backwards.stderr


def test_impl_create_and_ls(runner: CliRunner, gateway: FakeGateway, tmp_path: Path) -> None:
    code = tmp_path / "task_impl.py"
    code.write_text("class Task: pass\n")
    made = impl(f"{BM}:eeeeeeeeeeee", SUB, "strict v1")
    gateway.on("POST", "/v1/impls", httpx.Response(201, json=made))
    result = runner.invoke(
        app, ["bench", "impl", "create", SUB, "--file", str(code), "--label", "strict v1"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == f"registered {BM}:eeeeeeeeeeee (strict v1)\n"
    assert sent_json(gateway.requests[0]) == {
        "subset": SUB,
        "code": "class Task: pass\n",
        "label": "strict v1",
        "description": "",
    }

    other = impl(f"{BM}:ffffffffffff", "sub_999999999999", "other subset's")
    benchmark = {"object": "benchmark", "id": BM, "name": "B", "impls": [made, other]}
    gateway.on("GET", f"/v1/benchmarks/{BM}", httpx.Response(200, json=benchmark))
    gateway.on("GET", f"/v1/subsets/{SUB}", httpx.Response(200, json=subset()))
    everything = runner.invoke(app, ["bench", "impl", "ls", BM, "-o", "json"])
    assert [i["id"] for i in json.loads(everything.stdout)["data"]] == [made["id"], other["id"]]
    for_subset = runner.invoke(app, ["bench", "impl", "ls", SUB])
    assert for_subset.exit_code == 0, for_subset.output
    assert made["id"] in for_subset.stdout and other["id"] not in for_subset.stdout


def test_range(runner: CliRunner, gateway: FakeGateway) -> None:
    found = {
        "object": "task_range",
        "benchmark_id": BM,
        "start": 0,
        "end": 5,
        "data": [
            {
                "run_id": "run-1",
                "model": "calc",
                "impl_id": IMPL,
                "status": "ok",
                "covered": 5,
                "complete": True,
                "range_passed": 4,
                "range_pass_rate": 0.8,
                "outcomes": {"0": "pass", "1": "pass", "2": "fail", "3": "pass", "4": "pass"},
            }
        ],
    }
    gateway.on("GET", f"/v1/benchmarks/{BM}/range", httpx.Response(200, json=found))
    result = runner.invoke(app, ["bench", "range", BM, "0-5"])
    assert result.exit_code == 0, result.output
    params = gateway.requests[0].url.params
    assert (params["start"], params["end"]) == ("0", "5")
    assert "run-1" in result.stdout and "✓✓✗✓✓" in result.stdout and "4 (80%)" in result.stdout
    one = runner.invoke(app, ["bench", "range", BM, "7"])
    assert one.exit_code == 0
    assert gateway.requests[-1].url.params["end"] == "8"


def test_recipe_show_and_set(runner: CliRunner, gateway: FakeGateway) -> None:
    gateway.on("GET", "/v1/build/subsets/sums/recipe", httpx.Response(200, json=built()))
    shown = runner.invoke(app, ["bench", "recipe", "show", "sums"])
    assert shown.exit_code == 0, shown.output
    assert SUB in shown.stdout and IMPL in shown.stdout
    assert '"last_number"' in shown.stdout and "first cut" in shown.stdout

    edit = {
        "at": "2026-11-29T11:00:00Z",
        "kind": "recipe",
        "note": "slow boot",
        "by": "acct_a",
        "subset_id": SUB,
        "impl_id": IMPL2,
        "changes": {"run_timeout": [300, 900], "trials": [1, 3]},
    }
    after = built(
        impl_id=IMPL2,
        config={**CONFIG, "run_timeout": 900, "trials": 3},
        history=[*built()["history"], edit],
        changed=True,
    )
    gateway.on("PATCH", "/v1/build/subsets/sums/recipe", httpx.Response(200, json=after))
    result = runner.invoke(
        app,
        [
            *("bench", "recipe", "set", "sums", "--set", "run_timeout=900", "--set", "trials=3"),
            *("--set", "system_prompt=Be brief.", "--note", "slow boot"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert sent_json(gateway.seen("PATCH", "/v1/build/subsets/sums/recipe")[0]) == {
        "config": {"run_timeout": 900, "trials": 3, "system_prompt": "Be brief."},
        "note": "slow boot",
    }
    assert result.stdout.splitlines()[0] == f"sums: recipe changed; impl {IMPL} → {IMPL2}"

    gateway.on(
        "PATCH",
        "/v1/build/subsets/theirs/recipe",
        problem(404, "BUILT subset not found", "no BUILT subset 'theirs'", code="not_found"),
    )
    gateway.on("GET", "/v1/build/subsets/theirs/recipe", httpx.Response(200, json=built()))
    refused = runner.invoke(app, ["bench", "recipe", "set", "theirs", "--set", "trials=2"])
    assert refused.exit_code == 1
    assert refused.stderr.count("\n") == 1 and "no BUILT subset 'theirs'" in refused.stderr


def test_samples_set_forks(runner: CliRunner, gateway: FakeGateway, tmp_path: Path) -> None:
    fix = [{"task_id": "t1", "input": {"a": 1, "b": 2}, "expected": "3"}]
    after = built(subset_id=NEW, impl_id=IMPL3, predecessor_id=SUB, changed=True, slug="sums")
    gateway.on("PATCH", "/v1/build/subsets/sums/samples", httpx.Response(200, json=after))
    result = runner.invoke(
        app,
        [
            *("bench", "samples", "set", "sums"),
            *("--upsert-file", str(jsonl(tmp_path, fix, "fix.jsonl")), "--remove", "t2"),
            *("--note", "q2 pointed at the wrong frame"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert sent_json(gateway.requests[0]) == {
        "upsert": fix,
        "remove": ["t2"],
        "note": "q2 pointed at the wrong frame",
    }
    assert result.stdout.splitlines() == [
        f"sums: {SUB} → {NEW} (3 tasks, impl {IMPL3})",
        f"{SUB} is retired for new runs; earlier runs keep it",
    ]
    as_json = runner.invoke(
        app, ["bench", "samples", "set", "sums", "--remove", "t2", "-o", "json"]
    )
    assert json.loads(as_json.stdout)["subset_id"] == NEW


def test_every_bench_command_has_help(runner: CliRunner) -> None:
    for command in (
        [],
        ["create"],
        ["range"],
        ["subset"],
        ["subset", "create"],
        ["subset", "append"],
        ["impl", "create"],
        ["impl", "ls"],
        ["recipe", "show"],
        ["recipe", "set"],
        ["samples", "set"],
    ):
        result = runner.invoke(app, ["bench", *command, "--help"])
        assert result.exit_code == 0, (command, result.output)
        assert "Usage:" in result.stdout
