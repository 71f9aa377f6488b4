"""The model-graded scorer files, run as a sandbox runs them: the runtime's files and the
scorer as ``task_impl.py`` in a directory, ``bench_runner`` in a child process, and a
fake proxy on loopback answering the model key as the model and the judge key as the
judges, each a pure function of its prompt. So every grade, call id and cost is known
in advance."""

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from benchwright_sandbox_manager.runtime import runtime_files
from benchwright_shared.scorers import scorer_source
from tests.support.fake_judge_proxy import (
    JUDGE_COST,
    JUDGE_KEY,
    JUDGE_TOKENS,
    MODEL_COST,
    MODEL_KEY,
    MODEL_TOKENS,
    FakeJudgeProxy,
)

JUDGE_A, JUDGE_B, JUDGE_C = (f"openai_compatible/judge-{n}" for n in "abc")
QUESTIONS = ["Capital of France?", "Capital of Italy?", "Capital of Spain?"]
# The model's answer to each question.
ANSWERS = {QUESTIONS[0]: "Paris.", QUESTIONS[1]: "Rome or Milan", QUESTIONS[2]: "Lisbon"}


def submission(prompt: str, label: str = "Submission") -> str:
    found = re.search(rf"\[{label}\]: (.*?)\n\*\*\*", prompt, re.DOTALL)
    assert found, prompt
    return found.group(1)


def model_answer(prompt: str) -> str:
    return ANSWERS[prompt]


@pytest.fixture
def proxy_for() -> Iterator[Callable[..., FakeJudgeProxy]]:
    started: list[FakeJudgeProxy] = []

    def start(
        judge: Callable[[str, str], str], judges: tuple[str, ...] = (JUDGE_A,)
    ) -> FakeJudgeProxy:
        proxy = FakeJudgeProxy(model_answer, judge, judges).start()
        started.append(proxy)
        return proxy

    yield start
    for proxy in started:
        proxy.stop()


