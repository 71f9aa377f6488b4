"""People's labels without HTTP: the rules (``labelling``), the ``labels`` view, and the
operations over ports whose ``send`` does what the orchestrator and the relay do (the
``LabelTask`` becomes a ``TaskLabelled`` in the run's log, applied to the real view).

Every figure is checked against scikit-learn's."""

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from benchwright_gateway import labels_view
from benchwright_gateway import projections as views
from benchwright_gateway.labelling import (
    CPI,
    PASS_FAIL,
    Graded,
    LabelRecord,
    agreement,
    check_grade,
    consensus,
    latest_labels,
    review_order,
    scale_of,
)
from benchwright_gateway.operations import labels as labelling
from benchwright_gateway.ports import RunRow
from benchwright_gateway.projections import RunsProjection
from benchwright_gateway.requests import LabelRequest
from benchwright_shared.contracts import Contract, LabelTask
from benchwright_shared.contracts.run_events import TaskLabelled
from benchwright_shared.projection import ProjectionStore
from benchwright_shared.refusal import Refused
from benchwright_shared.settings import Settings
from tests.conftest import machine_database_url, reset_postgres

RUN = "33333333-3333-3333-3333-333333333333"
ACCOUNT = "acct_a"
TASKS = 12


# -- the rules ---------------------------------------------------------------------------
def test_a_later_label_by_the_same_person_replaces_theirs_and_people_are_counted_apart() -> None:
    labels = [
        LabelRecord(index=0, trial=0, grade="fail", labelled_by="ann", seq=1),
        LabelRecord(index=0, trial=0, grade="pass", labelled_by="bob", seq=2),
        LabelRecord(index=0, trial=0, grade="pass", labelled_by="ann", seq=3),
        LabelRecord(index=1, trial=0, grade="fail", labelled_by="ann", seq=4),
    ]
    latest = latest_labels(labels)
    assert [(lab.index, lab.labelled_by, lab.grade) for lab in latest] == [
        (0, "bob", "pass"),
        (0, "ann", "pass"),
        (1, "ann", "fail"),
    ]
    assert consensus(labels) == {(0, 0): "pass", (1, 0): "fail"}


def test_people_who_disagree_settle_on_the_majority_and_a_tie_on_the_latest() -> None:
    three = [
        LabelRecord(index=0, trial=0, grade="C", labelled_by="ann", seq=1),
        LabelRecord(index=0, trial=0, grade="I", labelled_by="bob", seq=2),
        LabelRecord(index=0, trial=0, grade="C", labelled_by="cat", seq=3),
    ]
    assert consensus(three) == {(0, 0): "C"}
    tie = three[:2]
    assert consensus(tie) == {(0, 0): "I"}


def test_the_scale_is_c_p_i_when_the_scorer_grades_so_and_pass_fail_otherwise() -> None:
    assert scale_of([{"outcome": "pass", "score_meta": {"parsed": "4"}}]) == PASS_FAIL
    assert scale_of([{"outcome": "fail", "score_meta": {"grade": "p"}}]) == CPI
    assert check_grade(PASS_FAIL, " PASS ") == "pass"
    assert check_grade(CPI, "c") == "C"
    assert check_grade(PASS_FAIL, "C") is None
    assert check_grade(CPI, "pass") is None


def test_the_review_order_is_seeded_by_the_run_and_proportional_to_the_graders_grades() -> None:
    grades = ["pass" if i % 4 == 0 else "fail" for i in range(40)] + ["err"] * 3
    units = [Graded(i, 0, f"t{i}", None if g == "err" else g) for i, g in enumerate(grades)]
    order = review_order(RUN, units, PASS_FAIL)
    assert order == review_order(RUN, list(reversed(units)), PASS_FAIL)
    assert order != review_order("another run", units, PASS_FAIL)
    # Every graded unit once; an errored one is not offered.
    assert sorted(order, key=lambda g: g.index) == [u for u in units if u.grade is not None]
    # Any first n hold each grade's share (10 pass, 30 fail) to within one.
    for n in range(1, len(order) + 1):
        passes = sum(1 for g in order[:n] if g.grade == "pass")
        assert abs(passes - n * 10 / 40) <= 1, (n, passes)


