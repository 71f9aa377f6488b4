"""People's labels of a run's tasks, and how far the run's grader agrees with them."""

from typing import Literal

from pydantic import Field

from benchwright_shared.api.base import Answer, Timestamp
from benchwright_shared.judge_agreement import JudgeAgreement
from benchwright_shared.judge_correction import CorrectedEstimate

LabelScale = Literal["pass_fail", "correct_partial_incorrect"]


class Label(Answer):
    """A person's grade of one task (one trial of it, on a run of several).

    ``id`` is the label's own; ``task`` the task's row id (``t<invocation>_<index>``).
    A later label of the same task by the same person replaces this one in listings.
    """

    id: str
    object: str = "label"
    run_id: str
    task: str
    task_id: str
    index: int
    invocation: int = 1
    trial: int = 0
    scale: LabelScale
    grade: str
    note: str | None = None
    labelled_by: str
    created_at: Timestamp | None = None


class LabelList(Answer):
    """A run's labels, each person's latest per task, oldest first."""

    object: str = "list"
    data: list[Label] = Field(default_factory=list)


class Agreement(Answer):
    """The run's grader against people, over the tasks both graded.

    ``grader`` says where the grader's grade was read (``outcome``: pass or fail;
    ``score_meta.grade``: a judge's C/P/I). ``agreement`` holds raw agreement, Cohen's
    kappa with its bootstrap interval (and weighted kappa, the scales being ordered),
    the confusion matrix (rows: people, columns: the grader) and which way the grader
    errs. ``corrected`` is the run's pass rate (pass/fail) or mean score (C/P/I, partial
    = 0.5) corrected by prediction-powered inference, ``corrected: false`` with its
    reason while no labelled task was graded; None when the grader graded nothing.
    """

    object: str = "agreement"
    run_id: str
    invocation: int = 1
    scale: LabelScale
    grader: str
    # Units (tasks, or trials on a run of several) the grader graded, people labelled
    # among them, and people's labels in all (each person's latest).
    graded: int
    labelled: int
    labels: int
    agreement: JudgeAgreement
    corrected: CorrectedEstimate | None = None
