"""People's labels of a run's tasks: record one, list them, and measure the run's
grader against them (``labelling`` holds the rules and the figures).

A label is a ``LabelTask`` command to the orchestrator, which records ``TaskLabelled``
in the run's log (decision 0060); the gateway's ``labels`` view then holds each
person's latest label per task, and recording waits briefly for it (read-your-write).
Labels are the run owner's: another account's run answers as a missing one.
"""

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

from benchwright_gateway.labelling import (
    GRADE_SOURCES,
    SCALES,
    Graded,
    LabelRecord,
    ScaleName,
    agreement,
    check_grade,
    grader_grade,
    panel_grades,
    scale_of,
)
from benchwright_gateway.operations.runs import owned_run
from benchwright_gateway.ports import LabelPorts, RunRow
from benchwright_gateway.projections import trials_per_task
from benchwright_gateway.render import task_row_id
from benchwright_gateway.requests import LabelRequest
from benchwright_shared.api.labels import (
    Agreement,
    CorrectedFigure,
    GraderAgreement,
    Label,
    LabelList,
    PanelFigures,
)
from benchwright_shared.contracts import LabelTask
from benchwright_shared.refusal import Refused

ROW_ID = re.compile(r"^t(\d+)_(\d+)$")


@dataclass(frozen=True)
class GradedRun:
    """A run's graded units (latest sweep) on the scale its grader used."""

    run: RunRow
    scale: ScaleName
    trials: int
    rows: list[RunRow]
    units: list[Graded]

    @property
    def invocation(self) -> int:
        return int(self.rows[0]["invocation"]) if self.rows else 1


async def graded_run(ports: LabelPorts, account: str, run_id: str) -> GradedRun:
    """The caller's run with what its grader said of each task (or trial)."""
    return await graded(ports, await owned_run(ports, account, run_id))


async def graded(ports: LabelPorts, run: RunRow) -> GradedRun:
    """``run`` (already the caller's) with what its grader said of each task or trial."""
    run_id = str(run["run_id"])
    trials = trials_per_task(run.get("trials"))
    rows = await ports.graded_rows(run_id, per_trial=trials > 1)
    for row in rows:
        row["score_meta"] = json.loads(row["score_meta"]) if row.get("score_meta") else {}
    scale = scale_of(rows)
    units = [
        Graded(
            index=int(r["idx"]),
            trial=int(r["trial"]),
            task_id=str(r["task_id"]),
            grade=grader_grade(scale, r.get("outcome"), r["score_meta"]),
            panel=panel_grades(scale, r["score_meta"]),
        )
        for r in rows
    ]
    return GradedRun(run=run, scale=scale, trials=trials, rows=rows, units=units)


async def record(ports: LabelPorts, account: str, run_id: str, body: LabelRequest) -> Label:
    """Record the caller's grade of one task: 404 naming ``task`` for a task the run's
    latest sweep has not settled, 422 naming ``trial`` or ``grade`` for one the run
    does not have or that is not on its grader's scale."""
    graded = await graded_run(ports, account, run_id)
    row = find_task(graded.rows, body.task)
    trial = body.trial or 0
    if trial >= graded.trials:
        raise Refused(
            422,
            "no such trial",
            f"run {run_id} has {graded.trials} trial(s) a task; trial {trial} is not one",
            field="trial",
        )
    grade = check_grade(graded.scale, body.grade)
    if grade is None:
        allowed = ", ".join(str(c) for c in SCALES[graded.scale].categories)
        raise Refused(
            422,
            "grade not on the scale",
            f"{body.grade!r} is not a grade of this run's scale {graded.scale} ({allowed})",
            field="grade",
        )
    command = LabelTask(
        command_id=f"label:{run_id}:{uuid.uuid4().hex}",
        run_id=run_id,
        account=account,
        task_id=str(row["task_id"]),
        index=int(row["idx"]),
        invocation=int(row["invocation"]),
        trial=trial,
        scale=graded.scale,
        grade=grade,
        note=body.note or None,
    )
    await ports.send(command)
    shown = await ports.wait_for_label(run_id, command.command_id)
    if shown is not None:
        return render_label(shown)
    # Not in the view yet: answer what was recorded, without its time.
    return Label(
        id=command.command_id,
        run_id=run_id,
        task=task_row_id(command.invocation, command.index),
        task_id=command.task_id,
        index=command.index,
        invocation=command.invocation,
        trial=trial,
        scale=graded.scale,
        grade=grade,
        note=command.note,
        labelled_by=account,
    )