def run_scorer(
    tmp_path: Path,
    impl: str,
    proxy: FakeJudgeProxy,
    rows: list[dict[str, Any]],
    *,
    judges: list[str] | None = None,
    check: list[str] | None = None,
) -> list[dict[str, Any]]:
    """``bench_runner`` over every row (trial 0), ``impl`` the scorer (``task_impl.py``);
    its result rows by index. ``judges``: the run's (None: no judge at all); ``check``:
    given outputs, scored with ``--check`` (no model call)."""
    for name, text in {**runtime_files(), "task_impl.py": impl}.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = {
        "PATH": os.environ.get("PATH", ""),
        "BW_SCORER_PATH": os.environ.get("BW_SCORER_PATH", ""),
        "BW_MODEL_PROXY_URL": proxy.url,
        "BW_MODEL_PROXY_KEY": MODEL_KEY,
        "BW_MODEL_MODEL": "openai_compatible/model-under-test",
    }
    if judges is not None:
        env |= {
            "BW_JUDGE_PROXY_KEY": JUDGE_KEY,
            "BW_JUDGE_MODEL": judges[0],
            "BW_JUDGE_MODELS": json.dumps(judges),
        }
    lines = [
        {"index": i} | ({"output": check[i]} if check is not None else {}) for i in range(len(rows))
    ]
    done = subprocess.run(
        [sys.executable, "-E", "-s", "bench_runner.py", "--concurrency", "2"]
        + (["--check"] if check is not None else []),
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(results) == len(rows), done.stderr
    return sorted(results, key=lambda r: r["index"])


def qa_rows() -> list[dict[str, Any]]:
    references = ["Paris", "Rome", "Madrid"]
    return [
        {"task_id": f"q{i}", "input": {"question": q}, "expected": ref}
        for i, (q, ref) in enumerate(zip(QUESTIONS, references, strict=True))
    ]


def qa_judge(_model: str, prompt: str) -> str:
    grade = {"Paris.": "C", "Rome or Milan": "P", "Lisbon": "I"}[submission(prompt)]
    return f"Against the reference.\nGRADE: {grade}"


def assert_calls_attributed(proxy: FakeJudgeProxy, tasks: int, judge_calls: int) -> None:
    """One model call per task with the model key, numbered 1; ``judge_calls`` judge calls
    per task with the judge key, numbered j1...; every call naming its task and trial."""
    model, judge = proxy.by_role("model"), proxy.by_role("judge")
    assert sorted(r.call_id for r in model) == [f"{i}.0.1" for i in range(tasks)]
    assert sorted(r.call_id for r in judge) == sorted(
        f"{i}.0.j{n}" for i in range(tasks) for n in range(1, judge_calls + 1)
    )
    for request in proxy.requests:
        index = request.call_id.split(".")[0]
        assert request.headers["x-benchwright-task"] == index
        assert request.headers["x-benchwright-trial"] == "0"
    assert {r.headers["authorization"] for r in judge} == {f"Bearer {JUDGE_KEY}"}
    assert {r.headers["authorization"] for r in model} == {f"Bearer {MODEL_KEY}"}
    # The model under test is never shown a judge's prompt, nor a judge the question alone.
    assert all("[BEGIN DATA]" not in r.prompt for r in model)
    assert all("[BEGIN DATA]" in r.prompt for r in judge)


def assert_spend(result: dict[str, Any], judge_calls: int, model_calls: int = 1) -> None:
    assert result["calls"] == model_calls + judge_calls
    assert result["cost_micros"] == model_calls * MODEL_COST + judge_calls * JUDGE_COST
    assert result["prompt_tokens"] == model_calls * MODEL_TOKENS[0] + judge_calls * JUDGE_TOKENS[0]
    assert result["judge_calls"] == judge_calls
    assert result["judge_cost_micros"] == judge_calls * JUDGE_COST
    assert result["judge_completion_tokens"] == judge_calls * JUDGE_TOKENS[1]
    assert result["cached_calls"] == result["judge_cached_calls"] == 0


def test_judge_qa_grades_c_p_i_with_the_judge_s_key(
    tmp_path: Path, proxy_for: Callable[..., FakeJudgeProxy]
) -> None:
    proxy = proxy_for(qa_judge)
    results = run_scorer(tmp_path, scorer_source("judge_qa"), proxy, qa_rows(), judges=[JUDGE_A])
    assert [(r["score"], r["outcome"], r["score_meta"]["grade"]) for r in results] == [
        (1.0, "pass", "C"),
        (0.5, "fail", "P"),
        (0.0, "fail", "I"),
    ]
    assert [r["score_meta"]["judge"] for r in results] == [JUDGE_A] * 3
    assert results[1]["score_meta"]["reasoning"] == "Against the reference.\nGRADE: P"
    assert len(proxy.requests) == 6
    assert_calls_attributed(proxy, tasks=3, judge_calls=1)
    judged = proxy.by_role("judge")
    assert {r.body["model"] for r in judged} == {JUDGE_A}
    assert {r.body["max_tokens"] for r in judged} == {1024}
    prompt = next(r.prompt for r in judged if r.call_id == "2.0.j1")
    assert "[Question]: Capital of Spain?\n" in prompt and "[Reference]: Madrid\n" in prompt
    for result in results:
        assert_spend(result, judge_calls=1)


def test_judge_qa_without_a_judge_is_an_infra_error_after_the_model_answered(
    tmp_path: Path, proxy_for: Callable[..., FakeJudgeProxy]
) -> None:
    proxy = proxy_for(qa_judge)
    results = run_scorer(tmp_path, scorer_source("judge_qa"), proxy, qa_rows(), judges=None)
    assert {(r["outcome"], r["error_type"]) for r in results} == {("err", "infra:no_judge")}
    assert (len(proxy.by_role("model")), len(proxy.by_role("judge"))) == (3, 0)
    # The model's calls were metered; no judge_ key, as no judge answered.
    assert [(r["calls"], "judge_calls" in r) for r in results] == [(1, False)] * 3


def test_a_rescore_by_check_calls_only_the_judge(
    tmp_path: Path, proxy_for: Callable[..., FakeJudgeProxy]
) -> None:
    """Outputs given (as a rescore gives the parent's): no model call, the same grades."""
    proxy = proxy_for(qa_judge)
    outputs = [ANSWERS[q] for q in QUESTIONS]
    results = run_scorer(
        tmp_path, scorer_source("judge_qa"), proxy, qa_rows(), judges=[JUDGE_A], check=outputs
    )
    assert [r["score"] for r in results] == [1.0, 0.5, 0.0]
    assert proxy.by_role("model") == []
    # The judge's calls are the tasks' as in a sweep: their ids, and their spend.
    assert sorted(r.call_id for r in proxy.by_role("judge")) == ["0.0.j1", "1.0.j1", "2.0.j1"]
    for result in results:
        assert_spend(result, judge_calls=1, model_calls=0)


def test_judge_fact_grades_c_or_i(tmp_path: Path, proxy_for: Callable[..., FakeJudgeProxy]) -> None:
    def judge(_model: str, prompt: str) -> str:
        fact = submission(prompt, "Expert")
        return "GRADE: C" if fact.split()[0] in submission(prompt) else "GRADE: I"

    proxy = proxy_for(judge)
    rows = [
        {"input": {"question": q}, "expected": fact}
        for q, fact in zip(QUESTIONS, ["Paris is", "Milan is", "Madrid is"], strict=True)
    ]
    results = run_scorer(tmp_path, scorer_source("judge_fact"), proxy, rows, judges=[JUDGE_A])
    assert [(r["score"], r["score_meta"]["grade"]) for r in results] == [
        (1.0, "C"),
        (1.0, "C"),
        (0.0, "I"),
    ]
    assert all("one of CI." in r.prompt for r in proxy.by_role("judge"))
    assert_calls_attributed(proxy, tasks=3, judge_calls=1)


def test_judge_rubric_scores_the_met_weight(
    tmp_path: Path, proxy_for: Callable[..., FakeJudgeProxy]
) -> None:
    """The file's rubric weighs 2, 3, 1 and 1; a judge answer missing a criterion fails
    the task (never a silent 0)."""
    verdicts = {"Paris.": "YYYY", "Rome or Milan": "YNYN", "Lisbon": "YNY"}

    def judge(_model: str, prompt: str) -> str:
        said = verdicts[submission(prompt)]
        return "\n".join(
            f"CRITERION {n}: {'YES' if v == 'Y' else 'NO'}" for n, v in enumerate(said, 1)
        )

    proxy = proxy_for(judge)
    results = run_scorer(
        tmp_path, scorer_source("judge_rubric"), proxy, qa_rows(), judges=[JUDGE_A]
    )
    assert [(r.get("score"), r["outcome"]) for r in results] == [
        (1.0, "pass"),
        (3 / 7, "fail"),
        (None, "err"),
    ]
    assert results[1]["score_meta"]["met"] == [True, False, True, False]
    assert results[1]["score_meta"]["grade"] == "P"
    assert results[2]["error_type"] == "score:GradeParseError"
    assert "criteria 4" in results[2]["error"]
    prompt = proxy.by_role("judge")[0].prompt
    assert "1. The answer addresses the question that was asked.\n" in prompt
    assert_calls_attributed(proxy, tasks=3, judge_calls=1)


def test_judge_pairwise_asks_both_orders(
    tmp_path: Path, proxy_for: Callable[..., FakeJudgeProxy]
) -> None:
    """The judge prefers the answer naming the right city, and with neither (or both)
    the one shown first: the model wins, loses, and flips to a tie."""
    right = {"Paris", "Rome", "Madrid"}

    def judge(_model: str, prompt: str) -> str:
        a, b = submission(prompt, "Answer A"), submission(prompt, "Answer B")
        a_right = any(city in a.split(" ")[0] for city in right)
        b_right = any(city in b.split(" ")[0] for city in right)
        return "PREFERENCE: B" if b_right and not a_right else "PREFERENCE: A"

    proxy = proxy_for(judge)
    rows = [
        {"input": {"question": QUESTIONS[0]}, "expected": "Lyon."},  # the model is right
        {"input": {"question": QUESTIONS[1]}, "expected": "Rome."},  # both name Rome first
        {"input": {"question": QUESTIONS[2]}, "expected": "Madrid."},  # the reference is right
    ]
    results = run_scorer(tmp_path, scorer_source("judge_pairwise"), proxy, rows, judges=[JUDGE_A])
    meta = [r["score_meta"] for r in results]
    assert [
        (r["score"], m["winner"], m["flipped"], m["grade"])
        for r, m in zip(results, meta, strict=True)
    ] == [
        (1.0, "a", False, "C"),
        (0.5, "tie", True, "P"),
        (0.0, "b", False, "I"),
    ]
    assert [v["order"] for v in meta[0]["verdicts"]] == ["ab", "ba"]
    assert_calls_attributed(proxy, tasks=3, judge_calls=2)
    first = next(r.prompt for r in proxy.by_role("judge") if r.call_id == "0.0.j1")
    second = next(r.prompt for r in proxy.by_role("judge") if r.call_id == "0.0.j2")
    assert "[Answer A]: Paris.\n" in first and "[Answer A]: Lyon.\n" in second
    for result in results:
        assert_spend(result, judge_calls=2)


def test_judge_panel_asks_every_judge_and_keeps_each_grade(
    tmp_path: Path, proxy_for: Callable[..., FakeJudgeProxy]
) -> None:
    grades = {
        "Paris.": {JUDGE_A: "C", JUDGE_B: "C", JUDGE_C: "I"},  # majority C
        "Rome or Milan": {JUDGE_A: "C", JUDGE_B: "P", JUDGE_C: "I"},  # a tie: the worst
        "Lisbon": {JUDGE_A: "P", JUDGE_B: "I", JUDGE_C: "P"},  # majority P
    }

    def judge(model: str, prompt: str) -> str:
        return f"{model} thinks.\nGRADE: {grades[submission(prompt)][model]}"

    judges = (JUDGE_A, JUDGE_B, JUDGE_C)
    proxy = proxy_for(judge, judges)
    results = run_scorer(
        tmp_path, scorer_source("judge_panel"), proxy, qa_rows(), judges=list(judges)
    )
    assert [(r["score"], r["score_meta"]["grade"]) for r in results] == [
        (1.0, "C"),
        (0.0, "I"),
        (0.5, "P"),
    ]
    assert [r["score_meta"]["panel"] for r in results] == list(grades.values())
    assert results[0]["score_meta"]["how"] == "majority"
    # Each task asks the judges in the run's order: j1 is judge a, j2 b, j3 c.
    by_id = {r.call_id: r.body["model"] for r in proxy.by_role("judge")}
    assert [by_id[f"1.0.j{n}"] for n in (1, 2, 3)] == list(judges)
    assert_calls_attributed(proxy, tasks=3, judge_calls=3)
    for result in results:
        assert_spend(result, judge_calls=3)


USER_SCORER = """
import os

import requests
from bench_task import BenchTask


def post(key, model, prompt):
    url = os.environ["BW_MODEL_PROXY_URL"] + "/v1/chat/completions"
    body = {"model": model, "messages": [{"role": "user", "content": prompt}]}
    reply = requests.post(url, json=body, headers={"Authorization": f"Bearer {key}"})
    return reply.json()["choices"][0]["message"]["content"]


class Task(BenchTask):
    def solve(self, index, input):
        return post(os.environ["BW_MODEL_PROXY_KEY"], os.environ["BW_MODEL_MODEL"], input)

    def score(self, index, output, expected):
        said = self.judge(f"[BEGIN DATA] [Submission]: {output}\\n***")
        again = post(
            os.environ["BW_JUDGE_PROXY_KEY"],
            os.environ["BW_JUDGE_MODEL"],
            f"[BEGIN DATA] [Submission]: {output}\\n***",
        )
        return {"score": 1.0 if said == again == "GRADE: C" else 0.0, "said": said}
"""


def test_a_user_s_scorer_calls_the_judge_itself_and_through_requests(
    tmp_path: Path, proxy_for: Callable[..., FakeJudgeProxy], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``self.judge`` and a ``requests`` post with the judge key are both the judge's calls:
    numbered j1, j2, metered as the judge's, and the model's call keeps its id."""
    import requests

    proxy = proxy_for(lambda _m, p: "GRADE: C" if "Paris" in submission(p) else "GRADE: I")
    rows = [{"input": q, "expected": ""} for q in QUESTIONS[:2]]
    monkeypatch.setenv("BW_SCORER_PATH", str(Path(requests.__file__).parents[1]))
    results = run_scorer(tmp_path, USER_SCORER, proxy, rows, judges=[JUDGE_A])
    assert [(r["score"], r["score_meta"]["said"]) for r in results] == [
        (1.0, "GRADE: C"),
        (0.0, "GRADE: I"),
    ]
    assert sorted(r.call_id for r in proxy.by_role("model")) == ["0.0.1", "1.0.1"]
    assert sorted(r.call_id for r in proxy.by_role("judge")) == [
        "0.0.j1",
        "0.0.j2",
        "1.0.j1",
        "1.0.j2",
    ]
    for result in results:
        assert_spend(result, judge_calls=2)


def test_the_docs_example_scorer_grades_by_its_rubric(
    tmp_path: Path, proxy_for: Callable[..., FakeJudgeProxy]
) -> None:
    """docs/judges.md's "A scorer of your own", run as printed."""
    docs = (Path(__file__).resolve().parents[2] / "docs/judges.md").read_text()
    section = docs[docs.index("### A scorer of your own") :]
    start = section.index("```python\n") + len("```python\n")
    example = section[start : section.index("```\n", start)]

    def judge(_model: str, prompt: str) -> str:
        fixes = "restart" in submission(prompt)
        return f"CRITERION 1: YES\nCRITERION 2: {'YES' if fixes else 'NO'}"

    reports = {"The disk is full.": "Cause: the disk; restart it.", "It hangs.": "Cause: a lock."}
    proxy = FakeJudgeProxy(reports.__getitem__, judge, (JUDGE_A,)).start()
    try:
        rows = [{"input": {"report": r}} for r in reports]
        results = run_scorer(tmp_path, example, proxy, rows, judges=[JUDGE_A])
    finally:
        proxy.stop()
    assert [(r["score"], r["score_meta"]["met"]) for r in results] == [
        (1.0, [True, True]),
        (2 / 3, [True, False]),
    ]
    assert all("[Question]: " in r.prompt for r in proxy.by_role("judge"))
