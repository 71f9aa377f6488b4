"""``bench_runner --check``: a scorer proved on given outputs, no model call."""

import json

import pytest

from benchwright_shared.contracts import TaskOutcome
from tests.sandbox_manager.conftest import SandboxService

pytestmark = pytest.mark.connected

SCORER = """
from bench_task import BenchTask


class Task(BenchTask):
    def solve(self, index, input):
        raise AssertionError("check mode must not call the model")

    def score(self, index, output, expected):
        if output == "boom":
            raise ZeroDivisionError("scorer bug")
        if output.strip().startswith("partly"):
            return {"score": 0.5, "why": "half"}
        return 1.0 if output.strip() == expected else 0.0
"""
TASKS = "".join(
    json.dumps({"task_id": f"t{i}", "input": f"q{i}", "expected": answer}) + "\n"
    for i, answer in enumerate(["4", "9", "16", "25"])
)


async def test_check_mode_scores_given_outputs(sandboxes: SandboxService) -> None:
    sandbox_id = await sandboxes.new_sandbox({"task_impl.py": SCORER, "tasks.jsonl": TASKS})
    given = [
        {"index": 0, "output": "4"},  # the reference answer
        {"index": 1, "output": "10"},  # wrong
        {"index": 2, "output": "partly 16", "trial": 2},
        {"index": 3, "output": "boom"},  # the scorer raises
        {"index": 3},  # no output given
        {"index": 99, "output": "x"},  # no such row
    ]
    result = await sandboxes.exec(
        sandbox_id,
        ["python", "-m", "bench_runner", "--check", "--concurrency", "2"],
        stdin="".join(json.dumps(line) + "\n" for line in given),
    )
    assert result.exit_code == 0, result.stderr
    rows = [TaskOutcome.model_validate_json(line) for line in result.stdout.splitlines()]
    by = {(r.index, r.output): r for r in rows}
    assert len(rows) == len(given)

    ok = by[(0, "4")]
    assert (ok.task_id, ok.trial, ok.score, ok.outcome) == ("t0", 0, 1.0, "pass")
    assert (by[(1, "10")].score, by[(1, "10")].outcome) == (0.0, "fail")
    partly = by[(2, "partly 16")]
    assert (partly.trial, partly.score, partly.score_meta) == (2, 0.5, {"why": "half"})
    boom = by[(3, "boom")]
    assert (boom.outcome, boom.error_type) == ("err", "score:ZeroDivisionError")
    assert boom.error and "scorer bug" in boom.error
    missing = by[(3, None)]
    assert (missing.outcome, missing.error_type) == ("err", "check:ValueError")
    assert (by[(99, None)].outcome, by[(99, None)].error_type) == ("err", "extract:IndexError")


async def test_normal_mode_still_solves(sandboxes: SandboxService) -> None:
    """Without ``--check`` the runner calls ``solve``, as Materialize does."""
    sandbox_id = await sandboxes.new_sandbox({"task_impl.py": SCORER, "tasks.jsonl": TASKS})
    result = await sandboxes.exec(
        sandbox_id, ["python", "-E", "-s", "bench_runner.py"], stdin='{"index": 0}\n'
    )
    row = TaskOutcome.model_validate_json(result.stdout)
    assert (row.outcome, row.error_type) == ("err", "solve:AssertionError")


async def test_a_rescore_line_scores_its_given_output_and_never_solves(
    sandboxes: SandboxService,
) -> None:
    """A rescore's lines (``given_output``, one per trial) are scored as given; a line
    without one still solves, so the mode is per line, not per runner."""
    sandbox_id = await sandboxes.new_sandbox({"task_impl.py": SCORER, "tasks.jsonl": TASKS})
    lines = [
        {"index": 0, "trial": 0, "given_output": "4"},
        {"index": 0, "trial": 1, "given_output": "5"},
        {"index": 2, "trial": 0, "given_output": "partly 16"},
        {"index": 1, "trial": 0},  # no given output: solve runs (and this one raises)
    ]
    result = await sandboxes.exec(
        sandbox_id,
        ["python", "-m", "bench_runner", "--concurrency", "2"],
        stdin="".join(json.dumps(line) + "\n" for line in lines),
    )
    assert result.exit_code == 0, result.stderr
    rows = {
        (r.index, r.trial): r
        for r in (TaskOutcome.model_validate_json(x) for x in result.stdout.splitlines())
    }
    assert len(rows) == len(lines)
    assert (rows[(0, 0)].outcome, rows[(0, 0)].output) == ("pass", "4")
    assert (rows[(0, 1)].outcome, rows[(0, 1)].output) == ("fail", "5")
    assert (rows[(2, 0)].score, rows[(2, 0)].score_meta) == (0.5, {"why": "half"})
    assert (rows[(1, 0)].outcome, rows[(1, 0)].error_type) == ("err", "solve:AssertionError")
