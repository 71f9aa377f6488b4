"""``GET /v1/runs/{id}/compare?with=``: a paired comparison of two runs' tasks.

Run A (the path's) is the reference, B (``with``) the candidate; every figure is over
the tasks both ran, and ``difference`` is always B minus A.
"""

from typing import Any

from pydantic import Field

from benchwright_shared.api.base import Answer, AttrDict
from benchwright_shared.api.runs import BenchmarkRef, SubsetRef, SutRef


class ComparedRun(Answer):
    """Which run a side is, and whether it is still running (its tasks may grow)."""

    id: str
    status: str
    model: SutRef | None = None
    benchmark: BenchmarkRef | None = None
    subset: SubsetRef | None = None
    summary: AttrDict | None = None


class ComparedTasks(Answer):
    """How the two runs' tasks pair up: ``judged`` were scored in both; the ids of a
    few of the tasks only one run has."""

    common: int
    judged: int
    only_in_a: int
    only_in_b: int
    only_in_a_ids: list[str] = Field(default_factory=list)
    only_in_b_ids: list[str] = Field(default_factory=list)


class Flips(Answer):
    """The judged tasks by how their outcome moved from A to B."""

    fixed: int
    regressed: int
    unchanged_pass: int
    unchanged_fail: int


class PassRates(Answer):
    """Each run's pass rate over the judged tasks, and B minus A."""

    a: float | None = None
    b: float | None = None
    difference: float | None = None


class DifferenceInterval(Answer):
    """The paired bootstrap interval of the mean score difference, at ``level``."""

    low: float
    high: float
    level: float
    method: str
    resamples: int | None = None
    clusters: int | None = None


class MeanScores(Answer):
    """Each run's mean score over the judged tasks; the difference with its interval."""

    a: float | None = None
    b: float | None = None
    difference: float | None = None
    interval: DifferenceInterval | None = None


class McNemar(Answer):
    """McNemar's exact test on the discordant pairs (fixed against regressed)."""

    regressed: int
    fixed: int
    p_value: float
    method: str


class Verdict(Answer):
    """``outcome``: ``better``, ``worse``, ``no_significant_difference`` or
    ``no_common_tasks``; ``text`` says it in a sentence."""

    outcome: str
    significant: bool
    alpha: float
    text: str


class TaskSide(Answer):
    """One run's result for a task."""

    index: int | None = None
    outcome: str | None = None
    score: float | None = None


class TaskChange(Answer):
    """A task whose result moved: ``change`` is ``fixed``, ``regressed``,
    ``score_up``, ``score_down``, ``newly_errored`` or ``recovered``."""

    task_id: str
    change: str
    a: TaskSide
    b: TaskSide
    delta: float | None = None


class Difference(Answer):
    """A part that sets the runs apart (``model``, ``impl_id``, ``fingerprint.atomize``
    ...) and its value in each; None where a run lacks it."""

    part: str
    a: Any = None
    b: Any = None


class RunComparison(Answer):
    """Run B against run A, task by task."""

    object: str = "run_comparison"
    a: ComparedRun
    b: ComparedRun
    tasks: ComparedTasks
    flips: Flips
    # Tasks that errored: in ``both`` runs, or in only one (``a_only``, ``b_only``).
    errored: dict[str, int] = Field(default_factory=dict)
    pass_rate: PassRates
    mean_score: MeanScores
    mcnemar: McNemar
    verdict: Verdict
    changes: list[TaskChange] = Field(default_factory=list)
    changes_truncated: bool = False
    differences: list[Difference] = Field(default_factory=list)
