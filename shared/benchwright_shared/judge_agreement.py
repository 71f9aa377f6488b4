"""How far an LLM judge agrees with people, and the judges of a panel with each other.

Pure functions over grades keyed by task, no I/O; every figure is checked in the tests
against scikit-learn, statsmodels and the ``krippendorff`` package (docs/judges.md,
"Calibration"). People's labels are one grade per task (their consensus): a label on
a task the judge did not grade is left out and counted, never an error.

* ``judge_agreement``: one judge against people over the tasks both graded: raw
  agreement, Cohen's kappa (1960), on an ordered scale also a weighted kappa (Cohen
  1968; linear or quadratic disagreement weights on the categories' positions, as
  scikit-learn's ``cohen_kappa_score``), the confusion matrix and, on an ordered scale,
  which way the judge errs.
* ``panel_agreement``: each judge of a panel against people, and the judges with each
  other: Fleiss' kappa (1971) over the tasks every judge graded, Krippendorff's alpha
  (2004) over every task two or more judges graded (missing grades allowed).

A kappa's interval is a percentile bootstrap over tasks, seeded like
``benchwright_shared.stats`` so the same grades always give the same interval. Kappa is
bounded by 1 and a good judge sits near it, where its sampling distribution is skewed
and a Wald interval (estimate +- z * SE) runs past 1; resampling tasks keeps the
interval inside the values kappa can take. The large-sample standard error of Fleiss,
Cohen & Everitt (1969) is reported beside it, for readers who want the textbook figure.
A figure that cannot be computed is None with a ``reason``.
"""

from collections.abc import Hashable, Iterable, Mapping, Sequence
from math import sqrt
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict

from benchwright_shared.stats import LEVEL, RESAMPLES, SEED, mcnemar_exact

Grade = str | float
Weighting = Literal["linear", "quadratic"]

NO_PAIRS = "no labelled task that the judge graded"
ONE_CATEGORY = (
    "people and the judge gave every task one and the same grade: chance agreement is total"
)


class Scale(BaseModel):
    """What the grades are: unordered categories, or ordered from worst to best.

    ``categories`` fixes the order of the confusion matrix and, on an ordered scale,
    the positions weighted kappa measures distance on. Left empty, the grades seen are
    used, sorted (numbers by value, text alphabetically); an ordered scale of text
    grades must list its categories.
    """

    model_config = ConfigDict(frozen=True)

    ordered: bool = False
    categories: tuple[Grade, ...] = ()


PASS_FAIL = Scale(ordered=True, categories=(0.0, 1.0))
CORRECT_PARTIAL_INCORRECT = Scale(ordered=True, categories=("I", "P", "C"))


class Kappa(BaseModel):
    """A kappa, its bootstrap interval, and its large-sample standard error."""

    model_config = ConfigDict(frozen=True)

    value: float | None = None
    low: float | None = None
    high: float | None = None
    level: float = LEVEL
    # Fleiss, Cohen & Everitt (1969), the same figure as statsmodels' ``std_kappa``.
    standard_error: float | None = None
    # Resamples whose kappa was defined (one that drew a single category is dropped).
    resamples: int = 0
    weighting: Weighting | None = None
    reason: str | None = None


class JudgeLean(BaseModel):
    """Which way a judge errs on an ordered scale: above people (lenient) or below."""

    model_config = ConfigDict(frozen=True)

    lenient: int
    strict: int
    lenient_rate: float
    strict_rate: float
    # Mean of (judge's position - people's position), in categories.
    mean_offset: float
    leaning: Literal["lenient", "strict", "even"]
    # Exact two-sided sign test on the disagreements: how likely a split at least this
    # uneven is if the judge erred either way equally often.
    p_value: float


class JudgeAgreement(BaseModel):
    """One judge against people over the labelled tasks it graded."""

    model_config = ConfigDict(frozen=True)

    compared: int
    # People's labels on tasks this judge did not grade: left out of every figure.
    labels_without_grade: int
    categories: tuple[Grade, ...]
    raw_agreement: float | None
    kappa: Kappa
    weighted_kappa: Kappa | None
    # Rows: people's grade; columns: the judge's; both in ``categories`` order.
    confusion: tuple[tuple[int, ...], ...]
    lean: JudgeLean | None


class Coefficient(BaseModel):
    """An inter-rater coefficient over ``tasks`` tasks, or None with a reason."""

    model_config = ConfigDict(frozen=True)

    value: float | None
    tasks: int
    reason: str | None = None


