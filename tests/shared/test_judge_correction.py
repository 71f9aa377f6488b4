"""The prediction-powered correction of a judged run's pass rate and mean score."""

import numpy as np
import pytest

from benchwright_shared.judge_correction import (
    PREDICTION_POWERED,
    corrected_mean_score,
    corrected_pass_rate,
)
from benchwright_shared.scoring import Settled, summarize
from benchwright_shared.stats import wilson

pytestmark = pytest.mark.filterwarnings("error")


def test_a_hand_computed_pass_rate() -> None:
    # The judge passes 8 of 10 tasks; people label 7 of them.
    judge = {t: t < 8 for t in range(10)}
    people = {0: True, 1: False, 2: True, 3: True, 4: False, 8: False, 9: True}
    found = corrected_pass_rate(judge, people)
    assert found is not None and found.corrected and found.method == PREDICTION_POWERED
    assert (found.tasks, found.labelled, found.disagreements) == (10, 7, 3)
    # people - judge on the labelled: 0, -1, 0, 0, -1, 0, +1: mean -1/7, sample variance
    # (4/49 + 2 * 36/49 + 64/49) / 6 = 10/21, so the rectifier's half-width is
    # 1.959964 * sqrt(10/21 / 7) = 0.511198.
    assert found.rectifier == pytest.approx(-1 / 7)
    assert found.rectifier_low == pytest.approx(-1 / 7 - 0.511198, abs=1e-6)
    assert found.rectifier_high == pytest.approx(-1 / 7 + 0.511198, abs=1e-6)
    assert found.estimate == pytest.approx(0.8 - 1 / 7)
    # Wilson 8/10: [0.490162, 0.943318]. Judge's variance over the 10: 0.8 * 0.2 * 10/9;
    # cov(judge, people - judge) on the labelled: -9/7 / 6 = -3/14; so
    # r = -3/14 / (0.421637 * 0.690066) * sqrt(7/10) = -0.616189, and
    # below = sqrt(0.309838^2 + 0.511198^2 + 2r * 0.309838 * 0.511198) = 0.402652;
    # above reaches past 1 (0.657143 + 0.437691) and is kept at 1.
    assert (found.plain_low, found.plain_high) == pytest.approx((0.490162, 0.943318), abs=1e-6)
    assert found.low == pytest.approx(0.8 - 1 / 7 - 0.402652, abs=1e-5)
    assert found.high == 1.0


def test_no_labels_leave_the_plain_interval_and_say_so() -> None:
    judge = {t: t % 3 != 0 for t in range(30)}
    found = corrected_pass_rate(judge, {})
    assert found is not None and not found.corrected and found.method == "wilson"
    assert found.reason is not None and "no labelled task" in found.reason
    assert (found.low, found.high) == wilson(20, 30)
    assert found.estimate == found.judge_estimate == 20 / 30
    one = corrected_pass_rate(judge, {0: True})
    assert one is not None and not one.corrected and one.reason is not None
    assert one.reason.startswith("one labelled task")


def test_labels_that_all_agree_leave_the_interval_as_it_was() -> None:
    judge = {t: t % 4 != 0 for t in range(200)}
    people = {t: judge[t] for t in range(0, 200, 5)}
    found = corrected_pass_rate(judge, people)
    assert found is not None and found.corrected and found.disagreements == 0
    assert found.estimate == found.judge_estimate
    assert (found.low, found.high) == pytest.approx((found.plain_low, found.plain_high))


def test_every_task_labelled_gives_peoples_own_pass_rate() -> None:
    rng = np.random.default_rng(3)
    truth = rng.random(400) < 0.6
    guess = np.where(truth, rng.random(400) > 0.1, rng.random(400) < 0.3)
    judge = dict(enumerate(guess.tolist()))
    people = dict(enumerate(truth.tolist()))
    found = corrected_pass_rate(judge, people)
    assert found is not None
    assert found.estimate == pytest.approx(truth.mean())
    # Then the interval is the Wald one for people's grades (Wilson's, near it).
    half = 1.959964 * truth.std(ddof=1) / np.sqrt(400)
    assert (found.high - found.low) / 2 == pytest.approx(half, rel=0.02)


