"""A judge's agreement with people, and a panel's, checked against scikit-learn,
statsmodels and the krippendorff package."""

import json
import random

import krippendorff
import numpy as np
import pytest
from scipy import stats as scipy_stats
from sklearn.metrics import accuracy_score, cohen_kappa_score, confusion_matrix
from statsmodels.stats import inter_rater

from benchwright_shared.judge_agreement import (
    CORRECT_PARTIAL_INCORRECT,
    NO_PAIRS,
    ONE_CATEGORY,
    PASS_FAIL,
    Grade,
    Scale,
    judge_agreement,
    panel_agreement,
)

pytestmark = pytest.mark.filterwarnings("error")

SCALES: dict[str, tuple[Scale, tuple[Grade, ...]]] = {
    "nominal": (Scale(), ("bug", "feature", "question", "docs")),
    "correct-partial-incorrect": (CORRECT_PARTIAL_INCORRECT, ("I", "P", "C")),
    "pass-fail": (PASS_FAIL, (0.0, 1.0)),
    "one-to-five": (Scale(ordered=True), (1.0, 2.0, 3.0, 4.0, 5.0)),
}


def graded(
    categories: tuple[Grade, ...], tasks: int, fidelity: float, seed: int
) -> tuple[dict[int, Grade], dict[int, Grade]]:
    """People's labels and a judge that copies each with probability ``fidelity`` and
    otherwise guesses (a lenient nudge upward on ordered scales)."""
    rng = random.Random(seed)
    people = {t: rng.choice(categories) for t in range(tasks)}
    judge: dict[int, Grade] = {}
    for task, label in people.items():
        if rng.random() < fidelity:
            judge[task] = label
        else:
            index = categories.index(label) + rng.choice((-1, 1, 1))
            judge[task] = categories[min(max(index, 0), len(categories) - 1)]
    return judge, people


@pytest.mark.parametrize("name", sorted(SCALES))
@pytest.mark.parametrize(("tasks", "fidelity", "seed"), [(40, 0.7, 1), (150, 0.5, 2), (25, 0.9, 3)])
def test_figures_match_scikit_learn_and_statsmodels(
    name: str, tasks: int, fidelity: float, seed: int
) -> None:
    scale, categories = SCALES[name]
    judge, people = graded(categories, tasks, fidelity, seed)
    found = judge_agreement(judge, people, scale)
    truth = [people[t] for t in people]
    guess = [judge[t] for t in people]
    labels = list(scale.categories or sorted(categories))  # type: ignore[type-var]
    assert list(found.categories) == labels
    assert found.compared == tasks and found.labels_without_grade == 0
    assert found.raw_agreement == pytest.approx(accuracy_score(truth, guess))
    matrix = confusion_matrix(truth, guess, labels=labels)
    assert np.array_equal(np.array(found.confusion), matrix)
    assert found.kappa.value == pytest.approx(cohen_kappa_score(truth, guess, labels=labels))
    reference = inter_rater.cohens_kappa(matrix)
    assert found.kappa.standard_error == pytest.approx(reference.std_kappa, rel=1e-9)
    if not scale.ordered:
        assert found.weighted_kappa is None and found.lean is None
        return
    assert found.weighted_kappa is not None
    assert found.weighted_kappa.weighting == "quadratic"
    want = cohen_kappa_score(truth, guess, labels=labels, weights="quadratic")
    assert found.weighted_kappa.value == pytest.approx(want)
    weighted = inter_rater.cohens_kappa(matrix, wt="quadratic")
    assert found.weighted_kappa.standard_error == pytest.approx(weighted.std_kappa, rel=1e-9)
    linear = judge_agreement(judge, people, scale, weighting="linear").weighted_kappa
    assert linear is not None
    assert linear.value == pytest.approx(
        cohen_kappa_score(truth, guess, labels=labels, weights="linear")
    )
    assert linear.standard_error == pytest.approx(
        inter_rater.cohens_kappa(matrix, wt="linear").std_kappa, rel=1e-9
    )


def test_the_interval_is_a_seeded_bootstrap_close_to_scipys() -> None:
    judge, people = graded(("I", "P", "C"), 120, 0.7, 4)
    found = judge_agreement(judge, people, CORRECT_PARTIAL_INCORRECT).kappa
    again = judge_agreement(dict(reversed(judge.items())), people, CORRECT_PARTIAL_INCORRECT)
    assert again.kappa == found
    assert found.value is not None and found.low is not None and found.high is not None
    assert found.low < found.value < found.high and found.resamples == 2000
    position = {c: i for i, c in enumerate(CORRECT_PARTIAL_INCORRECT.categories)}
    truth = np.array([position[people[t]] for t in people])
    guess = np.array([position[judge[t]] for t in people])
    assert cohen_kappa_score(truth, guess) == pytest.approx(found.value)
    want = scipy_stats.bootstrap(
        (truth, guess),
        unweighted_kappa,
        paired=True,
        vectorized=True,
        method="percentile",
        n_resamples=10000,
        random_state=1,
    ).confidence_interval
    assert found.low == pytest.approx(want.low, abs=0.015)
    assert found.high == pytest.approx(want.high, abs=0.015)