class PanelAgreement(BaseModel):
    """A panel: each judge against people, and the judges with each other."""

    model_config = ConfigDict(frozen=True)

    categories: tuple[Grade, ...]
    judges: dict[str, JudgeAgreement]
    fleiss_kappa: Coefficient
    alpha_nominal: Coefficient
    # On an ordered scale only; interval also needs numeric grades.
    alpha_ordinal: Coefficient | None
    alpha_interval: Coefficient | None


def judge_agreement[TaskKey: Hashable](
    judge: Mapping[TaskKey, Grade | None],
    people: Mapping[TaskKey, Grade | None],
    scale: Scale,
    *,
    weighting: Weighting = "quadratic",
    level: float = LEVEL,
    resamples: int = RESAMPLES,
) -> JudgeAgreement:
    """How far ``judge`` agrees with ``people`` over the tasks both graded.

    A None grade is no grade. Raises ValueError only for a grade outside the declared
    scale, or grades that mix text and numbers on an undeclared one.
    """
    categories = resolve_categories(scale, [*judge.values(), *people.values()])
    return _agreement(judge, people, scale, categories, weighting, level, resamples)


def panel_agreement[TaskKey: Hashable](
    judges: Mapping[str, Mapping[TaskKey, Grade | None]],
    people: Mapping[TaskKey, Grade | None],
    scale: Scale,
    *,
    weighting: Weighting = "quadratic",
    level: float = LEVEL,
    resamples: int = RESAMPLES,
) -> PanelAgreement:
    """Each judge against people, and the judges' agreement with each other over every
    task they graded (labelled or not). With one judge the inter-judge figures are None
    with a reason."""
    grades = [g for grading in judges.values() for g in grading.values()]
    categories = resolve_categories(scale, [*grades, *people.values()])
    each = {
        name: _agreement(grading, people, scale, categories, weighting, level, resamples)
        for name, grading in sorted(judges.items())
    }
    counts = _counts_per_task(list(judges.values()), categories)
    numeric = all(not isinstance(c, str) for c in categories)
    if len(judges) < 2:
        alone = "a panel needs two judges or more"
        none = Coefficient(value=None, tasks=0, reason=alone)
        return PanelAgreement(
            categories=categories,
            judges=each,
            fleiss_kappa=none,
            alpha_nominal=none,
            alpha_ordinal=none if scale.ordered else None,
            alpha_interval=none if scale.ordered and numeric else None,
        )
    values = np.array([float(c) for c in categories]) if numeric else None
    return PanelAgreement(
        categories=categories,
        judges=each,
        fleiss_kappa=fleiss_kappa(counts, len(judges)),
        alpha_nominal=krippendorff_alpha(counts, "nominal"),
        alpha_ordinal=krippendorff_alpha(counts, "ordinal") if scale.ordered else None,
        alpha_interval=(
            krippendorff_alpha(counts, "interval", values)
            if scale.ordered and values is not None
            else None
        ),
    )


def resolve_categories(scale: Scale, grades: Iterable[Grade | None]) -> tuple[Grade, ...]:
    """The scale's categories in their stable order (see ``Scale``)."""
    seen = {g for g in grades if g is not None}
    if scale.categories:
        unknown = seen - set(scale.categories)
        if unknown:
            shown = ", ".join(sorted(repr(g) for g in unknown))
            raise ValueError(f"grades outside the scale {list(scale.categories)!r}: {shown}")
        return scale.categories
    text = {isinstance(g, str) for g in seen}
    if len(text) > 1:
        raise ValueError("grades mix text and numbers: declare the scale's categories")
    if scale.ordered and text == {True}:
        raise ValueError("an ordered scale of text grades must list its categories, worst first")
    return tuple(sorted(seen, key=lambda g: (str(g), 0.0) if isinstance(g, str) else ("", g)))


def kappa_from_table(
    table: NDArray[np.int64],
    weighting: Weighting | None = None,
    *,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
) -> Kappa:
    """Cohen's kappa (weighted when ``weighting`` is given) of a confusion matrix, with a
    seeded percentile bootstrap interval over its tasks and the asymptotic SE.

    Resampling n tasks is drawing each cell's count from a multinomial over the cells'
    observed shares, so every resample is a whole table computed at once.
    """
    n = int(table.sum())
    if n == 0:
        return Kappa(weighting=weighting, level=level, reason=NO_PAIRS)
    weights = _disagreement_weights(table.shape[0], weighting)
    value = float(_kappas(table[np.newaxis].astype(float), weights)[0])
    if np.isnan(value):
        return Kappa(weighting=weighting, level=level, reason=ONE_CATEGORY)
    rng = np.random.default_rng(SEED)
    draws = rng.multinomial(n, table.ravel() / n, size=resamples).reshape(-1, *table.shape)
    kappas = _kappas(draws.astype(float), weights)
    defined = kappas[~np.isnan(kappas)]
    bounds = np.quantile(defined, [(1 - level) / 2, (1 + level) / 2]) if defined.size else None
    return Kappa(
        value=value,
        low=min(float(bounds[0]), value) if bounds is not None else None,
        high=max(float(bounds[1]), value) if bounds is not None else None,
        level=level,
        standard_error=_asymptotic_se(table.astype(float), weights, value),
        resamples=int(defined.size),
        weighting=weighting,
    )


