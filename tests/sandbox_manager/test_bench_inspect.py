"""The Inspect bridge's runner (runtime/bench_inspect.py) against real Inspect task
files and an OpenAI-compatible model on loopback: its scores must be the ones plain
``inspect eval`` gives the same samples (issue 14)."""

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAIServer

pytest.importorskip("inspect_ai", reason="the inspect extra is not installed")

RUNTIME = Path(__file__).parents[2] / (
    "services/sandbox-manager/benchwright_sandbox_manager/runtime"
)

ARITH = """
from inspect_ai import Task, task
from inspect_ai.dataset import json_dataset
from inspect_ai.scorer import match
from inspect_ai.solver import generate


@task
def arith(epochs: int = 1):
    return Task(dataset=json_dataset("data/arith.jsonl"), solver=generate(), scorer=match(),
                epochs=epochs)
"""

GRADED = """
from inspect_ai import Task, task
from inspect_ai.dataset import json_dataset
from inspect_ai.scorer import model_graded_fact
from inspect_ai.solver import generate


@task
def capitals():
    return Task(dataset=json_dataset("data/capitals.jsonl"), solver=generate(),
                scorer=model_graded_fact())
"""

SUMS = [(2, 3), (7, 5), (13, 29), (40, 2), (11, 11)]
WRONG = {(13, 29), (11, 11)}
CAPITALS = [("France", "Paris"), ("Japan", "Tokyo"), ("Peru", "Lima")]


def answer(prompt: Any) -> str:
    text = prompt if isinstance(prompt, str) else json.dumps(prompt)
    if "GRADE" in text:  # model_graded_fact's grader, on the same model
        return "GRADE: I" if "Lyon" in text else "GRADE: C"
    if m := re.search(r"capital of (\w+)", text):
        return {"France": "Lyon"}.get(m.group(1), dict(CAPITALS)[m.group(1)])
    a, b = (int(x) for x in re.findall(r"\d+", text)[:2])
    return str(a + b + (1 if (a, b) in WRONG else 0))


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer(answer).start()
    yield server
    server.stop()


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "arith.py").write_text(ARITH)
    (tmp_path / "graded.py").write_text(GRADED)
    rows = [
        {"id": f"sum-{a}-{b}", "input": f"What is {a} + {b}?", "target": str(a + b)}
        for a, b in SUMS
    ]
    (tmp_path / "data/arith.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    rows = [{"input": f"What is the capital of {c}?", "target": city} for c, city in CAPITALS]
    (tmp_path / "data/capitals.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    return tmp_path


def bridge(
    folder: Path, model: FakeOpenAIServer, *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "BW_MODEL_PROXY_URL": model.base_url.removesuffix("/v1"),
        "BW_MODEL_PROXY_KEY": "bw-run-fake-key",
        "BW_MODEL_MODEL": "calc",
    }
    return subprocess.run(
        [sys.executable, str(RUNTIME / "bench_inspect.py"), *args],
        cwd=folder,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )


def plain_inspect_eval(folder: Path, model: FakeOpenAIServer, spec: str, *extra: str) -> Any:
    """What ``inspect eval`` itself scores for the task: the reference."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    logs = folder / "reference-logs"
    env = {**os.environ, "REF_BASE_URL": model.base_url, "REF_API_KEY": "k"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "inspect_ai",
            "eval",
            spec,
            "--model",
            "openai-api/ref/calc",
            "--log-dir",
            str(logs),
            "--display",
            "none",
            "--max-retries",
            "1",
            *extra,
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    [info] = list_eval_logs(str(logs))
    log = read_eval_log(info.name)
    assert log.status == "success", log.error
    return log


def run_rows(
    folder: Path,
    model: FakeOpenAIServer,
    spec: str,
    pairs: list[tuple[int, int]],
    *options: str,
    **task_args: Any,
) -> list[dict[str, Any]]:
    listed = bridge(folder, model, "list", "--task", spec, "--args", json.dumps(task_args))
    assert listed.returncode == 0, listed.stderr
    ids = json.loads((folder / "inspect_samples.json").read_text())
    assert json.loads(listed.stdout)["samples"] == len(ids)
    stdin = "\n".join(json.dumps({"index": i, "trial": t}) for i, t in pairs)
    done = bridge(
        folder, model, "run", "--task", spec, "--args", json.dumps(task_args), *options, stdin=stdin
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_match_scores_equal_plain_inspect_eval(tasks: Path, model: FakeOpenAIServer) -> None:
    rows = run_rows(tasks, model, "arith.py", [(i, 0) for i in range(len(SUMS))])
    reference = plain_inspect_eval(tasks, model, "arith.py")
    assert reference.samples is not None
    want = {str(s.id): s.scores["match"].value for s in reference.samples if s.scores}
    assert {r["task_id"]: r["score_meta"]["inspect_value"] for r in rows} == want
    assert sorted(r["index"] for r in rows) == list(range(len(SUMS)))
    for r in rows:
        a, b = (int(x) for x in r["task_id"].split("-")[1:])
        assert r["outcome"] == ("fail" if (a, b) in WRONG else "pass")
        assert r["score"] == (0.0 if (a, b) in WRONG else 1.0)
        assert r["score_meta"]["inspect_scorer"] == "match"
        assert r["output"] == str(a + b + (1 if (a, b) in WRONG else 0))
    # Each evaluation leaves its .eval log, for the run's artifact.
    assert list((tasks / "inspect_logs").glob("*.eval"))


def test_a_model_graded_task_grades_with_the_same_model(
    tasks: Path, model: FakeOpenAIServer
) -> None:
    rows = run_rows(tasks, model, "graded.py", [(i, 0) for i in range(len(CAPITALS))])
    reference = plain_inspect_eval(tasks, model, "graded.py")
    assert reference.samples is not None
    want = {str(s.id): s.scores["model_graded_fact"].value for s in reference.samples if s.scores}
    assert {r["task_id"]: r["score_meta"]["inspect_value"] for r in rows} == want
    # Unnamed samples are numbered from 1 in dataset order, as Inspect numbers them.
    assert {r["task_id"]: r["outcome"] for r in rows} == {"1": "fail", "2": "pass", "3": "pass"}


def test_trials_are_epochs_and_only_the_asked_pairs_come_back(
    tasks: Path, model: FakeOpenAIServer
) -> None:
    pairs = [(0, 0), (0, 1), (0, 2), (2, 1)]  # a resumed sweep asks for what is left
    rows = run_rows(tasks, model, "arith.py@arith", pairs)
    assert sorted((r["index"], r["trial"]) for r in rows) == sorted(pairs)
    reference = plain_inspect_eval(tasks, model, "arith.py", "--epochs", "3")
    assert reference.samples is not None
    want = {(str(s.id), s.epoch - 1): s.scores["match"].value for s in reference.samples}
    for r in rows:
        assert r["score_meta"]["inspect_value"] == want[(r["task_id"], r["trial"])]


def test_an_unreachable_model_makes_errors_not_a_crash(tasks: Path) -> None:
    dead = FakeOpenAIServer(answer).start()
    dead.stop()
    rows = run_rows(tasks, dead, "arith.py", [(0, 0), (1, 0)], "--max-retries", "0")
    assert [r["outcome"] for r in rows] == ["err", "err"]
    assert all(r["error_type"].startswith("inspect:") for r in rows)
