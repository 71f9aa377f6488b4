"""The parts of a Run (its trials, artifacts, sandboxes, lifecycle and phase
progress), each on its own."""

import dataclasses
import json

import pytest

from benchwright_orchestrator.domain import (
    Artifacts,
    Lifecycle,
    NoSelectionError,
    PhaseProgress,
    Sandboxes,
    TrialSweep,
)
from benchwright_orchestrator.domain.sweep import trial_fields
from benchwright_orchestrator.plan import MAX_RESTARTS
from benchwright_shared.contracts import TaskOutcome
from benchwright_shared.outcomes import SANDBOX_LOST

UNMETERED: dict[str, int | None] = dict.fromkeys(
    ("cost_micros", "prompt_tokens", "completion_tokens", "calls")
)


def sweep_of(k: int, aggregator: str = "any_pass", invocation: int = 1) -> TrialSweep:
    sweep = TrialSweep(trials={"plan": {"k": k}, "aggregator": {"name": aggregator}})
    sweep.begin(invocation)
    return sweep


def trial(
    sweep: TrialSweep,
    index: int,
    number: int,
    score: float | None,
    error_type: str | None = None,
    duration_ms: int = 10,
    spend: dict[str, int | None] | None = None,
) -> None:
    sweep.record_trial(
        index, sweep.invocation, number, score, {}, duration_ms, error_type, spend or UNMETERED
    )


# -- TrialSweep -------------------------------------------------------------------


def test_a_sweep_takes_each_trial_of_its_own_invocation_once() -> None:
    sweep = sweep_of(k=2, invocation=3)
    assert sweep.takes(0, 0, invocation=3) and sweep.takes(0, 1, invocation=3)
    assert not sweep.takes(0, 0, invocation=2)  # an earlier Materialize's result
    assert not sweep.takes(0, 2, invocation=3) and not sweep.takes(0, -1, invocation=3)
    trial(sweep, 0, 0, 1.0)
    assert not sweep.takes(0, 0, invocation=3)  # a redelivered batch
    assert sweep.unsent([0, 1]) == [(0, 1), (1, 0), (1, 1)]


def test_a_result_of_another_sweep_changes_nothing() -> None:
    sweep = sweep_of(k=1, invocation=2)
    sweep.record_trial(0, 1, 0, 1.0, {}, 5, None, UNMETERED)
    sweep.record_aggregate(0, 1, 1.0, "pass", [1.0], None, infra=False)
    assert sweep.trial_results == {} and sweep.aggregated == {}


def test_a_task_has_a_verdict_once_its_k_trials_are_in() -> None:
    sweep = sweep_of(k=2)
    trial(sweep, 4, 1, 0.0)
    assert sweep.verdict(4) is None
    trial(sweep, 4, 0, 1.0)
    verdict = sweep.verdict(4)
    assert verdict is not None
    assert [verdict[k] for k in ("score", "outcome", "aggregator")] == [1.0, "pass", "any_pass"]
    assert verdict["trial_scores"] == [1.0, 0.0]  # in trial order, not arrival order
    assert verdict["infra"] is False and verdict["cost_micros"] is None


def test_a_task_is_infra_errored_only_when_it_errs_for_the_platform() -> None:
    sweep = sweep_of(k=2)
    trial(sweep, 0, 0, None, error_type=SANDBOX_LOST)
    trial(sweep, 0, 1, None, error_type="scorer_error")
    trial(sweep, 1, 0, None, error_type="scorer_error")
    trial(sweep, 1, 1, None, error_type="scorer_error")
    first, second = sweep.verdict(0), sweep.verdict(1)
    assert first is not None and second is not None
    assert (first["outcome"], first["infra"]) == ("err", True)
    assert (second["outcome"], second["infra"]) == ("err", False)


def test_a_verdict_sums_the_spend_of_the_metered_trials() -> None:
    sweep = sweep_of(k=3)
    spend = {"cost_micros": 100, "prompt_tokens": 10, "completion_tokens": 2, "calls": 1}
    trial(sweep, 0, 0, 1.0, spend=spend)
    trial(sweep, 0, 1, 1.0, spend={**spend, "cost_micros": 50, "calls": None})
    trial(sweep, 0, 2, 1.0)  # not metered
    verdict = sweep.verdict(0)
    assert verdict is not None
    assert [verdict[f] for f in UNMETERED] == [150, 20, 4, 1]


