"""``run label`` and ``run agreement``: grade a run's tasks by hand, and see how far the
run's grader agrees with people."""

from __future__ import annotations

from typing import Annotated

import typer

from ..._common import (
    OutputOption,
    dump,
    emit,
    get_client,
    handle_errors,
    output_format,
    resolve_run_id,
)
from ._group import RunId, run_app

__all__ = ["agreement", "label"]


@run_app.command("label")
@handle_errors
def label(
    run_id: RunId,
    task: Annotated[
        str, typer.Argument(metavar="TASK", help="The task's index, row id (t1_3) or task id.")
    ],
    grade: Annotated[
        str,
        typer.Argument(metavar="GRADE", help="pass / fail, or C / P / I on a judge's scale."),
    ],
    note: Annotated[
        str | None, typer.Option(help="Why, in a sentence.", show_default=False)
    ] = None,
    trial: Annotated[
        int | None, typer.Option(min=0, help="Which trial, on a run of several.")
    ] = None,
    output: OutputOption = None,
) -> None:
    """Record your grade of one task; a later label of the same task replaces it."""
    fmt = output_format(output)
    named: int | str = int(task) if task.isdigit() else task
    with get_client() as bw:
        recorded = bw.runs.label(resolve_run_id(bw, run_id), named, grade, note=note, trial=trial)

    def table() -> None:
        trial_text = f" trial {recorded.trial}" if trial is not None else ""
        typer.echo(f"labelled {recorded.task_id}{trial_text} {recorded.grade}")

    emit(dump(recorded), fmt, table=table)


@run_app.command("agreement")
@handle_errors
def agreement(run_id: RunId, output: OutputOption = None) -> None:
    """How far the run's grader agrees with people's labels, and its corrected figure."""
    fmt = output_format(output)
    with get_client() as bw:
        found = bw.runs.agreement(resolve_run_id(bw, run_id))

    def table() -> None:
        figures = found.agreement
        typer.echo(f"grader: {found.grader} ({found.scale}); labelled {found.labelled} of "
                   f"{found.graded} graded")  # fmt: skip
        if figures.raw_agreement is None:
            typer.echo("agreement: no labelled task the grader graded yet")
        else:
            kappa = figures.kappa
            interval = (
                f" [{kappa.low:.3f}, {kappa.high:.3f}]"
                if kappa.low is not None and kappa.high is not None
                else ""
            )
            shown = "n/a" if kappa.value is None else f"{kappa.value:.3f}"
            typer.echo(f"raw agreement {figures.raw_agreement:.3f}; kappa {shown}{interval}")
            if figures.lean is not None:
                typer.echo(f"the grader leans {figures.lean.leaning}")
        corrected = found.corrected
        if corrected is not None:
            state = "corrected" if corrected.corrected else "uncorrected"
            typer.echo(
                f"{state}: {corrected.estimate:.3f} [{corrected.low:.3f}, {corrected.high:.3f}]"
            )

    emit(dump(found), fmt, table=table)
