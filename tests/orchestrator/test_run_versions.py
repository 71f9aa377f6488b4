"""Snapshots a Run of an older class version wrote load, upcast, and carry on.

``snapshots/`` holds real version 1, 2 and 3 snapshots: the stored record of a run
midway through its sweep (k = 2; task 0 passed, task 1 lost its sandbox twice, task
2 has one trial of two, task 3 none), each written by the code of the commit its
``made_by`` names, with what that code said of the run (``expected``). A version 1
snapshot reaches the current version through every upcaster in turn.
"""

import dataclasses
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import get_topic

from benchwright_orchestrator.application import RunsApplication
from benchwright_orchestrator.domain import (
    Agents,
    Artifacts,
    Lifecycle,
    PhaseProgress,
    Run,
    Sandboxes,
    TrialSweep,
)
from benchwright_shared.contracts import TaskOutcome

SNAPSHOTS = Path(__file__).parent / "snapshots"
V1_FIXTURES = sorted(SNAPSHOTS.glob("run_v1*.json"))
V2_FIXTURES = sorted(SNAPSHOTS.glob("run_v2*.json"))
V3_FIXTURES = sorted(SNAPSHOTS.glob("run_v3*.json"))
FIXTURES = V1_FIXTURES + V2_FIXTURES + V3_FIXTURES
COUNTS = ("total", "passed", "failed", "errored", "infra_errored", "pass_rate")


def load(fixture: Path) -> tuple[RunsApplication, Run, dict[str, Any]]:
    """A fresh store holding only the fixture's snapshot, and the run read back from it."""
    stored = json.loads(fixture.read_text())
    app = RunsApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    run_id = uuid.UUID(stored["originator_id"])
    app.snapshots.recorder.insert_events(  # type: ignore[union-attr]
        [
            StoredEvent(
                originator_id=run_id,
                originator_version=stored["originator_version"],
                topic=stored["topic"],
                state=json.dumps(stored["state"]).encode(),
            )
        ]
    )
    run: Run = app.repository.get(run_id)
    return app, run, stored


def test_there_are_version_1_2_and_3_snapshots_to_load() -> None:
    assert len(V1_FIXTURES) >= 2 and len(V2_FIXTURES) >= 1 and len(V3_FIXTURES) >= 1
    for fixture in V1_FIXTURES:
        state = json.loads(fixture.read_text())["state"]["state"]  # the record's, the run's
        assert "class_version" not in state and "trial_results" in state
    for fixture in V2_FIXTURES:
        state = json.loads(fixture.read_text())["state"]["state"]
        assert state["class_version"] == 2 and state["sweep"]["_type_"] == "run_TrialSweep"
        assert "status" in state and "invocations" in state  # flat in version 2
    for fixture in V3_FIXTURES:
        state = json.loads(fixture.read_text())["state"]["state"]
        assert state["class_version"] == 3 and state["lifecycle"]["_type_"] == "run_Lifecycle"
        assert "agents" not in state  # version 4's


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.stem)
def test_a_version_1_snapshot_loads_as_the_run_it_was(fixture: Path) -> None:
    _, run, stored = load(fixture)
    expected = stored["expected"]
    assert isinstance(run.sweep, TrialSweep) and isinstance(run.artifacts, Artifacts)
    assert isinstance(run.sandboxes, Sandboxes)
    assert run.agents == Agents()  # no agent ran before version 4
    summary = run.summary()
    assert (summary["total"], summary["passed"], summary["failed"]) == (2, 1, 0)
    assert (summary["errored"], summary["infra_errored"]) == (1, len(expected["infra"]))
    if expected["summary"] is not None:  # the oldest code had no summary of its own
        assert {k: summary[k] for k in COUNTS} == {k: expected["summary"][k] for k in COUNTS}
    assert run.fingerprint() == expected["fingerprint"]
    assert run.latest_snapshot() == expected["latest_snapshot"]
    assert run.open_sandboxes == expected["open_sandboxes"]
    assert run.sandbox_owners == expected["sandbox_owners"]
    assert run.visibility == (expected["visibility"] or "private")
    assert run.metadata == expected["metadata"]
    # What older snapshots lacked is there, as a run launched then had it in effect.
    assert run.harness_name is None and run.cache is None and run.telemetry is None
    assert sorted(run.sweep.infra) == expected["infra"]
    assert run.sweep.invocation == run.progress.invocations["materialize"]
    assert all(len(t) >= 4 for trials in run.sweep.trial_results.values() for t in trials.values())


