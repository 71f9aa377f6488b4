"""Phase plans, selections and halts: the pipeline's rules, without I/O."""

import uuid

import pytest

from benchwright_orchestrator.domain import Run, RunError
from benchwright_orchestrator.plan import (
    PlanError,
    inherited_phases,
    is_resumable_halt,
    narrow_selection,
    plan_phases,
    replay_selection,
    resolve_backend,
    scope_selection,
    selected_indices,
)


def test_each_launch_mode_runs_its_phases_in_order() -> None:
    assert plan_phases("natural_language", has_impl=False) == [
        "find", "fetch", "analyze", "setup", "attach", "atomize", "materialize", "report",
    ]  # fmt: skip
    # A pin with a scorer skips authoring; Find is skipped whenever the benchmark is known.
    assert plan_phases("pinned", has_impl=True) == [
        "fetch", "setup", "attach", "materialize", "report",
    ]  # fmt: skip
    assert plan_phases("pinned", has_impl=False) == [
        "fetch", "analyze", "setup", "attach", "atomize", "materialize", "report",
    ]  # fmt: skip
    assert plan_phases("replay", has_impl=True) == ["attach", "materialize", "report"]
    assert plan_phases("fork", has_impl=True, from_phase="atomize") == [
        "fork", "atomize", "materialize", "report",
    ]  # fmt: skip
    with pytest.raises(PlanError):
        plan_phases("fork", has_impl=True, from_phase="report")
    # A harness bridge brings its own data and scorer: no Find, Fetch, Analyze, Atomize.
    assert plan_phases("natural_language", has_impl=False, harness="inspect") == [
        "setup", "attach", "materialize", "report",
    ]  # fmt: skip
    # An inspect_evals task is pinned to the catalog subset that feeds it: Fetch lays it.
    assert plan_phases("pinned", has_impl=False, harness="inspect") == [
        "fetch", "setup", "attach", "materialize", "report",
    ]  # fmt: skip
    # A pinned Harbor run's tasks travel in its harness (decision 0050): nothing to fetch.
    assert plan_phases("pinned", has_impl=False, harness="harbor") == [
        "setup", "attach", "materialize", "report",
    ]  # fmt: skip


def test_a_replay_on_a_newer_snapshot_fetches_and_sets_it_up_first() -> None:
    # The rolling subset grew since the parent ran: the current rows are fetched and
    # set up; the scorer still comes from the parent, so there is no Analyze or Atomize.
    assert plan_phases("replay", has_impl=False, new_snapshot=True) == [
        "fetch", "setup", "attach", "materialize", "report",
    ]  # fmt: skip
    assert plan_phases("replay", has_impl=True, new_snapshot=False) == [
        "attach", "materialize", "report",
    ]  # fmt: skip


def test_a_replay_selection_is_the_base_cut_to_the_slice_and_the_cap() -> None:
    everything = scope_selection({"kind": "all"})
    assert replay_selection(everything, 3, None, None) == everything
    # A fresh row of a grown snapshot is in range; the slice keeps its order.
    sliced = replay_selection(everything, 3, [2], None)
    assert selected_indices(sliced, 3) == [2] and sliced["reason"] == "replay slice"
    assert selected_indices(replay_selection(everything, 3, [2, 0, 7], 1), 3) == [2]
    assert selected_indices(replay_selection(everything, 5, None, 2), 5) == [0, 1]
    # On the parent's own selection, a slice never widens it.
    parent = {"kind": "first_n", "limit": 2}
    assert selected_indices(replay_selection(parent, 5, [1, 4], None), 5) == [1]


def test_a_fork_inherits_exactly_the_phases_before_its_rewind_point() -> None:
    assert inherited_phases("atomize") == ["fetch", "analyze", "setup", "attach"]
    assert inherited_phases("fetch") == []


