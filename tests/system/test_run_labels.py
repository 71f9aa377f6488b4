"""People's labels on the running platform: a finished run whose scorer grades C/P/I
(a stand-in for a judge, its grade and reasoning in the score metadata) is labelled
over the API, a relabel replaces the earlier one, and the agreement the gateway reports
is scikit-learn's over the same grades. Bad labels are refused naming the field."""

import re
from typing import Any

import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from benchwright import (
    AsyncBenchwright,
    NotFoundError,
    PermissionDeniedError,
    UnprocessableEntityError,
)
from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer
from tests.system.test_leaderboards import new_account

pytestmark = [pytest.mark.slow, pytest.mark.connected]

PAIRS = [(2, 3), (7, 5), (13, 29), (40, 2), (11, 11), (6, 1), (9, 9), (20, 22)]
ROWS = [
    {"task_id": f"sum-{a}-{b}", "input": {"a": a, "b": b}, "expected": str(a + b)} for a, b in PAIRS
]
# The model is off by one on these (graded P) and does not know this one (graded I).
OFF_BY_ONE = {(13, 29), (6, 1)}
UNKNOWN = {(9, 9)}
# A scorer that grades as a QA judge does: C, P or I, with its reasoning beside it.
GRADING_IMPL = '''\
import re

from bench_task import BenchTask


class Task(BenchTask):
    """Ask for a sum; correct, partly (off by one) or incorrect."""

    def solve(self, index, input):
        prompt = f"What is {input['a']} + {input['b']}? Reply with the number."
        return self.complete(prompt, max_tokens=16, temperature=0)

    def score(self, index, output, expected):
        numbers = re.findall(r"-?[0-9]+", output or "")
        if numbers and numbers[-1] == str(expected):
            return {"score": 1.0, "grade": "C", "reasoning": "the sum is right"}
        if numbers and abs(int(numbers[-1]) - int(expected)) == 1:
            return {"score": 0.5, "grade": "P", "reasoning": "off by one"}
        return {"score": 0.0, "grade": "I", "reasoning": "no sum, or a wrong one"}
'''


def sloppy(prompt: str) -> str:
    found = re.search(r"What is (\d+) \+ (\d+)\?", prompt)
    if not found:
        return "?"
    a, b = int(found.group(1)), int(found.group(2))
    if (a, b) in UNKNOWN:
        return "I do not know."
    return f"The sum is {a + b + (1 if (a, b) in OFF_BY_ONE else 0)}"


async def graded_run(bw: AsyncBenchwright, model: FakeOpenAIServer, name: str) -> str:
    """A finished run of ROWS against ``model`` scored by GRADING_IMPL; its id."""
    bm = await bw.benchmarks.create(name=name, category="math")
    sub = await bw.benchmarks.subsets.create(benchmark=bm.id, slug="v1", tasks=ROWS)
    impl = await bw.impls.create(subset=sub.id, label="graded sums", code=GRADING_IMPL)
    sut = {"model": "calc", "provider": "openai_compatible", "api_base": model.base_url}
    run = await bw.runs.launch(benchmark=bm.id, subset=sub.id, impl=impl.id, sut=sut)
    done = await bw.runs.wait(run.id, timeout=180, poll_interval=0.2)
    assert done.status == "ok", done.error
    return run.id


async def grader_grades(bw: AsyncBenchwright, run_id: str) -> dict[int, str]:
    """index -> the grade the scorer put in each task's score metadata."""
    page = await bw.runs.tasks(run_id, limit=100)
    found: dict[int, str] = {}
    for row in page.data:
        payload = await bw.runs.payload(run_id, row.id)
        found[row.index] = payload.score_meta["grade"]
    return found


def reference(people: dict[int, str], grader: dict[int, str]) -> dict[str, Any]:
    keys = sorted(people)
    said, graded = [people[k] for k in keys], [grader[k] for k in keys]
    return {
        "kappa": cohen_kappa_score(said, graded),
        "confusion": confusion_matrix(said, graded, labels=["I", "P", "C"]).tolist(),
        "raw": sum(s == g for s, g in zip(said, graded, strict=True)) / len(keys),
    }


async def test_labels_over_the_api_give_scikit_learns_agreement(
    platform: Platform, bw: AsyncBenchwright
) -> None:
    model = FakeOpenAIServer(sloppy).start()
    try:
        run_id = await graded_run(bw, model, "Labelled Sums")
    finally:
        model.stop()
    grader = await grader_grades(bw, run_id)
    assert sorted(grader.values()) == sorted("CCPCCPIC")

    plain = await bw.runs.agreement(run_id)
    unlabelled = await bw.runs.get(run_id)
    assert unlabelled.summary is not None and "judge_corrected" not in unlabelled.summary
    assert (plain.scale, plain.grader, plain.labels) == (
        "correct_partial_incorrect",
        "score_meta.grade",
        0,
    )
    assert plain.corrected is not None and not plain.corrected.corrected

    # People read the off-by-one answers as wrong, and one right answer as partial.
    people = {0: "C", 2: "I", 3: "C", 5: "I", 6: "I", 7: "P"}
    await bw.runs.label(run_id, 7, "C", note="first look")
    for index, grade in people.items():
        await bw.runs.label(run_id, index, grade, note=f"checked {index}")
    labels = await bw.runs.labels(run_id)
    assert {lab.index: lab.grade for lab in labels.data} == people
    assert len(labels.data) == len(people)  # the relabel of 7 replaced the first look
    events = await bw.runs.events(run_id, types=["TaskLabelled"])
    assert [e.data["grade"] for e in events.data] == ["C", *people.values()]
    told = await bw.runs.narrate(run_id, slice="all")
    assert f"{labels.data[0].labelled_by} labelled task sum-13-29 I." in told.text

    report = await bw.runs.agreement(run_id)
    wanted = reference(people, grader)
    assert report.labelled == report.labels == len(people) and report.graded == len(ROWS)
    assert report.agreement.compared == len(people)
    assert report.agreement.kappa.value == pytest.approx(wanted["kappa"])
    assert report.agreement.raw_agreement == pytest.approx(wanted["raw"])
    assert [list(r) for r in report.agreement.confusion] == wanted["confusion"]
    assert report.agreement.lean is not None and report.agreement.lean.leaning == "lenient"
    assert report.corrected is not None and report.corrected.corrected
    assert report.corrected.estimate < report.corrected.judge_estimate
    # The run's summary carries the corrected figure beside its plain interval.
    shown = await bw.runs.get(run_id)
    assert shown.summary is not None
    widened = shown.summary["judge_corrected"]
    assert widened["estimate"] == pytest.approx(report.corrected.estimate)
    assert (widened["low"], widened["high"]) == pytest.approx(
        (report.corrected.low, report.corrected.high)
    )

    # -- refusals, each naming what is at fault --------------------------------------
    with pytest.raises(NotFoundError) as missing:
        await bw.runs.label(run_id, 99, "C")
    assert missing.value.field == "task"
    with pytest.raises(UnprocessableEntityError) as off_scale:
        await bw.runs.label(run_id, 1, "pass")
    assert off_scale.value.field == "grade"
    reader_token = await new_account(platform, "reader", ["runs:read", "runs:write"])
    assert platform.client is not None
    base_url = str(platform.client.base_url).rstrip("/")
    async with AsyncBenchwright(api_key=reader_token, base_url=base_url) as reader:
        with pytest.raises(PermissionDeniedError, match="runs:label"):
            await reader.runs.label(run_id, 1, "C")
