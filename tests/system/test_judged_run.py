"""A model-graded run on the running platform, with a scripted fake judge.

The model under test answers sums, sometimes off by one and once not at all; a
scorer written by a user grades each answer by calling ``self.judge`` (never a key
of its own). The judge is a fake whose grade is a pure function of the prompt: C
when the answer's last number is the reference, P when it is one off, I otherwise.
So the run's grades are exactly what the script implies, its judge calls are
exactly one per distinct answer, metered as ``cost.judge`` beside ``cost.model``; a
second run over the same answers asks the judge nothing (its answers are cached); a
rescore by a second, lenient judge asks the model nothing and differs from the first
run in exactly the off-by-one tasks; and a scorer that calls a judge is refused at
launch when the run names none."""

import re
from typing import Any

import pytest

from benchwright import AsyncBenchwright, UnprocessableEntityError
from benchwright._models import Run
from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer
from tests.system.test_run_labels import OFF_BY_ONE, PAIRS, ROWS, UNKNOWN, sloppy

pytestmark = [pytest.mark.slow, pytest.mark.connected]

JUDGED_IMPL = '''\
import re

from bench_task import BenchTask

GRADES = {"C": 1.0, "P": 0.5, "I": 0.0}


class Task(BenchTask):
    """Ask for a sum; a judge grades the answer against the reference."""

    def solve(self, index, input):
        prompt = f"What is {input['a']} + {input['b']}? Reply with the number."
        return self.complete(prompt, max_tokens=16, temperature=0)

    def score(self, index, output, expected):
        verdict = self.judge(
            f"REFERENCE: {expected}\\nANSWER: {output}\\n"
            "Grade the answer against the reference. End with GRADE: C, P or I.",
            temperature=0,
        )
        found = re.findall(r"GRADE:\\s*([CPI])", verdict)
        grade = found[-1] if found else "I"
        return {"score": GRADES[grade], "grade": grade, "reasoning": verdict}
'''


def scripted_judge(prompt: str) -> str:
    """The judge's grade, a pure function of the prompt."""
    reference = re.search(r"REFERENCE: (-?\d+)", prompt)
    answer = re.search(r"ANSWER: (.*)", prompt)
    numbers = re.findall(r"-?\d+", answer.group(1) if answer else "")
    if not reference or not numbers:
        return "There is no number in the answer. GRADE: I"
    gap = abs(int(numbers[-1]) - int(reference.group(1)))
    grade = "C" if gap == 0 else "P" if gap == 1 else "I"
    return f"The answer is {numbers[-1]}, the reference {reference.group(1)}. GRADE: {grade}"


def lenient_judge(prompt: str) -> str:
    """Another scripted judge: one off is as good as right."""
    verdict = scripted_judge(prompt)
    return verdict.replace("GRADE: P", "GRADE: C")


def wanted_grades() -> dict[int, str]:
    return {
        i: "I" if pair in UNKNOWN else "P" if pair in OFF_BY_ONE else "C"
        for i, pair in enumerate(PAIRS)
    }


async def settled_cost(bw: AsyncBenchwright, run_id: str, judge_calls: int) -> Run:
    """The run once billing has its judge's calls (usage is reported in windows)."""
    run = await bw.runs.get(run_id)
    for _ in range(200):
        judged = run.cost.judge if run.cost else None
        if judged is not None and (judged.calls or 0) >= judge_calls:
            return run
        run = await bw.runs.get(run_id)
    raise AssertionError(f"cost.judge never reached {judge_calls} calls: {run.cost}")


