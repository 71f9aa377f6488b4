"""A judge-graded run's pass rate or mean score, corrected for the judge's measured error.

The judge grades all N tasks; people label n of them. The corrected estimate is the
prediction-powered one (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, "Prediction-
powered inference", Science 382, 2023):

    theta = mean(judge over the N tasks) + mean(people - judge over the n labelled)

the judge's figure plus a rectifier, the judge's bias as measured where people looked.
The labelled tasks are among the N (not a separate sample, as in the paper), which makes
this the difference estimator of two-phase sampling (Cochran, "Sampling Techniques",
1977, ch. 12; Saerndal, Swensson & Wretman, "Model Assisted Survey Sampling", 1992,
ch. 9), with variance

    Var(theta) = Var(judge) / N + Var(people - judge) / n + 2 Cov(judge, people - judge) / N.

The interval adds the two terms' uncertainties by MOVER (Zou & Donner, "Construction of
confidence limits about effect measures", Stat Med 27, 2008): each side's half-width is
sqrt(a^2 + b^2 + 2 r a b), with a from the run's own plain interval of the judge's
figure (Wilson for a pass rate, the bootstrap for a mean score, exactly as
``benchwright_shared.scoring.summarize`` shows it), b from the rectifier's Wald interval
and r the estimated correlation of the two means, Cov / sqrt(Var(judge)/N *
Var(rectifier)/n) = corr(judge, people - judge) * sqrt(n / N). With Wald intervals on
both sides this is the variance above exactly; keeping the plain interval for the
judge's term means the correction only adds to what the summary already says: no labels
leave it as it is (flagged uncorrected), and labels that all agree leave it unchanged.

Assumes the labelled tasks are a simple random sample of the graded ones, tasks
independent of each other (a cluster bootstrap on the plain side is honoured, the
rectifier's term ignores clusters), and grades on a bounded numeric scale.
"""

from collections.abc import Hashable, Mapping
from math import sqrt

import numpy as np
from pydantic import BaseModel, ConfigDict

from benchwright_shared.stats import LEVEL, bootstrap_mean, wilson, z_for

PREDICTION_POWERED = "prediction-powered"


class CorrectedEstimate(BaseModel):
    """A run's figure and interval after correcting for its judge, or the plain ones
    with ``corrected`` False and the ``reason``."""

    model_config = ConfigDict(frozen=True)

    estimate: float
    low: float
    high: float
    level: float
    method: str
    corrected: bool
    reason: str | None = None
    # Tasks the judge graded (N), the labelled ones among them (n), and people's labels
    # on tasks the judge did not grade (left out).
    tasks: int
    labelled: int
    labels_without_grade: int
    # Labelled tasks where people's grade differs from the judge's.
    disagreements: int
    # The judge's own figure and the run summary's interval of it.
    judge_estimate: float
    plain_low: float
    plain_high: float
    plain_method: str
    # Mean (people - judge) over the labelled tasks, and its Wald interval.
    rectifier: float | None = None
    rectifier_low: float | None = None
    rectifier_high: float | None = None


def corrected_pass_rate[TaskKey: Hashable](
    judge: Mapping[TaskKey, bool | None],
    people: Mapping[TaskKey, bool | None],
    *,
    level: float = LEVEL,
) -> CorrectedEstimate | None:
    """The pass rate over the tasks the judge passed or failed (None: errored, as in
    the summary), corrected by people's pass/fail labels. None when nothing was graded."""
    passed = sum(1 for v in judge.values() if v is not None and v)
    graded = sum(1 for v in judge.values() if v is not None)
    plain = wilson(passed, graded, level)
    if plain is None:
        return None
    return _correct(judge, people, (passed / graded, *plain, "wilson"), level, (0.0, 1.0))


def corrected_mean_score[TaskKey: Hashable](
    judge: Mapping[TaskKey, float | None],
    people: Mapping[TaskKey, float | None],
    *,
    groups: Mapping[TaskKey, str | None] | None = None,
    level: float = LEVEL,
    bounds: tuple[float, float] = (0.0, 1.0),
) -> CorrectedEstimate | None:
    """The mean score, corrected by people's scores on the labelled tasks; the estimate
    and interval are kept within ``bounds``. ``groups`` and the judge's task order (pass
    it in task-index order) give the plain side the summary's exact interval. None when
    nothing was graded."""
    keys = [k for k, v in judge.items() if v is not None]
    scores = [float(v) for v in judge.values() if v is not None]
    clusters = [groups.get(k) for k in keys] if groups is not None else None
    plain = bootstrap_mean(scores, clusters, level=level)
    if plain is None:
        return None
    summary = (float(plain["estimate"]), float(plain["low"]), float(plain["high"]))
    return _correct(judge, people, (*summary, str(plain["method"])), level, bounds)


def _correct[TaskKey: Hashable](
    judge: Mapping[TaskKey, float | None],
    people: Mapping[TaskKey, float | None],
    plain: tuple[float, float, float, str],
    level: float,
    bounds: tuple[float, float],
) -> CorrectedEstimate:
    judge_mean, plain_low, plain_high, plain_method = plain
    graded = {k: float(v) for k, v in judge.items() if v is not None}
    labels = {k: float(v) for k, v in people.items() if v is not None}
    both = [k for k in labels if k in graded]
    n, total = len(both), len(graded)
    with_judge = np.array([graded[k] for k in both])
    difference = np.array([labels[k] for k in both]) - with_judge
    uncorrected = CorrectedEstimate(
        estimate=judge_mean,
        low=plain_low,
        high=plain_high,
        level=level,
        method=plain_method,
        corrected=False,
        tasks=total,
        labelled=n,
        labels_without_grade=len(labels) - n,
        disagreements=int(np.count_nonzero(difference)),
        judge_estimate=judge_mean,
        plain_low=plain_low,
        plain_high=plain_high,
        plain_method=plain_method,
    )
    if n < 2:
        why = "no labelled task that the judge graded" if n == 0 else "one labelled task"
        return uncorrected.model_copy(
            update={"reason": f"{why}: the judge's error needs two labelled tasks or more"}
        )
    rectifier = float(difference.mean())
    rectifier_spread = float(difference.std(ddof=1))
    rectifier_half = z_for(level) * rectifier_spread / sqrt(n)
    judge_spread = float(np.array(list(graded.values())).std(ddof=1))
    covariance = float(np.cov(with_judge, difference, ddof=1)[0, 1])
    scale = judge_spread * rectifier_spread
    correlation = (
        float(np.clip(covariance / scale * sqrt(n / total), -1.0, 1.0)) if scale > 0 else 0.0
    )
    estimate = judge_mean + rectifier
    below = _add(judge_mean - plain_low, rectifier_half, correlation)
    above = _add(plain_high - judge_mean, rectifier_half, correlation)
    floor, ceiling = bounds
    kept = min(max(estimate, floor), ceiling)
    return uncorrected.model_copy(
        update={
            "estimate": kept,
            "low": min(max(estimate - below, floor), kept),
            "high": max(min(estimate + above, ceiling), kept),
            "method": PREDICTION_POWERED,
            "corrected": True,
            "rectifier": rectifier,
            "rectifier_low": rectifier - rectifier_half,
            "rectifier_high": rectifier + rectifier_half,
        }
    )


def _add(half: float, other: float, correlation: float) -> float:
    """MOVER: two estimates' half-widths combined as standard errors are."""
    return sqrt(max(half * half + other * other + 2 * correlation * half * other, 0.0))
