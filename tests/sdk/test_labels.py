"""``bw.runs.label`` / ``labels`` / ``agreement`` and ``benchwright run label`` /
``agreement`` against the fake gateway, answering bodies the gateway's own code built."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from benchwright import Benchwright, NotFoundError, PermissionDeniedError
from benchwright.cli import app
from benchwright_gateway.labelling import PASS_FAIL, Graded, LabelRecord, agreement
from benchwright_shared.api.labels import (
    Agreement,
    CorrectedFigure,
    GraderAgreement,
    Label,
    LabelList,
)

from .cli_support import isolate_config, sent_json, use_gateway
from .fakes import RUN_ID, FakeGateway, problem

LABELS = f"/v1/runs/{RUN_ID}/labels"
AGREEMENT = f"/v1/runs/{RUN_ID}/agreement"


def label_body(grade: str = "fail", note: str | None = "off by one") -> dict[str, object]:
    return Label(
        id="label:x:1",
        run_id=RUN_ID,
        task="t1_3",
        task_id="gsm8k-3",
        index=3,
        scale="pass_fail",
        grade=grade,
        note=note,
        labelled_by="acct_a",
        created_at="2026-12-01T10:00:00+00:00",  # type: ignore[arg-type]
    ).model_dump(mode="json")


def agreement_body() -> dict[str, object]:
    grader = ["pass", "pass", "fail", "pass", "fail", "pass"]
    people = ["pass", "fail", "fail", "pass", "fail", "pass"]
    figures = agreement(
        PASS_FAIL,
        [Graded(i, 0, f"t{i}", g) for i, g in enumerate(grader)],
        [LabelRecord(i, 0, g, "acct_a", i) for i, g in enumerate(people)],
    )
    return Agreement(
        run_id=RUN_ID,
        scale="pass_fail",
        grader="outcome",
        graded=figures.graded,
        labelled=figures.labelled,
        labels=6,
        agreement=GraderAgreement.model_validate(figures.agreement.model_dump()),
        corrected=CorrectedFigure.model_validate(figures.corrected.model_dump()),
    ).model_dump(mode="json")


def test_label_sends_the_task_grade_note_and_trial(bw: Benchwright, gateway: FakeGateway) -> None:
    gateway.on("POST", LABELS, httpx.Response(201, json=label_body()))
    recorded = bw.runs.label(RUN_ID, 3, "fail", note="off by one", trial=0)
    assert json.loads(gateway.seen("POST", LABELS)[0].content) == {
        "task": 3,
        "grade": "fail",
        "note": "off by one",
        "trial": 0,
    }
    assert (recorded.task, recorded.grade, recorded.labelled_by) == ("t1_3", "fail", "acct_a")
    bw.runs.label(RUN_ID, "gsm8k-3", "pass")
    assert json.loads(gateway.seen("POST", LABELS)[1].content) == {
        "task": "gsm8k-3",
        "grade": "pass",
    }


def test_labels_and_agreement_parse_the_gateways_answers(
    bw: Benchwright, gateway: FakeGateway
) -> None:
    listing = LabelList(data=[Label.model_validate(label_body())]).model_dump(mode="json")
    gateway.on("GET", LABELS, httpx.Response(200, json=listing))
    gateway.on("GET", AGREEMENT, httpx.Response(200, json=agreement_body()))
    assert [lab.note for lab in bw.runs.labels(RUN_ID).data] == ["off by one"]
    found = bw.runs.agreement(RUN_ID)
    assert found.agreement.compared == 6
    assert found.agreement.raw_agreement == pytest.approx(5 / 6)
    # Rows: people (fail, pass); columns: the grader. Task 1: people fail, grader pass.
    assert found.agreement.confusion == ((2, 1), (0, 3))
    assert found.corrected is not None and found.corrected.corrected


def test_refusals_name_the_scope_and_the_field(bw: Benchwright, gateway: FakeGateway) -> None:
    gateway.on(
        "POST",
        LABELS,
        problem(403, "forbidden", "this token lacks the runs:label scope"),
        problem(404, "task not found", "no settled task 99", field="task"),
    )
    with pytest.raises(PermissionDeniedError, match="runs:label"):
        bw.runs.label(RUN_ID, 1, "pass")
    with pytest.raises(NotFoundError) as missing:
        bw.runs.label(RUN_ID, 99, "pass")
    assert missing.value.field == "task"


def test_the_cli_labels_a_task_and_prints_the_agreement(
    monkeypatch: pytest.MonkeyPatch, gateway: FakeGateway, tmp_path: Path
) -> None:
    use_gateway(monkeypatch, gateway)
    isolate_config(monkeypatch, tmp_path)
    gateway.on("POST", LABELS, httpx.Response(201, json=label_body()))
    gateway.on("GET", AGREEMENT, httpx.Response(200, json=agreement_body()))
    runner = CliRunner()
    labelled = runner.invoke(
        app, ["run", "label", RUN_ID, "3", "fail", "--note", "off by one", "-o", "table"]
    )
    assert labelled.exit_code == 0, labelled.output
    assert sent_json(gateway.seen("POST", LABELS)[0]) == {
        "task": 3,
        "grade": "fail",
        "note": "off by one",
    }
    assert "labelled gsm8k-3 fail" in labelled.output
    shown = runner.invoke(app, ["run", "agreement", RUN_ID, "-o", "table"])
    assert shown.exit_code == 0, shown.output
    assert "raw agreement 0.833" in shown.output and "corrected:" in shown.output


def test_the_cli_refuses_a_bad_label_in_one_line(
    monkeypatch: pytest.MonkeyPatch, gateway: FakeGateway, tmp_path: Path
) -> None:
    use_gateway(monkeypatch, gateway)
    isolate_config(monkeypatch, tmp_path)
    gateway.on(
        "POST",
        LABELS,
        problem(422, "grade not on the scale", "'maybe' is not a grade", field="grade"),
    )
    result = CliRunner().invoke(app, ["run", "label", RUN_ID, "3", "maybe"])
    assert result.exit_code != 0
    assert "grade" in result.output and len(result.output.strip().splitlines()) == 1
