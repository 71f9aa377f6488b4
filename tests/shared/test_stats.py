"""The statistics behind summaries and comparisons, checked against scipy's."""

import random

import numpy as np
import pytest
from scipy import stats as reference

from benchwright_shared.scoring import Settled, summarize
from benchwright_shared.stats import bootstrap_mean, mcnemar_exact, wilson, within_task_variance


@pytest.mark.parametrize(("k", "n"), [(0, 10), (10, 10), (7, 10), (164, 200), (1, 3), (500, 10000)])
def test_wilson_matches_scipy(k: int, n: int) -> None:
    low, high = wilson(k, n) or (None, None)
    want = reference.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert low == pytest.approx(want.low, abs=1e-12)
    assert high == pytest.approx(want.high, abs=1e-12)


def test_wilson_has_nothing_to_say_without_trials() -> None:
    assert wilson(0, 0) is None


@pytest.mark.parametrize(
    ("regressed", "fixed"), [(12, 3), (3, 12), (0, 0), (5, 5), (0, 9), (40, 61)]
)
def test_mcnemar_exact_matches_a_two_sided_binomial_test(regressed: int, fixed: int) -> None:
    n = regressed + fixed
    want = reference.binomtest(regressed, n, 0.5).pvalue if n else 1.0
    assert mcnemar_exact(regressed, fixed) == pytest.approx(want, rel=1e-9)


def test_bootstrap_agrees_with_scipys_percentile_bootstrap() -> None:
    rng = random.Random(7)
    values = [float(rng.random() < 0.7) for _ in range(400)]
    found = bootstrap_mean(values)
    assert found is not None and found["method"] == "bootstrap" and found["clusters"] is None
    want = reference.bootstrap(
        (np.array(values),), np.mean, method="percentile", n_resamples=20000, random_state=1
    ).confidence_interval
    assert found["estimate"] == pytest.approx(sum(values) / len(values))
    assert found["low"] == pytest.approx(want.low, abs=0.01)
    assert found["high"] == pytest.approx(want.high, abs=0.01)


def test_bootstrap_of_continuous_scores() -> None:
    rng = random.Random(3)
    values = [rng.random() for _ in range(300)]
    found = bootstrap_mean(values)
    want = reference.bootstrap(
        (np.array(values),), np.mean, method="percentile", n_resamples=20000, random_state=1
    ).confidence_interval
    assert found is not None
    assert found["low"] == pytest.approx(want.low, abs=0.01)
    assert found["high"] == pytest.approx(want.high, abs=0.01)


def test_the_same_rows_give_the_same_interval_every_time() -> None:
    values = [1.0, 0.0, 1.0, 1.0, 0.5] * 20
    assert bootstrap_mean(values) == bootstrap_mean(list(values))


def test_groups_that_move_together_widen_the_interval() -> None:
    """Ten subjects of 50 questions, each subject all right or all wrong: 500 rows but
    really ten draws. Resampling rows would claim far more certainty than there is."""
    groups = [f"subject-{g}" for g in range(10) for _ in range(50)]
    values = [1.0 if int(g.split("-")[1]) % 2 else 0.0 for g in groups]
    by_row = bootstrap_mean(values)
    by_group = bootstrap_mean(values, groups)
    assert by_row is not None and by_group is not None
    assert by_group["method"] == "cluster bootstrap" and by_group["clusters"] == 10
    assert by_group["estimate"] == by_row["estimate"] == 0.5
    assert by_group["high"] - by_group["low"] > 3 * (by_row["high"] - by_row["low"])
    # One named group is no clustering at all: rows are resampled.
    assert bootstrap_mean(values, ["only"] * len(values)) == by_row


def test_within_task_variance() -> None:
    found = within_task_variance([(1.0, 0.0, 1.0), (0.0, 0.0, None), (1.0,), ()])
    assert found == {
        "mean": pytest.approx((np.var([1, 0, 1], ddof=1) + 0.0) / 2),
        "tasks": 2,
    }
    assert within_task_variance([(1.0,), ()]) is None


def test_a_summary_does_not_depend_on_the_order_rows_arrive_in() -> None:
    """The orchestrator sums in arrival order, the gateway in its table's: the same."""
    rows = [
        Settled(
            "pass" if i % 3 else "fail",
            10 + i,
            score=float(i % 3 > 0),
            group=f"g{i % 4}",
            task_index=i,
        )
        for i in range(60)
    ] + [Settled("err", 5, infra=True, task_index=60)]
    shuffled = rows[:]
    random.Random(1).shuffle(shuffled)
    summary = summarize(rows)
    assert summarize(shuffled) == summary
    assert summary["errored"] == summary["infra_errored"] == 1
    assert summary["pass_rate"] == 40 / 60 and summary["mean_score"] == 40 / 60
    assert summary["intervals"]["pass_rate"]["method"] == "wilson"
    assert summary["intervals"]["mean_score"]["clusters"] == 4
    assert summary["intervals"]["level"] == 0.95


def test_a_summary_of_bare_outcomes_still_reads() -> None:
    summary = summarize([("pass", 10), ("fail", 20), ("err", 5, True)])
    assert summary["pass_rate"] == 0.5 and summary["mean_score"] is None
    assert summary["intervals"]["mean_score"] is None
    assert summary["intervals"]["pass_rate"] is not None
