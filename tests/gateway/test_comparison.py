"""Paired comparison of two runs, on runs whose differences are constructed."""

import pytest
from scipy import stats as reference

from benchwright_gateway.comparison import TaskResult, compare, differences, run_parts


def results(wrong: set[int], n: int, *, errored: frozenset[int] = frozenset()) -> list[TaskResult]:
    return [
        TaskResult(
            task_id=f"t{i}",
            index=i,
            outcome="err" if i in errored else ("fail" if i in wrong else "pass"),
            score=None if i in errored else (0.0 if i in wrong else 1.0),
            group=f"g{i % 4}",
        )
        for i in range(n)
    ]


def test_twelve_regressions_against_three_fixes_is_worse() -> None:
    a = results({0, 1, 2, 3}, 100)  # A misses 0-3
    b = results({0} | set(range(10, 22)), 100)  # B fixes 1-3, misses 10-21
    found = compare(a, b, labels=("run-a", "run-b"))
    assert found["flips"] == {
        "fixed": 3,
        "regressed": 12,
        "unchanged_pass": 84,
        "unchanged_fail": 1,
    }
    want = reference.binomtest(12, 15, 0.5).pvalue
    assert found["mcnemar"]["p_value"] == pytest.approx(want)
    assert found["verdict"]["outcome"] == "worse" and found["verdict"]["significant"]
    assert found["verdict"]["text"].startswith(
        f"run-b is worse than run-a: 12 regressions vs 3 fixes, p = {want:.2g}"
    )
    assert found["pass_rate"] == {"a": 0.96, "b": 0.87, "difference": pytest.approx(-0.09)}
    mean = found["mean_score"]
    assert mean["difference"] == pytest.approx(-0.09)
    assert mean["interval"]["high"] < 0  # the whole interval lies below zero
    assert mean["interval"]["clusters"] == 4
    changed = {c["task_id"]: c["change"] for c in found["changes"]}
    assert changed == {f"t{i}": "fixed" for i in (1, 2, 3)} | {
        f"t{i}": "regressed" for i in range(10, 22)
    }


def test_a_few_flips_either_way_are_no_significant_difference() -> None:
    found = compare(results({1, 2, 3}, 50), results({4, 5}, 50))
    assert (found["flips"]["fixed"], found["flips"]["regressed"]) == (3, 2)
    assert found["verdict"]["outcome"] == "no_significant_difference"
    assert found["verdict"]["text"].startswith(
        "No significant difference between B and A on 50 shared tasks: 2 regressions vs 3 fixes"
    )


def test_better_when_the_fixes_dominate() -> None:
    found = compare(results(set(range(20)), 60), results(set(), 60))
    assert found["verdict"]["outcome"] == "better"
    assert found["mcnemar"]["p_value"] == pytest.approx(reference.binomtest(0, 20).pvalue)


def test_partial_credit_moves_the_mean_where_nothing_flips() -> None:
    a = [TaskResult(f"t{i}", i, "fail", 0.5) for i in range(40)]
    b = [TaskResult(f"t{i}", i, "fail", 0.75) for i in range(40)]
    found = compare(a, b)
    assert found["flips"]["fixed"] == found["flips"]["regressed"] == 0
    assert found["mean_score"]["difference"] == pytest.approx(0.25)
    assert found["verdict"]["outcome"] == "better"
    assert {c["change"] for c in found["changes"]} == {"score_up"}


def test_tasks_only_one_run_has_and_errors_are_reported_not_dropped() -> None:
    a = results(set(), 10)
    b = results(set(), 12, errored=frozenset({2, 3}))[2:]  # no t0, t1; adds t10, t11
    found = compare(a, b)
    tasks = found["tasks"]
    assert (tasks["common"], tasks["judged"]) == (8, 6)
    assert (tasks["only_in_a"], tasks["only_in_b"]) == (2, 2)
    assert tasks["only_in_a_ids"] == ["t0", "t1"] and tasks["only_in_b_ids"] == ["t10", "t11"]
    assert found["errored"] == {"a_only": 0, "b_only": 2, "both": 0}
    assert "B errored on 2 task(s) A scored." in found["verdict"]["text"]
    assert {c["task_id"]: c["change"] for c in found["changes"]} == {
        "t2": "newly_errored",
        "t3": "newly_errored",
    }


def test_nothing_in_common_says_so() -> None:
    found = compare(results(set(), 3), [TaskResult("other", 0, "pass", 1.0)])
    assert found["verdict"]["outcome"] == "no_common_tasks"
    assert not found["verdict"]["significant"]
    assert found["pass_rate"]["difference"] is None


def test_a_repeated_task_id_pairs_occurrence_by_occurrence() -> None:
    a = [TaskResult("same", 0, "pass", 1.0), TaskResult("same", 1, "fail", 0.0)]
    b = [TaskResult("same", 0, "pass", 1.0), TaskResult("same", 1, "pass", 1.0)]
    found = compare(a, b)
    assert found["flips"]["fixed"] == 1
    assert found["changes"][0]["task_id"] == "same#2"


def test_what_differs_between_two_runs() -> None:
    run_a = {
        "benchmark": {"id": "bm_1"},
        "subset": {"id": "sub_1"},
        "impl_id": "impl_1",
        "model": {"model": "m-1", "provider": "openai"},
        "fingerprint": "f1",
    }
    run_b = {**run_a, "model": {"model": "m-2", "provider": "openai"}, "fingerprint": "f2"}
    entries = [
        ("PhaseFingerprint", {"phase": "fetch", "fingerprint": "x"}),
        ("DatasetTasksArtifact", {"content_sha256": "abc"}),
        ("ModelProxyArtifact", {"litellm_config_yaml": "temperature: 0\n"}),
    ]
    hotter = [*entries[:2], ("ModelProxyArtifact", {"litellm_config_yaml": "temperature: 1\n"})]
    found = differences(run_parts(run_a, entries), run_parts(run_b, hotter))
    assert [d["part"] for d in found] == ["fingerprint", "model.model", "model_config_sha256"]
    assert found[1] == {"part": "model.model", "a": "m-1", "b": "m-2"}