def test_labels_for_ungraded_tasks_are_left_out_and_counted() -> None:
    judge: dict[str, bool | None] = {"a": True, "b": True, "c": None, "d": False}
    people: dict[str, bool | None] = {"a": True, "b": False, "c": False, "z": True, "y": None}
    found = corrected_pass_rate(judge, people)
    assert found is not None
    assert (found.tasks, found.labelled, found.labels_without_grade) == (3, 2, 2)
    assert found.judge_estimate == pytest.approx(2 / 3)
    assert corrected_pass_rate({"a": None}, people) is None


def test_the_estimate_stays_within_the_scale() -> None:
    judge = {t: t != 0 for t in range(100)}
    people = {0: True, 1: True, 2: True, 3: True}
    found = corrected_pass_rate(judge, people)
    assert found is not None and found.rectifier == pytest.approx(0.25)
    assert found.estimate == 1.0 and found.high == 1.0 and found.low < 1.0


def test_the_interval_covers_as_often_as_it_says() -> None:
    """A lenient judge (passes 20% of what people fail, fails 5% of what they pass)
    over 400 tasks, 80 labelled at random: the corrected interval covers people's
    pass rate about 95% of the time; the judge's own interval far less often."""
    rng = np.random.default_rng(20261206)
    truth_rate, runs, tasks, labels = 0.7, 600, 400, 80
    covered = plain_covered = 0
    for _ in range(runs):
        truth = rng.random(tasks) < truth_rate
        guess = np.where(truth, rng.random(tasks) >= 0.05, rng.random(tasks) < 0.2)
        chosen = rng.choice(tasks, labels, replace=False)
        found = corrected_pass_rate(
            dict(enumerate(guess.tolist())), {int(t): bool(truth[t]) for t in chosen}
        )
        assert found is not None
        covered += found.low <= truth_rate <= found.high
        plain_covered += found.plain_low <= truth_rate <= found.plain_high
    assert 0.925 <= covered / runs <= 0.975
    assert plain_covered / runs < 0.88


def test_a_mean_score_starts_from_the_summarys_own_interval() -> None:
    rng = np.random.default_rng(11)
    truth = rng.random(300)
    guess = np.clip(truth + 0.1 + rng.normal(0, 0.1, 300), 0, 1)
    groups = {t: f"subject-{t % 6}" for t in range(300)}
    rows = [
        Settled("pass" if s >= 1 else "fail", 0, score=s, group=groups[t], task_index=t)
        for t, s in enumerate(guess.tolist())
    ]
    summary = summarize(rows)["intervals"]["mean_score"]
    judge = dict(enumerate(guess.tolist()))
    bare = corrected_mean_score(judge, {}, groups=groups)
    assert bare is not None and not bare.corrected
    assert bare.plain_method == summary["method"] == "cluster bootstrap"
    assert (bare.low, bare.high) == (summary["low"], summary["high"])

    labelled = {int(t): float(truth[t]) for t in rng.choice(300, 60, replace=False)}
    found = corrected_mean_score(judge, labelled, groups=groups)
    assert found is not None and found.corrected
    offsets = [labelled[t] - judge[t] for t in labelled]
    assert found.rectifier == pytest.approx(np.mean(offsets))
    assert found.estimate == pytest.approx(guess.mean() + np.mean(offsets))
    # The judge scores about 0.1 too high: the interval moves down and widens.
    assert found.high < found.plain_low
    assert found.high - found.low > found.plain_high - found.plain_low
    assert found.low <= truth.mean() <= found.high


def test_results_serialize_without_nan() -> None:
    found = corrected_mean_score({1: 0.5, 2: 0.75}, {1: 0.5, 2: 0.25})
    assert found is not None and "NaN" not in found.model_dump_json()
    assert corrected_mean_score({}, {1: 1.0}) is None