def test_the_summary_counts_aggregated_tasks_at_their_slowest_trial() -> None:
    sweep = sweep_of(k=2)
    trial(sweep, 0, 0, 1.0, duration_ms=30)
    trial(sweep, 0, 1, 0.0, duration_ms=70)
    sweep.record_aggregate(0, 1, 1.0, "pass", [1.0, 0.0], "algebra", infra=False)
    sweep.record_aggregate(1, 1, None, "err", [None, None], None, infra=True)
    (passed, errored) = sweep.outcomes()
    assert (passed.duration_ms, passed.group, passed.trial_scores) == (70, "algebra", (1.0, 0.0))
    assert errored.infra and not passed.infra
    summary = sweep.summary()
    assert (summary["total"], summary["passed"], summary["infra_errored"]) == (2, 1, 1)
    assert sweep.settled(1, 0) and sweep.settled(1, 1)  # aggregated: every trial settled


def test_a_new_sweep_starts_from_nothing() -> None:
    sweep = sweep_of(k=1)
    trial(sweep, 0, 0, 1.0)
    sweep.record_aggregate(0, 1, 1.0, "pass", [1.0], None, infra=True)
    sweep.begin(2)
    assert (sweep.invocation, sweep.trial_results, sweep.aggregated) == (2, {}, {})
    assert sweep.detail == {} and sweep.infra == {} and sweep.unsent([0]) == [(0, 0)]


def test_a_reported_trial_is_recorded_field_for_field_and_a_timeout_is_a_limit() -> None:
    result = TaskOutcome(
        index=3, trial=1, task_id="t3", outcome="err", error_type="timeout", group="g", calls=2
    )
    fields = trial_fields(result)
    assert fields["error_type"] == "limit_exceeded:task.duration"
    assert "group" not in fields  # the aggregate records the group, not the trial
    assert [fields[f] for f in ("index", "trial", "calls", "cost_micros")] == [3, 1, 2, None]
    scorer_error = result.model_copy(update={"error_type": "scorer_error"})
    assert trial_fields(scorer_error)["error_type"] == "scorer_error"


# -- Artifacts --------------------------------------------------------------------


def fetched() -> Artifacts:
    artifacts = Artifacts()
    artifacts.fetched("hf:x", "c" * 64, total_tasks=5, bucket="b", object_name="o")
    return artifacts


def test_the_fingerprint_covers_the_record_in_order() -> None:
    assert Artifacts().fingerprint() is None
    one, other = fetched(), fetched()
    assert one.fingerprint() is not None and one.fingerprint() == other.fingerprint()
    one.add("SetupArtifact", {"impl_id": "a", "impl_sha256": "1"})
    assert one.fingerprint() != other.fingerprint()
    assert [t for t, _ in one.record] == ["FetchArtifact", "SetupArtifact"]


def test_an_analysis_is_kept_and_its_schema_fingerprinted() -> None:
    one, other = fetched(), fetched()
    for artifacts, schema_sha256 in ((one, "1"), (other, "2")):
        artifacts.analyzed("qa", {"q": "str"}, schema_sha256, ["all"], {"input": "q"}, [], [])
    assert one.analysis is not None and one.analysis["fields"] == {"input": "q"}
    assert one.fingerprint() != other.fingerprint()


def test_the_model_config_is_hashed_and_fingerprinted() -> None:
    one, other = fetched(), fetched()
    one.model_configured("m", "model_list: []")
    other.model_configured("m2", "model_list: []")
    assert one.model_config_sha256 != other.model_config_sha256
    assert one.fingerprint() != other.fingerprint()


def test_the_selection_names_the_swept_indices() -> None:
    artifacts = fetched()
    with pytest.raises(NoSelectionError):
        artifacts.selected()
    artifacts.tasks_selected("bm", "sub", 9, 2, "d" * 64, {"kind": "first_n", "limit": 2})
    assert artifacts.selected() == [0, 1]
    assert [t for t, _ in artifacts.record] == ["FetchArtifact", "DatasetTasksArtifact"]
    # The fetched dataset's own size and hash stand; a replay's (no Fetch) takes these.
    assert artifacts.dataset["total_tasks"] == 5 and artifacts.dataset["content_sha256"] == "c" * 64
    replay = Artifacts()
    replay.tasks_selected("bm", "sub", 9, 1, "d" * 64, {"kind": "indices", "indices": [7]})
    assert replay.selected() == [7] and replay.dataset["total_tasks"] == 9


def test_a_new_work_sandbox_restores_the_furthest_snapshot() -> None:
    artifacts = Artifacts()
    assert artifacts.latest_snapshot() is None
    artifacts.snapshots.update({"atomize": "snap-a", "fetch": "snap-f"})
    assert artifacts.latest_snapshot() == "snap-a"
    artifacts.scorer_chosen("impl_1", None, "code")
    assert artifacts.scorer == {"impl_id": "impl_1", "impl_sha256": None, "code": "code"}


# -- Sandboxes --------------------------------------------------------------------