def unweighted_kappa(truth: np.ndarray, guess: np.ndarray, axis: int = -1) -> np.ndarray:
    """Cohen's kappa of each resample (along ``axis``), written out for scipy's bootstrap."""
    truth, guess = np.moveaxis(truth, axis, -1), np.moveaxis(guess, axis, -1)
    agree = (truth == guess).mean(axis=-1)
    chance = sum((truth == c).mean(axis=-1) * (guess == c).mean(axis=-1) for c in range(3))
    return np.asarray((agree - chance) / (1 - chance))


def test_with_many_tasks_the_bootstrap_meets_the_asymptotic_interval() -> None:
    judge, people = graded((1.0, 2.0, 3.0, 4.0, 5.0), 3000, 0.6, 5)
    found = judge_agreement(judge, people, Scale(ordered=True)).kappa
    assert found.value is not None and found.standard_error is not None
    assert found.low == pytest.approx(found.value - 1.96 * found.standard_error, abs=0.005)
    assert found.high == pytest.approx(found.value + 1.96 * found.standard_error, abs=0.005)


def test_which_way_a_pass_fail_judge_errs() -> None:
    people = {t: 0.0 if t < 10 else 1.0 for t in range(20)}
    # Passes five tasks people failed, fails one they passed.
    judge = {t: (1.0 if t < 5 or t >= 11 else 0.0) if t != 10 else 0.0 for t in range(20)}
    judge[10] = 0.0
    found = judge_agreement(judge, people, PASS_FAIL)
    assert found.confusion == ((5, 5), (1, 9))
    lean = found.lean
    assert lean is not None
    assert (lean.lenient, lean.strict, lean.leaning) == (5, 1, "lenient")
    assert lean.lenient_rate == 5 / 20 and lean.strict_rate == 1 / 20
    assert lean.mean_offset == pytest.approx((5 - 1) / 20)
    assert lean.p_value == pytest.approx(scipy_stats.binomtest(1, 6, 0.5).pvalue)


def test_a_strict_grader_on_three_grades() -> None:
    people = {0: "C", 1: "C", 2: "P", 3: "I", 4: "C"}
    judge = {0: "I", 1: "P", 2: "P", 3: "I", 4: "C"}
    lean = judge_agreement(judge, people, CORRECT_PARTIAL_INCORRECT).lean
    assert lean is not None
    assert (lean.lenient, lean.strict, lean.leaning) == (0, 2, "strict")
    assert lean.mean_offset == pytest.approx(-3 / 5)


def test_no_labels_give_no_figures_and_say_why() -> None:
    found = judge_agreement({1: "C", 2: "I"}, {}, CORRECT_PARTIAL_INCORRECT)
    assert found.compared == 0 and found.raw_agreement is None and found.lean is None
    assert found.kappa.value is None and found.kappa.reason == NO_PAIRS
    assert found.weighted_kappa is not None and found.weighted_kappa.reason == NO_PAIRS
    assert found.confusion == ((0, 0, 0), (0, 0, 0), (0, 0, 0))


def test_one_category_only_leaves_kappa_undefined() -> None:
    every = {t: "C" for t in range(8)}
    found = judge_agreement(every, dict(every), CORRECT_PARTIAL_INCORRECT)
    assert found.raw_agreement == 1.0
    assert found.kappa.value is None and found.kappa.reason == ONE_CATEGORY
    assert found.kappa.low is None and found.kappa.standard_error is None
    # One side constant and the other not: defined, and zero as scikit-learn says.
    judge = dict(every) | {0: "P", 1: "I"}
    mixed = judge_agreement(judge, every, CORRECT_PARTIAL_INCORRECT).kappa
    truth, guess = list(every.values()), [judge[t] for t in every]
    assert mixed.value == pytest.approx(cohen_kappa_score(truth, guess, labels=["I", "P", "C"]))


def test_labels_on_tasks_the_judge_did_not_grade_are_left_out_and_counted() -> None:
    judge: dict[str, Grade | None] = {"a": "C", "b": "I", "c": None, "d": "C"}
    people: dict[str, Grade | None] = {"a": "C", "b": "C", "c": "P", "e": "I", "f": None}
    found = judge_agreement(judge, people, CORRECT_PARTIAL_INCORRECT)
    assert found.compared == 2 and found.labels_without_grade == 2
    assert found.confusion == ((0, 0, 0), (0, 0, 0), (1, 0, 1))