def test_selections_and_scopes() -> None:
    assert selected_indices({"kind": "first_n", "limit": 3}, 10) == [0, 1, 2]
    assert selected_indices({"kind": "first_n", "limit": None}, 4) == [0, 1, 2, 3]
    assert selected_indices({"kind": "indices", "indices": [5, 1, 99]}, 10) == [5, 1]
    # "first 20" and a launch cap of 5: the narrowest wins.
    assert scope_selection({"kind": "first_n", "n": 20}, cap=5) == {"kind": "first_n", "limit": 5}
    per = scope_selection(
        {"kind": "per_category", "n": 1}, category_indices={"a": [0, 1], "b": [7, 9]}
    )
    assert per["indices"] == [0, 7]
    with pytest.raises(PlanError):
        scope_selection({"kind": "per_category", "n": 1}, category_indices={})
    sliced = narrow_selection({"kind": "first_n", "limit": 6}, 100, [1, 3, 50])
    assert selected_indices(sliced, 100) == [1, 3]  # a slice never widens the parent's


def test_only_pauses_reviews_and_restart_caps_park_a_run() -> None:
    assert is_resumable_halt("operator_pause")
    assert is_resumable_halt("agent_review: the scorer needs a human")
    assert is_resumable_halt("restart_cap_exceeded: atomize")
    assert not is_resumable_halt("operator_kill: enough")
    assert not is_resumable_halt("limit_exceeded:run.cost")
    assert not is_resumable_halt(None)


def new_run() -> Run:
    return Run(
        run_id=str(uuid.uuid4()),
        account="acct",
        mode="natural_language",
        benchmark_id=None,
        benchmark_name=None,
        subset_id=None,
        subset_slug=None,
        impl_id=None,
        sut=None,
        limit=None,
        metadata={},
        idempotency_key=None,
        request="Run GSM8K",
    )


def test_two_restarts_then_the_cap() -> None:
    run = new_run()
    run.start_pipeline(["atomize"])
    run.start_phase("atomize")
    assert run.restart_phase("atomize", "proof failed") is True
    run.start_phase("atomize")
    assert run.restart_phase("atomize", "proof failed") is True
    run.start_phase("atomize")
    assert run.restart_phase("atomize", "proof failed") is False
    assert run.progress.invocations["atomize"] == 3


def test_a_review_answer_clears_the_halt_and_becomes_guidance() -> None:
    run = new_run()
    with pytest.raises(RunError):
        run.clear_halt("go on", cleared_by="review_resolution")
    run.halt("agent_review: which column is the answer?")
    assert run.lifecycle.waiting
    run.clear_halt("the answer is in 'label'", cleared_by="review_resolution")
    assert not run.lifecycle.halted and run.guidance == ["the answer is in 'label'"]
    run.halt("operator_kill")
    assert not run.lifecycle.waiting


def test_artifacts_feed_the_fingerprint_with_load_bearing_fields_only() -> None:
    a, b = new_run(), new_run()
    for run, port in ((a, 1), (b, 2)):
        run.fetch_done(
            source="registry:sub_x",
            content_sha256="c" * 64,
            total_tasks=10,
            bucket="bw-datasets",
            object_name=f"x{port}.jsonl",
        )
        run.model_proxy(
            model_id="m", litellm_config_yaml="model_list: []", proxy_url=f"http://h:{port}"
        )
    assert a.fingerprint() == b.fingerprint()
    b.atomize_done(
        impl_id="bm_x:abc",
        impl_sha256="d" * 64,
        invocation=1,
        kind="math",
        code="x",
        check={},
        guidance=[],
    )
    assert a.fingerprint() != b.fingerprint()


def test_compute_resolves_to_a_backend() -> None:
    assert resolve_backend(None, "local", ["e2b"]) == "local"
    assert resolve_backend("default", "sandbox0", []) == "sandbox0"
    assert resolve_backend("auto", "local", ["e2b", "sandbox0"]) == "e2b"
    assert resolve_backend("auto", "local", []) == "local"
    assert resolve_backend("sandbox0", "local", []) == "sandbox0"
