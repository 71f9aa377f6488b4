"""The orchestrator writes its run logs in the shared vocabulary: every type its Run
aggregate can emit has a model, every field it records is in that model, and an
entry the model refuses is never stored nor relayed."""

import dataclasses
import json
import uuid
from typing import Any

import pytest
from eventsourcing.domain import event
from eventsourcing.persistence import Notification

from benchwright_orchestrator.application import RunsApplication, translate_notification
from benchwright_orchestrator.domain import Run
from benchwright_shared.contracts.run_events import RUN_EVENT_TYPES
from benchwright_shared.relay import RelayedApplication
from benchwright_shared.run_log import MalformedRunEventError, UnknownRunEventError

ENVELOPE = {"originator_id", "originator_version", "timestamp", "originator_topic"}


def emitted() -> dict[str, set[str]]:
    """Each event type the Run aggregate can record -> the fields it records."""
    found: dict[str, set[str]] = {}
    for name, value in vars(Run).items():
        if isinstance(value, type) and issubclass(value, Run.Event) and value.__name__ == name:
            if name in ("Event", "Created"):
                continue  # the library's bases, never recorded themselves
            fields = {f.name for f in dataclasses.fields(value)} - ENVELOPE
            found[name] = fields
    return found


def test_every_type_the_orchestrator_can_emit_has_a_model_and_nothing_else_does() -> None:
    assert set(emitted()) == set(RUN_EVENT_TYPES)
    # What ``emitted`` reads is what the @event method records.
    assert emitted()["PhaseFingerprint"] == {"phase", "fingerprint", "cache_hit", "source_run_id"}


@pytest.mark.parametrize("kind", sorted(RUN_EVENT_TYPES))
def test_each_model_holds_exactly_what_its_event_records(kind: str) -> None:
    recorded = emitted()[kind]
    model = RUN_EVENT_TYPES[kind]
    accepted = {f.alias or name for name, f in model.model_fields.items()}
    required = {f.alias or name for name, f in model.model_fields.items() if f.is_required()}
    assert recorded - accepted == set(), "fields the model lacks"
    assert required - recorded == set(), "fields the model needs that the event never has"


def new_run(cls: type[Run] = Run) -> Run:
    return cls(
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


class RogueRun(Run):
    """A Run that grew an event the vocabulary does not have."""

    @event("PhaseDaydreamed")
    def daydream(self, phase: str) -> None:
        pass


@pytest.fixture
def app() -> RunsApplication:
    return RunsApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})


def test_a_type_without_a_model_is_refused_before_it_is_stored(app: RunsApplication) -> None:
    run = new_run(RogueRun)
    assert isinstance(run, RogueRun)
    run.daydream(phase="find")
    with pytest.raises(UnknownRunEventError, match="PhaseDaydreamed"):
        app.save(run)
    assert app.find_run(run.run_id) is None  # nothing of the save landed


@pytest.mark.parametrize(
    ("write", "why"),
    [
        (lambda run: run.agent_text(phase="find", text=None), "text"),
        (lambda run: run.complete_phase(phase="fetch", duration_ms="soon"), "duration_ms"),
        (lambda run: run.finish(status="maybe", duration_ms=1, summary={}), "status"),
    ],
)
def test_a_malformed_entry_is_refused_before_it_is_stored(
    app: RunsApplication, write: Any, why: str
) -> None:
    run = new_run()
    app.save(run)
    write(run)
    with pytest.raises(MalformedRunEventError, match=why):
        app.save(run)
    events, _, _ = app.run_events(run.run_id)
    assert [e.type for e in events] == ["RunLaunched"]


def test_the_relay_checks_what_it_publishes(app: RunsApplication) -> None:
    run = new_run()
    run.start_pipeline(["fetch"])
    app.save(run)
    run.agent_text(phase="find", text=None)  # type: ignore[arg-type]  # on purpose
    # Stored past the check (as a log an older writer left could hold it) ...
    RelayedApplication.save(app, run)
    notifications: list[Notification] = list(app.recorder.select_notifications(start=1, limit=10))
    subject, payload = translate_notification(app, notifications[0])
    assert subject.endswith(run.run_id) and json.loads(payload)["type"] == "RunLaunched"
    # ... it is not published: the relay tries again rather than emit it.
    with pytest.raises(MalformedRunEventError):
        translate_notification(app, notifications[-1])
