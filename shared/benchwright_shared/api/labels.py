"""People's labels of a run's tasks, and how far the run's grader agrees with them."""

from pydantic import Field

from benchwright_shared.api.base import Answer, Timestamp
from benchwright_shared.stats import LEVEL

# The grades' scale: ``pass_fail`` or ``correct_partial_incorrect`` (an open string, so
# an older client reads a newer scale).
LabelScale = str


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


# The statistics' own models (``judge_agreement``, ``judge_correction``) as answers:
# the same fields, open strings for their enumerations, and unknown fields kept.
class KappaFigure(Answer):
    """A kappa, its bootstrap interval, and its large-sample standard error (or None
    with a ``reason``)."""

    value: float | None = None
    low: float | None = None
    high: float | None = None
    level: float = LEVEL
    standard_error: float | None = None
    resamples: int = 0
    # ``linear`` or ``quadratic`` for a weighted kappa.
    weighting: str | None = None
    reason: str | None = None


class GraderLean(Answer):
    """Which way the grader errs: above people (``lenient``) or below (``strict``)."""

    lenient: int
    strict: int
    lenient_rate: float
    strict_rate: float
    mean_offset: float
    # ``lenient``, ``strict`` or ``even``.
    leaning: str
    # Exact two-sided sign test on the disagreements.
    p_value: float


class GraderAgreement(Answer):
    """The grader against people over the labelled tasks it graded.

    ``confusion``: rows are people's grade, columns the grader's, both in
    ``categories`` order (worst to best).
    """

    compared: int
    labels_without_grade: int
    categories: tuple[str | float, ...]
    raw_agreement: float | None
    kappa: KappaFigure
    weighted_kappa: KappaFigure | None
    confusion: tuple[tuple[int, ...], ...]
    lean: GraderLean | None


class CorrectedFigure(Answer):
    """The run's figure and interval corrected for the grader's measured error
    (prediction-powered inference), or the plain ones with ``corrected`` False."""

    estimate: float
    low: float
    high: float
    level: float
    method: str
    corrected: bool
    reason: str | None = None
    tasks: int
    labelled: int
    labels_without_grade: int
    disagreements: int
    judge_estimate: float
    plain_low: float
    plain_high: float
    plain_method: str
    rectifier: float | None = None
    rectifier_low: float | None = None
    rectifier_high: float | None = None


class InterJudge(Answer):
    """An inter-rater coefficient over ``tasks`` tasks, or None with the reason."""

    value: float | None
    tasks: int
    reason: str | None = None


class PanelFigures(Answer):
    """A panel of judges (``score_meta.panel``): each judge against people, and the
    judges with each other over every task they graded (Fleiss' kappa, Krippendorff's
    alpha, nominal and, the scales being ordered, ordinal)."""

    categories: tuple[str | float, ...]
    judges: dict[str, GraderAgreement]
    fleiss_kappa: InterJudge
    alpha_nominal: InterJudge
    alpha_ordinal: InterJudge | None = None
    alpha_interval: InterJudge | None = None


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
    agreement: GraderAgreement
    corrected: CorrectedFigure | None = None
    # With a panel of judges: each one's agreement with people, and theirs together.
    panel: PanelFigures | None = None