def test_every_prefix_of_the_queue_holds_each_grades_share_to_within_one() -> None:
    # Every split of up to 27 tasks into C, P and I, under three seeds: the browser
    # test once met 5 C, 2 P and 1 I with two C among the first five (share 3.1).
    for sizes in itertools.product(range(10), repeat=3):
        units = [
            Graded(i, 0, f"t{i}", grade)
            for i, grade in enumerate(
                g for g, size in zip("CPI", sizes, strict=True) for _ in range(size)
            )
        ]
        total = len(units)
        for run in ("run_a", "run_b", "run_c"):
            order = review_order(run, units, CPI)
            assert sorted(order, key=lambda g: g.index) == units
            held = dict.fromkeys("CPI", 0)
            for n, unit in enumerate(order, start=1):
                held[str(unit.grade)] += 1
                for grade, size in zip("CPI", sizes, strict=True):
                    assert abs(held[grade] - n * size / total) < 1, (sizes, run, n, grade)


def test_the_agreement_is_what_scikit_learn_computes() -> None:
    grader = ["C", "C", "P", "I", "C", "I", "P", "C", "I", "C", None]
    people = ["C", "P", "P", "I", "C", "C", "I", "C", "I", "C", "C"]
    units = [Graded(i, 0, f"t{i}", g) for i, g in enumerate(grader)]
    labels = [
        LabelRecord(index=i, trial=0, grade=g, labelled_by="ann", seq=i)
        for i, g in enumerate(people)
    ]
    figures = agreement(CPI, units, labels)
    pairs = [(p, g) for p, g in zip(people, grader, strict=True) if g is not None]
    wanted_people = [p for p, _ in pairs]
    wanted_grader = [g for _, g in pairs]
    assert figures.graded == 10 and figures.labelled == 10
    assert figures.agreement.compared == 10
    kappa = figures.agreement.kappa.value
    assert kappa == pytest.approx(cohen_kappa_score(wanted_people, wanted_grader))
    weighted = figures.agreement.weighted_kappa
    assert weighted is not None
    assert weighted.value == pytest.approx(
        cohen_kappa_score(wanted_people, wanted_grader, labels=["I", "P", "C"], weights="quadratic")
    )
    expected = confusion_matrix(wanted_people, wanted_grader, labels=["I", "P", "C"])
    assert [list(r) for r in figures.agreement.confusion] == expected.tolist()
    assert figures.corrected is not None and figures.corrected.corrected


def test_without_labels_the_figure_is_the_graders_own_flagged_uncorrected() -> None:
    units = [Graded(i, 0, f"t{i}", "pass" if i % 3 else "fail") for i in range(9)]
    figures = agreement(PASS_FAIL, units, [])
    assert figures.agreement.compared == 0
    assert figures.corrected is not None and not figures.corrected.corrected
    assert figures.corrected.estimate == pytest.approx(6 / 9)


# -- the view and the operations ---------------------------------------------------------
def _message(seq: int, kind: str, **data: Any) -> dict[str, Any]:
    return {
        "run_id": RUN,
        "seq": seq,
        "type": kind,
        "ts": f"2026-12-01T00:00:{seq % 60:02d}Z",
        "data": data,
    }


def _run_log(trials: int = 1, grades: bool = False) -> list[dict[str, Any]]:
    seq = itertools.count()
    log = [
        _message(
            next(seq),
            "RunLaunched",
            account=ACCOUNT,
            benchmark_id="bm_1",
            benchmark_name="QA",
            trials={"plan": {"k": trials}, "aggregator": {"name": "any_pass"}},
        )
    ]
    for index in range(TASKS):
        scores = []
        for trial in range(trials):
            passed = (index + trial) % 3 != 0
            outcome = "err" if index == TASKS - 1 else ("pass" if passed else "fail")
            meta = {"grade": "CPI"[(index + trial) % 3]} if grades else {"parsed": str(index)}
            scores.append(1.0 if passed else 0.0)
            log.append(
                _message(
                    next(seq),
                    "MaterializeTaskResult",
                    task_id=f"q-{index}",
                    index=index,
                    trial=trial,
                    score=None if outcome == "err" else scores[-1],
                    outcome=outcome,
                    output=f"answer {index}",
                    score_meta=meta,
                )
            )
        log.append(
            _message(
                next(seq),
                "MaterializeTaskAggregated",
                task_id=f"q-{index}",
                index=index,
                score=max(scores),
                outcome="err" if index == TASKS - 1 else ("pass" if max(scores) else "fail"),
                trial_scores=scores,
            )
        )
    log.append(_message(next(seq), "PipelineFinished", status="ok", duration_ms=5))
    return log


