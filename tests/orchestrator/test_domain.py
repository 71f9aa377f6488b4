"""The Run aggregate and scoring rules, with no I/O."""

import uuid

import pytest

from benchwright_orchestrator.domain import Run, RunAlreadyFinishedError
from benchwright_shared.scoring import aggregate, percentile, summarize


def new_run() -> Run:
    return Run(
        run_id=str(uuid.uuid4()),
        account="acct",
        mode="pinned",
        benchmark_id="bm_x",
        benchmark_name="X",
        subset_id="sub_x",
        subset_slug="test",
        impl_id=None,
        sut={"model": "m", "provider": "p"},
        limit=5,
        metadata={},
        idempotency_key=None,
    )


def test_run_launched_is_seq_zero_and_phases_count_invocations() -> None:
    run = new_run()
    run.start_pipeline(["fetch"])
    assert run.start_phase("atomize") == 1
    run.complete_phase(phase="atomize", duration_ms=3)
    assert run.start_phase("atomize") == 2
    events = run.collect_events()
    assert type(events[0]).__name__ == "RunLaunched"
    assert [e.originator_version - 1 for e in events] == list(range(len(events)))
    assert [type(e).__name__ for e in events][1:] == [
        "PipelineStarted",
        "PhaseStarted",
        "PhaseCompleted",
        "PhaseStarted",
    ]


def test_finished_run_takes_no_more_pipeline_events() -> None:
    run = new_run()
    run.finish(status="ok", duration_ms=1, summary={})
    with pytest.raises(RunAlreadyFinishedError):
        run.start_phase("fetch")


def test_any_pass_takes_the_best_trial_and_errs_only_when_all_err() -> None:
    any_pass = {"name": "any_pass"}
    assert aggregate(any_pass, [(0.0, {}), (1.0, {}), (None, {})]) == (1.0, "pass")
    assert aggregate(any_pass, [(0.0, {}), (0.5, {})]) == (0.5, "fail")
    assert aggregate(any_pass, [(None, {}), (None, {})]) == (None, "err")


def test_summary_excludes_errors_from_the_pass_rate() -> None:
    summary = summarize([("pass", 10), ("fail", 20), ("err", 30), ("pass", 40)])
    assert summary["total"] == 4
    assert (summary["passed"], summary["failed"], summary["errored"]) == (2, 1, 1)
    assert summary["pass_rate"] == pytest.approx(2 / 3)
    assert summary["duration_ms_p50"] == 20
    assert summary["duration_ms_p95"] == 40
    assert summarize([])["pass_rate"] is None


def test_percentile_is_nearest_rank() -> None:
    assert percentile(list(range(1, 101)), 95) == 95
    assert percentile([7], 50) == 7
    assert percentile([], 50) is None


def test_the_fingerprint_covers_artifacts_and_changes_with_the_model() -> None:
    def fingerprint(model: str, port: int) -> str | None:
        run = new_run()
        run.dataset_tasks(
            benchmark_id="bm_x",
            subset_id="sub_x",
            total_tasks=9,
            selected_tasks=5,
            content_sha256="c",
            selection={"limit": 5},
        )
        run.setup_done(impl_id="bm_x:abc", impl_sha256="abc")
        run.model_proxy(model_id=model, litellm_config_yaml="y", proxy_url=f"http://h:{port}")
        return run.fingerprint()

    assert new_run().fingerprint() is None
    assert fingerprint("local/a", 1) == fingerprint("local/a", 2)  # the port is noise
    assert fingerprint("local/a", 1) != fingerprint("local/b", 1)


def test_the_log_remembers_what_a_resumed_sweep_must_not_redo() -> None:
    run = new_run()
    run.start_pipeline(["materialize"])
    run.start_phase("materialize")
    run.sandbox_created(sandbox_id="sbx_1", backend="local", metadata={})
    for trial in (0, 1):
        run.task_result(
            task_id="t0",
            index=0,
            invocation=1,
            trial=trial,
            score=1.0,
            score_meta={},
            outcome="pass",
            output="x",
            error_type=None,
            error=None,
            duration_ms=5,
        )
    run.task_aggregated(
        task_id="t0",
        index=0,
        invocation=1,
        score=1.0,
        outcome="pass",
        trial_scores=[1.0, 1.0],
        aggregator="any_pass",
    )
    assert run.sweep.trial_results == {"0": {"0": [1.0, {}, 5, None], "1": [1.0, {}, 5, None]}}
    assert run.sweep.aggregated == {"0": "pass"}
    assert run.open_sandboxes == {"sbx_1": "local"}
    run.resume(reason="restarted")
    assert type(run.collect_events()[-1]).__name__ == "PipelineResumed"
    # A new sweep (a retried Materialize) starts from nothing.
    run.complete_phase(phase="materialize", duration_ms=1)
    run.start_phase("materialize")
    assert run.sweep.trial_results == {} and run.sweep.aggregated == {}