def test_bad_grades_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"outside the scale.*'X'"):
        judge_agreement({1: "X"}, {1: "C"}, CORRECT_PARTIAL_INCORRECT)
    with pytest.raises(ValueError, match="mix text and numbers"):
        judge_agreement({1: "pass"}, {1: 1.0}, Scale())
    with pytest.raises(ValueError, match="must list its categories"):
        judge_agreement({1: "good"}, {1: "bad"}, Scale(ordered=True))


def test_figures_serialize_to_plain_json() -> None:
    judge, people = graded(("I", "P", "C"), 30, 0.7, 6)
    found = judge_agreement(judge, people, CORRECT_PARTIAL_INCORRECT)
    text = found.model_dump_json()
    assert "NaN" not in text
    assert type(found).model_validate(json.loads(text)) == found


def panel(
    categories: tuple[Grade, ...], seed: int
) -> tuple[dict[str, dict[int, Grade]], dict[int, Grade]]:
    """Three judges over 60 tasks, each skipping some; people label the first 40."""
    rng = random.Random(seed)
    first, people = graded(categories, 60, 0.8, seed)
    second, _ = graded(categories, 60, 0.6, seed + 100)
    third = {t: g for t, g in first.items() if rng.random() < 0.7}
    second = {t: g for t, g in second.items() if rng.random() < 0.85}
    labelled = {t: g for t, g in people.items() if t < 40}
    return {"gpt": first, "claude": second, "llama": third}, labelled


def reliability(
    judges: dict[str, dict[int, Grade]], categories: tuple[Grade, ...], numeric: bool
) -> np.ndarray:
    tasks = sorted({t for grades in judges.values() for t in grades})
    code = {c: (float(c) if numeric else float(i)) for i, c in enumerate(categories)}
    return np.array(
        [[code[g[t]] if t in g else np.nan for t in tasks] for g in judges.values()], dtype=float
    )


@pytest.mark.parametrize("name", ["nominal", "correct-partial-incorrect", "one-to-five"])
def test_a_panel_matches_statsmodels_and_krippendorff(name: str) -> None:
    scale, categories = SCALES[name]
    judges, people = panel(categories, 7)
    found = panel_agreement(judges, people, scale)
    order = tuple(scale.categories or sorted(categories))  # type: ignore[type-var]
    assert found.categories == order
    assert list(found.judges) == sorted(judges)
    for judge_name, grades in judges.items():
        alone = judge_agreement(grades, people, Scale(ordered=scale.ordered, categories=order))
        assert found.judges[judge_name] == alone

    everyone = sorted(set.intersection(*(set(g) for g in judges.values())))
    counts = np.array([[sum(g[t] == c for g in judges.values()) for c in order] for t in everyone])
    assert found.fleiss_kappa.tasks == len(everyone)
    assert found.fleiss_kappa.value == pytest.approx(inter_rater.fleiss_kappa(counts))

    numeric = name == "one-to-five"
    data = reliability(judges, order, numeric)
    domain = [float(c) for c in order] if numeric else list(range(len(order)))
    nominal = krippendorff.alpha(data, value_domain=domain, level_of_measurement="nominal")
    assert found.alpha_nominal.value == pytest.approx(nominal)
    if not scale.ordered:
        assert found.alpha_ordinal is None and found.alpha_interval is None
        return
    assert found.alpha_ordinal is not None
    ordinal = krippendorff.alpha(data, value_domain=domain, level_of_measurement="ordinal")
    assert found.alpha_ordinal.value == pytest.approx(ordinal)
    if numeric:
        assert found.alpha_interval is not None
        interval = krippendorff.alpha(data, value_domain=domain, level_of_measurement="interval")
        assert found.alpha_interval.value == pytest.approx(interval)
    else:
        assert found.alpha_interval is None


def test_a_single_judge_has_no_inter_judge_figures() -> None:
    judges, people = panel(("I", "P", "C"), 8)
    found = panel_agreement({"gpt": judges["gpt"]}, people, CORRECT_PARTIAL_INCORRECT)
    assert found.judges["gpt"].compared == 40
    for figure in (found.fleiss_kappa, found.alpha_nominal, found.alpha_ordinal):
        assert figure is not None and figure.value is None and figure.reason is not None


def test_judges_that_never_overlap_or_always_agree_on_one_grade() -> None:
    apart = panel_agreement({"a": {1: "C"}, "b": {2: "C"}}, {}, CORRECT_PARTIAL_INCORRECT)
    assert apart.fleiss_kappa.value is None and apart.fleiss_kappa.tasks == 0
    assert apart.alpha_nominal.value is None and apart.alpha_nominal.tasks == 0
    same = {t: "C" for t in range(5)}
    alike = panel_agreement({"a": same, "b": dict(same)}, {}, CORRECT_PARTIAL_INCORRECT)
    assert alike.fleiss_kappa.value is None and alike.fleiss_kappa.reason is not None
    assert alike.alpha_ordinal is not None and alike.alpha_ordinal.value is None