@dataclass
class ViewPorts:
    """``LabelPorts`` over a real runs view; ``send`` records a ``LabelTask`` as the
    orchestrator would (a ``TaskLabelled`` at the log's next seq) and relays it."""

    store: ProjectionStore
    seq: Iterator[int] = field(default_factory=lambda: itertools.count(1000))
    position: Iterator[int] = field(default_factory=lambda: itertools.count(10_000))
    sent: list[Contract] = field(default_factory=list)

    async def send(self, command: Contract) -> None:
        self.sent.append(command)
        assert isinstance(command, LabelTask)
        data = TaskLabelled(
            label_id=command.command_id,
            task_id=command.task_id,
            index=command.index,
            invocation=command.invocation,
            trial=command.trial,
            scale=command.scale,
            grade=command.grade,
            note=command.note,
            labelled_by=command.account,
        ).model_dump()
        message = _message(next(self.seq), "TaskLabelled", **data)
        self.store.apply_many("runs", [(next(self.position), message)])

    async def run(self, run_id: str) -> RunRow | None:
        row: RunRow | None = self.store.read(lambda cur: views.get_run(cur, run_id))
        return row

    async def latest_outcomes(self, run_id: str) -> dict[int, tuple[str, str]]:
        raise NotImplementedError

    async def wait_for_run(self, run_id: str, until: Any = None, tries: int = 100) -> Any:
        raise NotImplementedError

    async def show(self, row: RunRow) -> Any:
        raise NotImplementedError

    async def graded_rows(self, run_id: str, *, per_trial: bool) -> list[RunRow]:
        rows: list[RunRow] = self.store.read(
            lambda cur: labels_view.graded_rows(cur, run_id, per_trial=per_trial)
        )
        return rows

    async def labels(self, run_id: str, invocation: int | None = None) -> list[RunRow]:
        rows: list[RunRow] = self.store.read(
            lambda cur: labels_view.run_labels(cur, run_id, invocation)
        )
        return rows

    async def wait_for_label(self, run_id: str, label_id: str) -> RunRow | None:
        row: RunRow | None = self.store.read(
            lambda cur: labels_view.find_label(cur, run_id, label_id)
        )
        return row


def _ports(tmp_path: Path, database_url: str | None = None, **log: Any) -> ViewPorts:
    settings = Settings(data_dir=tmp_path, database_url=database_url)
    store = ProjectionStore(settings, "gateway", [RunsProjection()])
    store.apply_many("runs", list(enumerate(_run_log(**log), start=1)))
    return ViewPorts(store)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> str | None:
    if request.param == "sqlite":
        return None
    url = machine_database_url()
    if url is None:
        pytest.skip("BW_TEST_DATABASE_URL is not set")
    reset_postgres(url)
    return url


async def test_a_label_is_recorded_listed_and_replaced_by_the_same_persons_next(
    tmp_path: Path, database_url: str | None
) -> None:
    ports = _ports(tmp_path, database_url)
    first = await labelling.record(
        ports, ACCOUNT, RUN, LabelRequest(task=2, grade="FAIL", note="wrong unit")
    )
    assert (first.task, first.task_id, first.grade, first.note) == (
        "t1_2",
        "q-2",
        "fail",
        "wrong unit",
    )
    assert first.labelled_by == ACCOUNT and first.created_at is not None
    by_row_id = await labelling.record(ports, ACCOUNT, RUN, LabelRequest(task="t1_2", grade="pass"))
    by_task_id = await labelling.record(ports, ACCOUNT, RUN, LabelRequest(task="q-4", grade="pass"))
    listed = await labelling.list_labels(ports, ACCOUNT, RUN)
    assert [(lab.index, lab.grade, lab.id) for lab in listed.data] == [
        (2, "pass", by_row_id.id),
        (4, "pass", by_task_id.id),
    ]
    # The log keeps both labels of task 2; a redelivered earlier one changes nothing.
    assert [c.grade for c in ports.sent] == ["fail", "pass", "pass"]  # type: ignore[attr-defined]
    stale = _message(1, "TaskLabelled", **{**json.loads(ports.sent[0].model_dump_json()),
                     "label_id": first.id, "labelled_by": ACCOUNT})  # fmt: skip
    stale["data"] = TaskLabelled.model_validate(stale["data"]).model_dump()
    ports.store.apply_many("runs", [(99_999, stale)])
    assert [lab.grade for lab in (await labelling.list_labels(ports, ACCOUNT, RUN)).data] == [
        "pass",
        "pass",
    ]


@pytest.mark.parametrize(
    ("body", "status", "field_name"),
    [
        ({"task": 99, "grade": "pass"}, 404, "task"),
        ({"task": "no-such-task", "grade": "pass"}, 404, "task"),
        # The errored task has no grade to compare, but is a settled task: it may be labelled.
        ({"task": 3, "grade": "C"}, 422, "grade"),
        ({"task": 3, "grade": "pass", "trial": 1}, 422, "trial"),
    ],
)
async def test_bad_labels_are_refused_naming_the_field(
    tmp_path: Path, body: dict[str, Any], status: int, field_name: str
) -> None:
    ports = _ports(tmp_path)
    with pytest.raises(Refused) as refused:
        await labelling.record(ports, ACCOUNT, RUN, LabelRequest.model_validate(body))
    assert (refused.value.status, refused.value.field) == (status, field_name)
    assert ports.sent == []


