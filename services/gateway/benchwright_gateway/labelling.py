"""People's labels against the run's grader: the scale a run is graded on, people's
grade per task, the agreement and corrected figures, and the review queue's sample.
No I/O.

What "the grader" is depends on the run: a scorer that puts a ``grade`` of C, P or I
in its score metadata (a judge's correct / partial / incorrect, as Inspect's
``model_graded_qa`` writes it) is read on that scale; any other run is read as pass or
fail from each task's outcome. An errored task has no grade. The figures themselves
are ``benchwright_shared.judge_agreement`` and ``judge_correction`` (decision 0059).
"""

import hashlib
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from benchwright_shared.judge_agreement import (
    CORRECT_PARTIAL_INCORRECT,
    JudgeAgreement,
    PanelAgreement,
    Scale,
    judge_agreement,
    panel_agreement,
)
from benchwright_shared.judge_correction import (
    CorrectedEstimate,
    corrected_mean_score,
    corrected_pass_rate,
)

ScaleName = Literal["pass_fail", "correct_partial_incorrect"]
PASS_FAIL: ScaleName = "pass_fail"
CPI: ScaleName = "correct_partial_incorrect"
# Worst to best, so that weighted kappa and "which way the grader errs" read them in order.
SCALES: dict[ScaleName, Scale] = {
    PASS_FAIL: Scale(ordered=True, categories=("fail", "pass")),
    CPI: CORRECT_PARTIAL_INCORRECT,
}
# A grade as a score, for the corrected mean: partial credit is half, as Inspect's
# ``model_graded_qa`` counts it.
GRADE_VALUES: dict[str, float] = {"fail": 0.0, "pass": 1.0, "I": 0.0, "P": 0.5, "C": 1.0}
# Where the grade was read from, per scale.
GRADE_SOURCES: dict[ScaleName, str] = {PASS_FAIL: "outcome", CPI: "score_meta.grade"}
# The longest note a label may carry.
NOTE_CAP = 4000


@dataclass(frozen=True)
class Graded:
    """One unit the grader saw: a task (or one trial of it, on a run of several)."""

    index: int
    trial: int
    task_id: str
    # On the run's scale; None when the grader gave none (the task errored).
    grade: str | None
    # A panel's grade per judge (``score_meta.panel``), on the same scale; empty when
    # one judge (or none) graded.
    panel: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LabelRecord:
    """One label as the log holds it; ``seq`` orders labels in time."""

    index: int
    trial: int
    grade: str
    labelled_by: str
    seq: int


@dataclass(frozen=True)
class AgreementFigures:
    scale: ScaleName
    graded: int
    labelled: int
    agreement: JudgeAgreement
    corrected: CorrectedEstimate | None
    # Each judge of a panel against people, and the judges with each other.
    panel: PanelAgreement | None = None


def meta_grade(score_meta: Mapping[str, Any] | None) -> str | None:
    """The C/P/I grade a scorer put in its score metadata, if any."""
    grade = (score_meta or {}).get("grade")
    if isinstance(grade, str) and grade.strip().upper() in ("C", "P", "I"):
        return grade.strip().upper()
    return None


def panel_grades(scale: ScaleName, score_meta: Mapping[str, Any] | None) -> dict[str, str]:
    """A panel's grade per judge, from ``score_meta.panel`` (``{judge: grade}``), on the
    run's scale; judges whose grade is off the scale are left out."""
    panel = (score_meta or {}).get("panel")
    if not isinstance(panel, Mapping):
        return {}
    found = {}
    for judge, grade in panel.items():
        spelled = check_grade(scale, grade) if isinstance(grade, str) else None
        if spelled is not None:
            found[str(judge)] = spelled
    return found


def scale_of(rows: Iterable[Mapping[str, Any]]) -> ScaleName:
    """C/P/I when any settled row's scorer graded it so, else pass/fail.

    ``rows`` carry ``outcome`` and ``score_meta`` (a dict).
    """
    return CPI if any(meta_grade(r.get("score_meta")) for r in rows) else PASS_FAIL


def grader_grade(
    scale: ScaleName, outcome: str | None, score_meta: Mapping[str, Any] | None
) -> str | None:
    """The grader's grade of one task on ``scale`` (None: it gave none)."""
    if scale == CPI:
        return meta_grade(score_meta)
    return outcome if outcome in ("pass", "fail") else None


def check_grade(scale: ScaleName, grade: str) -> str | None:
    """``grade`` as the scale spells it (C/P/I in capitals), or None if it is not on it."""
    spelled = grade.strip().upper() if scale == CPI else grade.strip().lower()
    return spelled if spelled in SCALES[scale].categories else None