LIFECYCLE = ("status", "halted", "halt_reason")
PROGRESS = ("plan", "current_phase", "started_phases", "completed_phases", "invocations")


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.stem)
def test_an_older_snapshots_flat_lifecycle_lands_in_its_parts(fixture: Path) -> None:
    _, run, stored = load(fixture)
    flat = stored["state"]["state"]
    if "lifecycle" in flat:  # version 3: in its parts already
        flat = {**flat, **flat["lifecycle"]["_data_"], **flat["progress"]["_data_"]}
    assert isinstance(run.lifecycle, Lifecycle) and isinstance(run.progress, PhaseProgress)
    fresh_lifecycle, fresh_progress = Lifecycle(), PhaseProgress()
    for name in LIFECYCLE:  # a version 1 snapshot may lack one: the launch's value then
        assert getattr(run.lifecycle, name) == flat.get(name, getattr(fresh_lifecycle, name))
    for name in (*PROGRESS, "restarts"):
        assert getattr(run.progress, name) == flat.get(name, getattr(fresh_progress, name))
    assert not set(LIFECYCLE + PROGRESS) & set(vars(run))  # moved, not copied


@pytest.mark.parametrize("fixture", V2_FIXTURES + V3_FIXTURES, ids=lambda p: p.stem)
def test_a_version_2_run_parked_by_a_pause_is_cleared_and_carries_on(fixture: Path) -> None:
    app, run, stored = load(fixture)
    expected = stored["expected"]
    lifecycle = {n: getattr(run.lifecycle, n) for n in (*LIFECYCLE, "waiting")}
    assert lifecycle == {n: expected[n] for n in (*LIFECYCLE, "waiting")}
    progress = {n: getattr(run.progress, n) for n in (*PROGRESS, "restarts")}
    assert progress == {n: expected[n] for n in (*PROGRESS, "restarts")}
    assert run.lifecycle.waiting and run.progress.restarts == 1
    run.clear_halt("the scorer is fine", cleared_by="someone")
    assert not run.lifecycle.halted and run.progress.restarts == 0
    assert run.guidance[-1] == "the scorer is fine"
    run.resume(reason="cleared")
    assert run.progress.remaining(run.progress.current_phase) == ["materialize", "report"]
    app.save(run)
    again: Run = app.repository.get(run.id)
    assert again.lifecycle == run.lifecycle and again.progress == run.progress


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.stem)
def test_an_upcast_run_finishes_its_sweep_and_snapshots_as_the_current_version(
    fixture: Path,
) -> None:
    app, run, _ = load(fixture)
    invocation = run.progress.invocations["materialize"]
    assert run.sweep.unsent(range(4)) == [(2, 1), (3, 0), (3, 1)]
    rest = [
        TaskOutcome(index=0, trial=1, task_id="t0", score=1.0, outcome="pass"),  # a redelivery
        TaskOutcome(index=2, trial=1, task_id="t2", score=1.0, outcome="pass", duration_ms=40),
        TaskOutcome(index=3, trial=0, task_id="t3", score=0.0, outcome="fail"),
        TaskOutcome(index=3, trial=1, task_id="t3", score=0.0, outcome="fail"),
    ]
    assert run.record_results(rest, invocation) == 3
    app.save(run)
    app.take_snapshot(run.id)
    (snapshot,) = app.snapshots.recorder.select_events(run.id, desc=True, limit=1)  # type: ignore[union-attr]
    state = json.loads(snapshot.state)["state"]
    assert state["class_version"] == Run.class_version
    assert state["sweep"]["_type_"] == "run_TrialSweep"
    assert state["lifecycle"]["_type_"] == "run_Lifecycle"
    assert state["progress"]["_type_"] == "run_PhaseProgress"
    assert state["agents"]["_type_"] == "run_Agents"
    again: Run = app.repository.get(run.id)
    summary = again.summary()
    assert (summary["total"], summary["passed"], summary["failed"]) == (4, 2, 1)
    assert summary["errored"] == 1
    assert again.sweep.unsent(range(4)) == [] and again.fingerprint() == run.fingerprint()
    assert again.sandbox_owners == run.sandbox_owners
    assert again.lifecycle == run.lifecycle and again.progress == run.progress
    assert again.agents == run.agents


def test_the_run_events_keep_their_stored_topics_and_fields() -> None:
    """Stores hold each event under its topic: splitting the run must not move one.

    ``snapshots/run_event_fields.json`` is every Run event's topic and fields as
    main had them before the parts; a new event or field is a deliberate change
    to it (and a new field needs a default, or an event upcaster).
    """
    stored = json.loads((SNAPSHOTS / "run_event_fields.json").read_text())
    events = [v for v in vars(Run).values() if isinstance(v, type) and issubclass(v, Run.Event)]
    now = {
        get_topic(e): sorted(f.name for f in dataclasses.fields(e))
        for e in events
        if e is not Run.Event
    }
    assert now == stored