async def test_another_accounts_run_is_missing(tmp_path: Path) -> None:
    ports = _ports(tmp_path)
    with pytest.raises(Refused) as refused:
        await labelling.record(ports, "acct_b", RUN, LabelRequest(task=0, grade="pass"))
    assert refused.value.status == 404 and refused.value.field == "run_id"


async def test_the_agreement_over_the_api_matches_scikit_learn_on_trials(
    tmp_path: Path,
) -> None:
    ports = _ports(tmp_path, trials=2, grades=True)
    people = {(0, 0): "C", (0, 1): "C", (1, 0): "I", (2, 1): "P", (4, 0): "C", (5, 1): "I"}
    for (index, trial), grade in people.items():
        await labelling.record(
            ports, ACCOUNT, RUN, LabelRequest(task=index, trial=trial, grade=grade)
        )
    report = await labelling.measure(ports, ACCOUNT, RUN)
    assert (report.scale, report.grader) == ("correct_partial_incorrect", "score_meta.grade")
    grader = {(i, t): "CPI"[(i + t) % 3] for i in range(TASKS) for t in range(2)}
    wanted_people = list(people.values())
    wanted_grader = [grader[k] for k in people]
    assert report.graded == TASKS * 2 and report.labelled == len(people) == report.labels
    assert report.agreement.kappa.value == pytest.approx(
        cohen_kappa_score(wanted_people, wanted_grader)
    )
    assert [list(r) for r in report.agreement.confusion] == confusion_matrix(
        wanted_people, wanted_grader, labels=["I", "P", "C"]
    ).tolist()
    assert report.corrected is not None and report.corrected.corrected
    assert report.corrected.labelled == len(people)


async def test_a_run_without_labels_reports_its_plain_figure_uncorrected(tmp_path: Path) -> None:
    ports = _ports(tmp_path)
    report = await labelling.measure(ports, ACCOUNT, RUN)
    assert report.scale == "pass_fail" and report.labels == 0
    assert report.agreement.compared == 0 and report.agreement.kappa.value is None
    assert report.corrected is not None and not report.corrected.corrected
    # 11 graded tasks (the last errored), those with index % 3 != 0 passed.
    assert report.corrected.estimate == pytest.approx(7 / 11)


def test_a_panel_in_the_score_metadata_is_measured_judge_by_judge_and_together() -> None:
    import krippendorff
    from statsmodels.stats import inter_rater

    from benchwright_gateway.labelling import panel_grades

    strict = ["C", "I", "P", "I", "C", "I", "C", "P"]
    lenient = ["C", "C", "C", "P", "C", "P", "C", "C"]
    metas = [
        {"grade": s, "panel": {"judge/strict": s, "judge/lenient": le.lower(), "x": "nope"}}
        for s, le in zip(strict, lenient, strict=True)
    ]
    units = [
        Graded(i, 0, f"t{i}", meta["grade"], panel_grades(CPI, meta))
        for i, meta in enumerate(metas)
    ]
    assert units[1].panel == {"judge/strict": "I", "judge/lenient": "C"}  # "nope" is off
    people = ["C", "P", "P", "I", "C", "I"]
    labels = [
        LabelRecord(index=i, trial=0, grade=g, labelled_by="ann", seq=i)
        for i, g in enumerate(people)
    ]
    figures = agreement(CPI, units, labels)
    assert figures.panel is not None
    each = figures.panel.judges
    assert set(each) == {"judge/strict", "judge/lenient"}
    assert each["judge/lenient"].kappa.value == pytest.approx(
        cohen_kappa_score(people, lenient[: len(people)])
    )
    categories = ["I", "P", "C"]
    counts = [[[s, le].count(c) for c in categories] for s, le in zip(strict, lenient, strict=True)]
    assert figures.panel.fleiss_kappa.value == pytest.approx(inter_rater.fleiss_kappa(counts))
    codes = [[categories.index(g) for g in rater] for rater in (strict, lenient)]
    wanted = krippendorff.alpha(reliability_data=codes, level_of_measurement="nominal")
    assert figures.panel.alpha_nominal.value == pytest.approx(wanted)
    # One judge alone is no panel.
    alone = [Graded(u.index, 0, u.task_id, u.grade) for u in units]
    assert agreement(CPI, alone, labels).panel is None