def latest_labels(labels: Iterable[LabelRecord]) -> list[LabelRecord]:
    """Each person's latest label of each unit: a later label replaces theirs."""
    latest: dict[tuple[int, int, str], LabelRecord] = {}
    for label in sorted(labels, key=lambda lab: lab.seq):
        latest[(label.index, label.trial, label.labelled_by)] = label
    return sorted(latest.values(), key=lambda lab: lab.seq)


def consensus(labels: Iterable[LabelRecord]) -> dict[tuple[int, int], str]:
    """People's grade per (index, trial): the most common of each person's latest
    label; a tie goes to the tied grade labelled most recently."""
    by_unit: dict[tuple[int, int], list[LabelRecord]] = {}
    for label in latest_labels(labels):
        by_unit.setdefault((label.index, label.trial), []).append(label)
    agreed: dict[tuple[int, int], str] = {}
    for unit, unit_labels in by_unit.items():
        counts = Counter(label.grade for label in unit_labels)
        top = max(counts.values())
        # ``unit_labels`` is in time order: the last tied grade is the most recent.
        agreed[unit] = next(
            label.grade for label in reversed(unit_labels) if counts[label.grade] == top
        )
    return agreed


def agreement(
    scale: ScaleName, graded: Sequence[Graded], labels: Iterable[LabelRecord]
) -> AgreementFigures:
    """The grader against people over the labelled units, and the run's figure corrected
    for the grader's measured error (a pass rate on pass/fail, a mean score on C/P/I)."""
    categories = SCALES[scale].categories
    ordered = sorted(graded, key=lambda g: (g.index, g.trial))
    judge = {(g.index, g.trial): g.grade for g in ordered}
    people = {k: v for k, v in consensus(labels).items() if v in categories}
    figures = judge_agreement(
        cast(Mapping[tuple[int, int], str | float | None], judge),
        cast(Mapping[tuple[int, int], str | float | None], people),
        SCALES[scale],
    )
    corrected: CorrectedEstimate | None
    if scale == PASS_FAIL:
        corrected = corrected_pass_rate(
            {k: None if v is None else v == "pass" for k, v in judge.items()},
            {k: v == "pass" for k, v in people.items()},
        )
    else:
        corrected = corrected_mean_score(
            {k: None if v is None else GRADE_VALUES[v] for k, v in judge.items()},
            {k: GRADE_VALUES[v] for k, v in people.items()},
        )
    labelled = sum(1 for k in people if judge.get(k) is not None)
    judges = sorted({name for g in ordered for name in g.panel})
    panel = None
    if judges:
        gradings = {
            name: {(g.index, g.trial): g.panel.get(name) for g in ordered} for name in judges
        }
        panel = panel_agreement(
            cast(Mapping[str, Mapping[tuple[int, int], str | float | None]], gradings),
            cast(Mapping[tuple[int, int], str | float | None], people),
            SCALES[scale],
        )
    return AgreementFigures(
        scale=scale,
        graded=sum(1 for v in judge.values() if v is not None),
        labelled=labelled,
        agreement=figures,
        corrected=corrected,
        panel=panel,
    )


def review_order(run_id: str, graded: Sequence[Graded], scale: ScaleName) -> list[Graded]:
    """The run's graded units in the order the review queue offers them, stratified
    across the grader's grades in proportion to their sizes.

    Each grade's units are shuffled by a generator seeded with the run's id; the queue
    then takes, at its n-th place, a unit of the grade furthest behind its share of n
    (largest deficit first, the chairman-assignment rule; ties go by a seeded order of
    the grades). So any first n hold each grade's share of n to within one task, which
    independent random offsets per grade do not promise (three grades of 5, 2 and 1
    gave two C among the first five, against 3.1), and the same run always gives the
    same order. Proportional allocation is what keeps the labels a nearly
    self-weighting sample: ``judge_correction`` and the agreement figures assume
    labelled tasks are drawn with equal probability (decision 0059), and an equal
    number per grade would over-weight the rarer grades without sampling weights. A
    task the grader gave no grade (errored) is not offered."""
    seed = int.from_bytes(hashlib.sha256(f"review:{run_id}".encode()).digest()[:8], "big")
    rng = random.Random(seed)
    strata: list[list[Graded]] = []
    for grade in SCALES[scale].categories:
        units = sorted((g for g in graded if g.grade == grade), key=lambda g: (g.index, g.trial))
        rng.shuffle(units)
        strata.append(units)
    tie_order = list(range(len(strata)))
    rng.shuffle(tie_order)
    total = sum(len(units) for units in strata)
    taken = [0] * len(strata)
    queue: list[Graded] = []
    for n in range(1, total + 1):
        behind = max(
            (s for s in tie_order if taken[s] < len(strata[s])),
            key=lambda s: (n * len(strata[s]) - taken[s] * total, -tie_order.index(s)),
        )
        queue.append(strata[behind][taken[behind]])
        taken[behind] += 1
    return queue