def fleiss_kappa(counts: NDArray[np.int64], raters: int) -> Coefficient:
    """Fleiss' kappa (1971) over the tasks that all ``raters`` graded; ``counts`` holds,
    per task, how many raters gave each category."""
    full = counts[counts.sum(axis=1) == raters].astype(float)
    tasks = int(full.shape[0])
    if raters < 2 or tasks == 0:
        return Coefficient(value=None, tasks=tasks, reason="no task that every judge graded")
    per_task = ((full * full).sum(axis=1) - raters) / (raters * (raters - 1))
    shares = full.sum(axis=0) / (tasks * raters)
    chance = float((shares * shares).sum())
    if chance >= 1 - 1e-12:
        return Coefficient(value=None, tasks=tasks, reason="every grade was the same category")
    return Coefficient(value=(float(per_task.mean()) - chance) / (1 - chance), tasks=tasks)


def krippendorff_alpha(
    counts: NDArray[np.int64],
    metric: Literal["nominal", "ordinal", "interval"],
    values: NDArray[np.float64] | None = None,
) -> Coefficient:
    """Krippendorff's alpha (2004, ch. 11) from per-task category counts. A task with
    fewer than two grades cannot be paired and drops out, so missing grades are fine.

    alpha = 1 - (n - 1) * sum(o_ck * d_ck) / sum(n_c * n_k * d_ck), with o the
    coincidence matrix, n_c its margins and d the metric's squared distance
    (interval: between ``values``; ordinal: by the margins between two ranks).
    """
    pairable = counts[counts.sum(axis=1) >= 2].astype(float)
    tasks = int(pairable.shape[0])
    if tasks == 0:
        return Coefficient(value=None, tasks=0, reason="no task that two judges graded")
    per_task = pairable.sum(axis=1)
    outer = pairable[:, :, np.newaxis] * pairable[:, np.newaxis, :]
    own = np.einsum("uc,ck->uck", pairable, np.eye(pairable.shape[1]))
    coincidences = ((outer - own) / (per_task - 1)[:, np.newaxis, np.newaxis]).sum(axis=0)
    margins = coincidences.sum(axis=1)
    total = float(margins.sum())
    distance = _alpha_distance(metric, margins, values)
    expected = float((np.outer(margins, margins) * distance).sum())
    if expected <= 1e-12:
        return Coefficient(value=None, tasks=tasks, reason="every grade was the same category")
    observed = float((coincidences * distance).sum())
    return Coefficient(value=1 - (total - 1) * observed / expected, tasks=tasks)


def _agreement[TaskKey: Hashable](
    judge: Mapping[TaskKey, Grade | None],
    people: Mapping[TaskKey, Grade | None],
    scale: Scale,
    categories: tuple[Grade, ...],
    weighting: Weighting,
    level: float,
    resamples: int,
) -> JudgeAgreement:
    labelled = {k: g for k, g in people.items() if g is not None}
    pairs = [(g, judge[k]) for k, g in labelled.items() if judge.get(k) is not None]
    position = {c: i for i, c in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)), dtype=np.int64)
    for label, grade in pairs:
        assert grade is not None  # filtered above; mypy cannot see through the comprehension
        table[position[label], position[grade]] += 1
    n = len(pairs)
    return JudgeAgreement(
        compared=n,
        labels_without_grade=len(labelled) - n,
        categories=categories,
        raw_agreement=float(np.trace(table)) / n if n else None,
        kappa=kappa_from_table(table, level=level, resamples=resamples),
        weighted_kappa=(
            kappa_from_table(table, weighting, level=level, resamples=resamples)
            if scale.ordered
            else None
        ),
        confusion=tuple(tuple(int(c) for c in row) for row in table),
        lean=_lean(table) if scale.ordered and n else None,
    )