async def list_labels(ports: LabelPorts, account: str, run_id: str) -> LabelList:
    """Every label of the run (each person's latest per task), oldest first."""
    await owned_run(ports, account, run_id)
    return LabelList(data=[render_label(r) for r in await ports.labels(run_id)])


async def measure(ports: LabelPorts, account: str, run_id: str) -> Agreement:
    """The run's grader against people's labels of its latest sweep, and its corrected
    pass rate or mean score."""
    graded = await graded_run(ports, account, run_id)
    records = _records(graded, await ports.labels(run_id, graded.invocation))
    figures = agreement(graded.scale, graded.units, records)
    return Agreement(
        run_id=run_id,
        invocation=graded.invocation,
        scale=graded.scale,
        grader=GRADE_SOURCES[graded.scale],
        graded=figures.graded,
        labelled=figures.labelled,
        labels=len(records),
        agreement=GraderAgreement.model_validate(figures.agreement.model_dump()),
        corrected=(
            None
            if figures.corrected is None
            else CorrectedFigure.model_validate(figures.corrected.model_dump())
        ),
        panel=(
            None
            if figures.panel is None
            else PanelFigures.model_validate(figures.panel.model_dump())
        ),
    )


async def corrected_summary(ports: LabelPorts, run: RunRow) -> CorrectedFigure | None:
    """The run's pass rate (or mean score) with its interval widened for the grader's
    error as people's labels measure it (prediction-powered inference); None while no
    label of its latest sweep is on its grader's scale, so an unlabelled run costs one
    query of the labels table."""
    labels = await ports.labels(str(run["run_id"]))
    if not labels:
        return None
    found = await graded(ports, run)
    records = _records(found, [r for r in labels if int(r["invocation"]) == found.invocation])
    if not records:
        return None
    figures = agreement(found.scale, found.units, records)
    if figures.corrected is None or not figures.corrected.corrected:
        return None
    return CorrectedFigure.model_validate(figures.corrected.model_dump())


def _records(found: GradedRun, labels: list[RunRow]) -> list[LabelRecord]:
    """People's labels (of the run's latest sweep) on its grader's scale."""
    return [
        LabelRecord(
            index=int(r["idx"]),
            trial=int(r["trial"]),
            grade=str(r["grade"]),
            labelled_by=str(r["labelled_by"]),
            seq=int(r["seq"]),
        )
        for r in labels
        if r["scale"] == found.scale
    ]


def find_task(rows: list[RunRow], task: int | str) -> RunRow:
    """The settled row ``task`` names: its index, its row id (``t1_3``) or its task id."""
    wanted: Any = task
    if isinstance(task, str):
        matched = ROW_ID.match(task)
        if matched:
            wanted = (int(matched[1]), int(matched[2]))
        elif task.isdigit():
            wanted = int(task)
    for row in rows:
        if (
            (isinstance(wanted, int) and int(row["idx"]) == wanted)
            or (isinstance(wanted, tuple) and (int(row["invocation"]), int(row["idx"])) == wanted)
            or (isinstance(wanted, str) and row["task_id"] == wanted)
        ):
            return row
    raise Refused(
        404,
        "task not found",
        f"no settled task {task!r} in the run's latest sweep",
        field="task",
    )


def render_label(row: RunRow) -> Label:
    return Label(
        id=row["label_id"],
        run_id=row["run_id"],
        task=task_row_id(int(row["invocation"]), int(row["idx"])),
        task_id=row["task_id"],
        index=int(row["idx"]),
        invocation=int(row["invocation"]),
        trial=int(row["trial"]),
        scale=row["scale"],
        grade=row["grade"],
        note=row.get("note"),
        labelled_by=row["labelled_by"],
        created_at=row.get("labelled_at"),
    )
