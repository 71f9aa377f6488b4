"""How sure a number is: intervals for a run's summary and tests for two runs' difference.

Pure functions over plain numbers, no I/O. The orchestrator writes a summary into the
run's log and the gateway recomputes it live from task rows; both call these with the
same rows in the same (index) order, and every resampling starts from the same seed,
so the two agree to the last digit and a replayed log gives the same interval.

* ``wilson``: the Wilson score interval of a proportion (the pass rate). It stays
  inside [0, 1] and is honest at 0 or n successes, where the normal approximation
  collapses to a point.
* ``bootstrap_mean``: a percentile bootstrap interval of a mean (the mean score, or a
  mean paired difference). Rows that share a group key (an MMLU subject) are not
  independent draws, so when keys are given whole groups are resampled (a cluster
  bootstrap) and the interval widens to match.
* ``mcnemar_exact``: McNemar's exact test on the discordant pairs of two runs over the
  same tasks (a two-sided binomial test at p = 1/2).
"""

from collections import Counter
from collections.abc import Sequence
from math import comb, sqrt
from statistics import NormalDist
from typing import Any

import numpy as np

LEVEL = 0.95
RESAMPLES = 2000
# Fixed, so the same rows give the same interval in every service and every replay.
SEED = 20261202


def z_for(level: float) -> float:
    return NormalDist().inv_cdf(0.5 + level / 2)


def wilson(successes: int, trials: int, level: float = LEVEL) -> tuple[float, float] | None:
    """The Wilson score interval of ``successes / trials``; None with no trials."""
    if trials <= 0:
        return None
    z = z_for(level)
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def bootstrap_mean(
    values: Sequence[float],
    groups: Sequence[str | None] | None = None,
    *,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
) -> dict[str, Any] | None:
    """The mean of ``values`` and a percentile bootstrap interval around it.

    With ``groups`` (one key per value) and more than one distinct key, whole groups
    are resampled and each resample's mean is its total over its count (a ratio
    estimator: groups of unequal size weigh by their rows). A value without a key is a
    group of its own. None when there is nothing to average.
    """
    if not values:
        return None
    data = np.asarray(values, dtype=float)
    estimate = float(data.mean())
    rng = np.random.default_rng(SEED)
    keys = _cluster_keys(groups, len(values)) if groups is not None else None
    if keys is not None:
        # One multinomial draw per resample says how often each group is taken.
        order = sorted(set(keys))
        position = {k: i for i, k in enumerate(order)}
        sums = np.zeros(len(order))
        counts = np.zeros(len(order))
        for value, key in zip(data, keys, strict=True):
            sums[position[key]] += value
            counts[position[key]] += 1
        taken = rng.multinomial(len(order), np.full(len(order), 1 / len(order)), size=resamples)
        means = (taken @ sums) / (taken @ counts)
        method, clusters = "cluster bootstrap", len(order)
    else:
        # Resampling n rows equals drawing how many times each distinct value comes
        # up: a multinomial over the distinct values, cheap for 10,000 rows of 0/1.
        tally = Counter(data.tolist())
        distinct = np.array(list(tally), dtype=float)
        weights = np.array(list(tally.values()), dtype=float) / len(data)
        taken = rng.multinomial(len(data), weights, size=resamples)
        means = (taken @ distinct) / len(data)
        method, clusters = "bootstrap", None
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return {
        "estimate": estimate,
        "low": min(float(low), estimate),
        "high": max(float(high), estimate),
        "level": level,
        "method": method,
        "resamples": resamples,
        "clusters": clusters,
    }


def _cluster_keys(groups: Sequence[str | None], n: int) -> list[str] | None:
    """Each value's cluster (a keyless value alone), or None when there is at most one
    named group: resampling one cluster says nothing, so rows are resampled instead."""
    if len(groups) != n:
        raise ValueError(f"{len(groups)} group keys for {n} values")
    named = {g for g in groups if g is not None}
    if len(named) < 2:
        return None
    return [f"g:{g}" if g is not None else f"row:{i}" for i, g in enumerate(groups)]


def mcnemar_exact(regressed: int, fixed: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs: the chance of a split
    at least this uneven if either direction were equally likely. 1.0 with none."""
    n = regressed + fixed
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(regressed, fixed) + 1))
    return min(1.0, 2 * tail / (1 << n))  # int / int: exact for any n


def within_task_variance(trial_scores: Sequence[Sequence[float | None]]) -> dict[str, Any] | None:
    """How much a task's trials disagree: the mean over tasks of the sample variance of
    their settled trial scores (tasks with two or more). None when no task has two."""
    variances = []
    for scores in trial_scores:
        settled = [s for s in scores if s is not None]
        if len(settled) >= 2:
            variances.append(float(np.var(settled, ddof=1)))
    if not variances:
        return None
    return {"mean": sum(variances) / len(variances), "tasks": len(variances)}