def _lean(table: NDArray[np.int64]) -> JudgeLean:
    """Cells above the diagonal: the judge graded higher than people (lenient)."""
    n = int(table.sum())
    lenient = int(np.triu(table, k=1).sum())
    strict = int(np.tril(table, k=-1).sum())
    rows, columns = np.indices(table.shape)
    offset = float(((columns - rows) * table).sum()) / n
    leaning: Literal["lenient", "strict", "even"] = (
        "lenient" if lenient > strict else "strict" if strict > lenient else "even"
    )
    return JudgeLean(
        lenient=lenient,
        strict=strict,
        lenient_rate=lenient / n,
        strict_rate=strict / n,
        mean_offset=offset,
        leaning=leaning,
        p_value=mcnemar_exact(lenient, strict),
    )


def _disagreement_weights(size: int, weighting: Weighting | None) -> NDArray[np.float64]:
    positions = np.arange(size, dtype=float)
    steps = np.abs(positions[:, np.newaxis] - positions[np.newaxis, :])
    if weighting is None:
        return (steps > 0).astype(float)
    return steps if weighting == "linear" else steps * steps


def _kappas(tables: NDArray[np.float64], weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """Kappa of each table in a stack, 1 - sum(w * observed) / sum(w * expected) with
    disagreement weights w; NaN where chance disagreement is nil (one shared category)."""
    shares = tables / tables.sum(axis=(1, 2), keepdims=True)
    expected = shares.sum(axis=2)[:, :, np.newaxis] * shares.sum(axis=1)[:, np.newaxis, :]
    observed_off = (weights * shares).sum(axis=(1, 2))
    expected_off = (weights * expected).sum(axis=(1, 2))
    defined = expected_off > 1e-12
    ratio = np.full(len(tables), np.nan)
    np.divide(observed_off, expected_off, out=ratio, where=defined)
    return np.asarray(1 - ratio, dtype=float)


def _asymptotic_se(
    table: NDArray[np.float64], disagreement: NDArray[np.float64], kappa: float
) -> float:
    """Fleiss, Cohen & Everitt (1969): the large-sample SE of a (weighted) kappa, with
    agreement weights a = 1 - w / max(w)."""
    n = float(table.sum())
    shares = table / n
    agreement = 1 - disagreement / disagreement.max()
    rows, columns = shares.sum(axis=1), shares.sum(axis=0)
    chance = float((agreement * np.outer(rows, columns)).sum())
    mean_row = agreement @ columns  # a-bar_i. = sum_j p_.j a_ij
    mean_column = rows @ agreement  # a-bar_.j = sum_i p_i. a_ij
    spread = agreement - (mean_row[:, np.newaxis] + mean_column[np.newaxis, :]) * (1 - kappa)
    variance = float((shares * spread * spread).sum()) - (kappa - chance * (1 - kappa)) ** 2
    return sqrt(max(variance, 0.0) / (n * (1 - chance) ** 2))


def _counts_per_task[TaskKey: Hashable](
    gradings: Sequence[Mapping[TaskKey, Grade | None]], categories: tuple[Grade, ...]
) -> NDArray[np.int64]:
    """Per task (any judge graded), how many judges gave each category."""
    position = {c: i for i, c in enumerate(categories)}
    row: dict[Hashable, int] = {}
    cells: list[tuple[int, int]] = []
    for grading in gradings:
        for task, grade in grading.items():
            if grade is not None:
                cells.append((row.setdefault(task, len(row)), position[grade]))
    counts = np.zeros((len(row), len(categories)), dtype=np.int64)
    for task_row, column in cells:
        counts[task_row, column] += 1
    return counts


def _alpha_distance(
    metric: Literal["nominal", "ordinal", "interval"],
    margins: NDArray[np.float64],
    values: NDArray[np.float64] | None,
) -> NDArray[np.float64]:
    size = len(margins)
    if metric == "nominal":
        return np.asarray(1 - np.eye(size), dtype=float)
    if metric == "interval":
        if values is None:
            raise ValueError("the interval metric needs numeric categories")
        return np.asarray((values[:, np.newaxis] - values[np.newaxis, :]) ** 2, dtype=float)
    # Ordinal: the margins from rank c to rank k inclusive, less half of each end's.
    ranks = np.arange(size)
    low = np.minimum(ranks[:, np.newaxis], ranks[np.newaxis, :])
    high = np.maximum(ranks[:, np.newaxis], ranks[np.newaxis, :])
    running = np.concatenate(([0.0], np.cumsum(margins)))
    between = running[high + 1] - running[low]
    spread = between - (margins[:, np.newaxis] + margins[np.newaxis, :]) / 2
    return np.asarray(spread * spread, dtype=float)