async def test_a_scripted_judge_grades_a_run_exactly_and_is_metered_and_cached(
    platform: Platform, bw: AsyncBenchwright
) -> None:
    model = FakeOpenAIServer(sloppy).start()
    judge = FakeOpenAIServer(scripted_judge).start()
    try:
        bm = await bw.benchmarks.create(name="Judged Sums", category="math")
        sub = await bw.benchmarks.subsets.create(benchmark=bm.id, slug="v1", tasks=ROWS)
        impl = await bw.impls.create(subset=sub.id, label="judged sums", code=JUDGED_IMPL)
        sut = {"model": "calc", "provider": "openai_compatible", "api_base": model.base_url}
        grader = {"model": "grader", "provider": "openai_compatible", "api_base": judge.base_url}
        launch: dict[str, Any] = {"benchmark": bm.id, "subset": sub.id, "impl": impl.id}

        # A judge-graded scorer and no judge: refused before anything runs.
        with pytest.raises(UnprocessableEntityError) as refused:
            await bw.runs.launch(**launch, sut=sut)
        assert refused.value.field == "judge"
        assert model.state["calls"] == 0

        first = await bw.runs.launch(**launch, sut=sut, judge=grader)
        done = await bw.runs.wait(first.id, timeout=180, poll_interval=0.2)
        assert done.status == "ok", done.error
        assert done.judges is not None and [j.model for j in done.judges] == ["grader"]
        page = await bw.runs.tasks(first.id, limit=100)
        grades = {}
        for row in page.data:
            payload = await bw.runs.payload(first.id, row.id)
            grades[row.index] = payload.score_meta["grade"]
        assert grades == wanted_grades()
        # Two tasks (40 + 2, 20 + 22) got the same answer to the same reference: the
        # judge was asked once for both, the second served from its cache.
        distinct = len(
            {
                (row["expected"], sloppy(f"What is {a} + {b}?"))
                for row, (a, b) in zip(ROWS, PAIRS, strict=True)
            }
        )
        assert distinct == len(ROWS) - 1
        assert judge.state["calls"] == distinct and model.state["calls"] == len(ROWS)
        summary = done.summary
        assert summary is not None and summary.passed == list(grades.values()).count("C")

        run = await settled_cost(bw, first.id, len(ROWS))
        assert run.cost is not None and run.cost.judge is not None and run.cost.model is not None
        assert (run.cost.judge.calls, run.cost.model.calls) == (len(ROWS), len(ROWS))
        assert (run.cost.judge.prompt_tokens or 0) > 0

        # The same answers graded again: the judge's kept answers, nobody asked.
        again = await bw.runs.launch(**launch, sut=sut, judge=grader)
        second = await bw.runs.wait(again.id, timeout=180, poll_interval=0.2)
        assert second.status == "ok", second.error
        assert judge.state["calls"] == distinct
        rerun = await settled_cost(bw, again.id, len(ROWS))
        assert rerun.cost is not None and rerun.cost.judge is not None
        assert rerun.cost.judge.amount_usd == 0

        # Rescored by another judge: the same outputs, the same impl; the model is not
        # asked, and the diff is exactly the tasks the lenient judge grades otherwise.
        asked = model.state["calls"]
        lenient = FakeOpenAIServer(lenient_judge).start()
        try:
            other = {"model": "lenient", "provider": "openai_compatible"}
            child = await bw.runs.rescore(
                first.id, impl=impl.id, judge={**other, "api_base": lenient.base_url}
            )
            rescored = await bw.runs.wait(child.id, timeout=180, poll_interval=0.2)
            assert rescored.status == "ok", rescored.error
            assert model.state["calls"] == asked
            assert lenient.state["calls"] == distinct
        finally:
            lenient.stop()
        compared = await bw.runs.compare(first.id, child.id)
        off_by_one = sorted(ROWS[i]["task_id"] for i, g in wanted_grades().items() if g == "P")
        assert sorted(c.task_id for c in compared.changes) == off_by_one
        assert all(c.change == "fixed" for c in compared.changes)
        # The same impl, another judge: another fingerprint.
        assert rescored.fingerprint and done.fingerprint
        assert rescored.fingerprint != done.fingerprint
    finally:
        model.stop()
        judge.stop()