def test_sandboxes_are_open_until_closed_and_keep_their_owner() -> None:
    sandboxes = Sandboxes()
    sandboxes.created("sbx_1", "local", owner="sm-a")
    sandboxes.created("sbx_2", "remote", owner=None)
    assert sandboxes.open == {"sbx_1": "local", "sbx_2": "remote"}
    assert sandboxes.owners == {"sbx_1": "sm-a"}
    sandboxes.closed("sbx_1")
    sandboxes.closed("sbx_unknown")
    assert sandboxes.open == {"sbx_2": "remote"}


# -- Lifecycle --------------------------------------------------------------------


def test_a_run_is_finished_once_it_ends_ok_or_in_error() -> None:
    lifecycle = Lifecycle()
    assert lifecycle.status == "running" and not lifecycle.finished
    lifecycle.finish("ok")
    assert lifecycle.finished
    lifecycle = Lifecycle()
    lifecycle.finish("error")
    assert lifecycle.finished


@pytest.mark.parametrize(
    "halt_reason", ["agent_review: which column?", "operator_pause", "restart_cap_exceeded: x"]
)
def test_a_resumable_halt_parks_a_running_run_until_cleared(halt_reason: str) -> None:
    lifecycle = Lifecycle()
    lifecycle.halt(halt_reason)
    assert lifecycle.halted and lifecycle.waiting and lifecycle.halt_reason == halt_reason
    lifecycle.clear()
    assert (lifecycle.halted, lifecycle.halt_reason, lifecycle.waiting) == (False, None, False)


@pytest.mark.parametrize(
    "halt_reason", ["limit_exceeded:run.cost", "operator_kill: deleted", "operator_paused"]
)
def test_a_limit_or_a_kill_halts_without_waiting(halt_reason: str) -> None:
    lifecycle = Lifecycle()
    lifecycle.halt(halt_reason)
    assert lifecycle.halted and not lifecycle.waiting


def test_a_finished_run_waits_for_nobody() -> None:
    lifecycle = Lifecycle()
    lifecycle.halt("operator_pause")
    lifecycle.finish("error")
    assert lifecycle.halted and not lifecycle.waiting


# -- PhaseProgress ----------------------------------------------------------------


def test_each_start_of_a_phase_is_its_next_invocation() -> None:
    progress = PhaseProgress(plan=["fetch", "setup"])
    assert progress.phase_started("fetch") == 1
    progress.phase_failed()
    assert progress.current_phase is None
    assert progress.phase_started("fetch") == 2
    progress.phase_completed("fetch")
    assert progress.phase_started("setup") == 1
    assert progress.started_phases == ["fetch", "fetch", "setup"]
    assert progress.completed_phases == ["fetch"] and progress.current_phase == "setup"
    assert progress.invocations == {"fetch": 2, "setup": 1}


def test_restarts_stop_at_the_cap_until_a_person_renews_them() -> None:
    progress = PhaseProgress(plan=["atomize"])
    progress.phase_started("atomize")
    for restarts in range(1, MAX_RESTARTS + 1):
        assert progress.may_restart
        progress.phase_restarted("atomize", restarts)
        assert progress.current_phase is None
    assert not progress.may_restart
    progress.renew_restarts()
    assert progress.may_restart and progress.restarts == 0


def test_a_restart_of_another_phase_leaves_the_current_one() -> None:
    progress = PhaseProgress()
    progress.phase_started("materialize")
    progress.phase_restarted("setup", 1)
    assert progress.current_phase == "materialize" and progress.restarts == 1


def test_what_remains_runs_from_the_interrupted_phase_or_skips_the_completed() -> None:
    progress = PhaseProgress(plan=["fetch", "setup", "materialize", "report"])
    progress.phase_started("fetch")
    progress.phase_completed("fetch")
    progress.phase_started("setup")
    # Interrupted in Setup: Setup runs again, then the rest.
    assert progress.remaining("setup") == ["setup", "materialize", "report"]
    # Nothing under way (or a phase the plan lacks): every phase not yet completed.
    assert progress.remaining(None) == ["setup", "materialize", "report"]
    assert progress.remaining("attach") == ["setup", "materialize", "report"]


def test_parts_hold_plain_json() -> None:
    """Snapshots store the parts field by field: nothing in them but JSON's types."""
    sweep = sweep_of(k=1)
    trial(sweep, 0, 0, 1.0)
    progress = PhaseProgress(plan=["fetch"])
    progress.phase_started("fetch")
    lifecycle = Lifecycle()
    lifecycle.halt("operator_pause")
    for part in (sweep, fetched(), Sandboxes(open={"s": "local"}), lifecycle, progress):
        fields = {f.name: getattr(part, f.name) for f in dataclasses.fields(part)}
        assert json.loads(json.dumps(fields)) == fields
