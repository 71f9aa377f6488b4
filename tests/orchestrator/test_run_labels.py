"""A person's label is an event on the run: recorded whenever the run is not deleted,
finished or not, in the shared vocabulary, and never for a trial the run lacks."""

import pytest

from benchwright_orchestrator.application import RunsApplication
from benchwright_orchestrator.domain import Run, RunError
from benchwright_shared.contracts.run_events import RUN_EVENT_TYPES, TaskLabelled
from tests.orchestrator.test_run_log import new_run


def label(run: Run, label_id: str, grade: str, trial: int = 0) -> None:
    run.label(
        label_id=label_id,
        task_id="q-1",
        index=1,
        invocation=1,
        trial=trial,
        scale="pass_fail",
        grade=grade,
        note="checked by hand",
        by="acct",
    )


def test_labels_are_recorded_on_a_finished_run_in_order_and_all_kept() -> None:
    app = RunsApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    run = new_run()
    run.finish(status="ok", duration_ms=1, summary={}, error_type=None, detail=None)
    label(run, "label:1", "fail")
    label(run, "label:2", "pass")
    app.save(run)
    events, _, _ = app.run_events(run.run_id, after_seq=-1, types=["TaskLabelled"], limit=10)
    recorded = [TaskLabelled.model_validate(e.data) for e in events]
    assert [(r.label_id, r.grade, r.labelled_by, r.note) for r in recorded] == [
        ("label:1", "fail", "acct", "checked by hand"),
        ("label:2", "pass", "acct", "checked by hand"),
    ]
    assert RUN_EVENT_TYPES["TaskLabelled"] is TaskLabelled
    assert events[0].seq < events[1].seq


def test_a_label_is_refused_for_a_trial_the_run_lacks_or_on_a_deleted_run() -> None:
    run = new_run()
    with pytest.raises(RunError, match="no trial 1"):
        label(run, "label:1", "pass", trial=1)
    run.delete(deleted_by="acct")
    with pytest.raises(RunError, match="deleted"):
        label(run, "label:2", "pass")
