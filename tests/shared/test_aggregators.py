"""Trials reduce to one row score by a named aggregator (concepts, section 7)."""

import pytest

from benchwright_shared.scoring import AggregatorError, aggregate, validate_aggregator

FIVE = [(0.0, {}), (0.0, {}), (1.0, {}), (0.0, {}), (1.0, {})]


def test_the_concepts_example_any_pass_passes_and_all_pass_fails() -> None:
    assert aggregate({"name": "any_pass"}, FIVE) == (1.0, "pass")
    assert aggregate({"name": "all_pass"}, FIVE) == (0.0, "fail")
    assert aggregate({"name": "mean"}, FIVE) == (pytest.approx(0.4), "fail")


def test_errored_trials() -> None:
    assert aggregate({"name": "any_pass"}, [(None, {}), (None, {})]) == (None, "err")
    assert aggregate({"name": "any_pass"}, [(None, {}), (1.0, {})]) == (1.0, "pass")
    assert aggregate({"name": "all_pass"}, [(None, {}), (1.0, {})]) == (0.0, "fail")


def test_majority_on_takes_the_modal_answers_score() -> None:
    trials = [(0.0, {"parsed": "7"}), (1.0, {"parsed": "8"}), (0.0, {"parsed": "7"})]
    assert aggregate({"name": "majority_on", "field": "parsed"}, trials) == (0.0, "fail")
    trials.append((1.0, {"parsed": "8"}))
    trials.append((1.0, {"parsed": "8"}))
    assert aggregate({"name": "majority_on", "field": "parsed"}, trials) == (1.0, "pass")


def test_weighted_mean_and_min_above_read_score_meta() -> None:
    trials = [(1.0, {"w": 3, "conf": 0.9}), (0.0, {"w": 1, "conf": 0.2})]
    assert aggregate({"name": "weighted_mean", "weight": "w"}, trials) == (0.75, "fail")
    spec = {"name": "min_above", "field": "conf", "threshold": 0.5}
    assert aggregate(spec, trials) == (1.0, "pass")
    assert aggregate({**spec, "threshold": 0.95}, trials) == (0.0, "fail")


@pytest.mark.parametrize(
    "spec", [{"name": "best_of"}, {"name": "majority_on"}, {"name": "min_above", "field": "c"}]
)
def test_unknown_aggregators_and_missing_parameters_are_refused(spec: dict[str, object]) -> None:
    with pytest.raises(AggregatorError):
        validate_aggregator(spec)
