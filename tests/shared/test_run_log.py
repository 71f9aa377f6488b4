"""The run log's vocabulary in use: writers are checked against the models, readers
dispatch on the type and survive types they do not know."""

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel

from benchwright_shared.contracts.agent_events import (
    AGENT_EVENT_TYPES,
    AgentModelTurn,
    AgentToolCall,
)
from benchwright_shared.contracts.run_events import (
    RUN_EVENT_TYPES,
    AnalyzeArtifact,
    BenchmarkResolved,
    MaterializeTaskResult,
    PhaseStarted,
    RunDeleted,
    RunEvent,
    RunLaunched,
    SutRef,
)
from benchwright_shared.run_log import (
    LogEntry,
    MalformedRunEventError,
    RunEventHandlers,
    UnknownRunEventError,
    build_run_event,
    check_run_event,
    parse_run_event,
    read_run_event_data,
    run_event_table,
    run_event_type,
)

RUN = "11111111-1111-1111-1111-111111111111"
T0 = datetime(2026, 11, 29, tzinfo=UTC)


def message(kind: str, seq: int = 1, **data: Any) -> dict[str, Any]:
    return {"run_id": RUN, "seq": seq, "type": kind, "ts": T0.isoformat(), "data": data}


def test_every_type_is_named_after_its_model() -> None:
    assert all(model.__name__ == name for name, model in RUN_EVENT_TYPES.items())
    assert run_event_type(PhaseStarted) == "PhaseStarted"


# -- writing ---------------------------------------------------------------------------
def test_a_writer_cannot_emit_an_unknown_type() -> None:
    with pytest.raises(UnknownRunEventError, match="PhaseDaydreamed"):
        check_run_event("PhaseDaydreamed", {"phase": "find"})
    with pytest.raises(UnknownRunEventError):
        build_run_event(run_id=RUN, seq=1, event_type="Gossip", ts=T0, data={})


@pytest.mark.parametrize(
    ("kind", "data", "why"),
    [
        ("PhaseStarted", {}, "phase"),  # a required field missing
        ("PhaseCompleted", {"phase": "fetch", "duration_ms": "soon"}, "duration_ms"),
        ("MaterializeTaskResult", {"task_id": "t", "index": 0, "outcome": "maybe"}, "outcome"),
        ("PhaseStarted", {"phase": "find", "mood": "sunny"}, "mood"),  # a field no model has
    ],
)
def test_a_writer_cannot_emit_a_malformed_payload(
    kind: str, data: dict[str, Any], why: str
) -> None:
    with pytest.raises(MalformedRunEventError, match=why):
        build_run_event(run_id=RUN, seq=1, event_type=kind, ts=T0, data=data)


def test_a_checked_entry_goes_out_as_written() -> None:
    data = {"kind": "mcq", "schema": {"q": "str"}, "schema_sha256": "a" * 64}
    event = build_run_event(run_id=RUN, seq=4, event_type="AnalyzeArtifact", ts=T0, data=data)
    assert event.data == data  # not re-dumped with the model's defaults
    checked = check_run_event("AnalyzeArtifact", data)
    assert isinstance(checked, AnalyzeArtifact) and checked.schema_ == {"q": "str"}


# -- reading ---------------------------------------------------------------------------
def test_a_reader_gets_the_data_typed_without_validation() -> None:
    entry = parse_run_event(
        message(
            "BenchmarkResolved",
            benchmark_id="bm_1",
            benchmark_name="GSM8K",
            subset_id="sub_1",
            subset_slug="test",
            sut={"model": "m", "provider": "p"},
        )
    )
    assert entry is not None and entry.type == "BenchmarkResolved"
    assert (entry.run_id, entry.seq, entry.ts) == (RUN, 1, T0.isoformat())
    resolved = entry.data
    assert isinstance(resolved, BenchmarkResolved)
    assert isinstance(resolved.sut, SutRef) and resolved.sut.provider == "p"  # nested, built
    assert resolved.scope == {} and resolved.notes == []  # defaults filled in
    # An alias reads as the field; a partial entry an old writer left reads too.
    assert read_run_event_data(AnalyzeArtifact, {"schema": {"a": 1}}).schema_ == {"a": 1}
    partial = read_run_event_data(MaterializeTaskResult, {"task_id": "t0", "index": 3})
    assert (partial.index, partial.trial, partial.score) == (3, 0, None)
    assert partial.model_fields_set == {"task_id", "index"}
    with pytest.raises(AttributeError):
        _ = partial.outcome  # required, and this entry has none
    # Each entry has its own default containers.
    partial.score_meta["seen"] = True
    assert read_run_event_data(MaterializeTaskResult, {"task_id": "t1"}).score_meta == {}


def test_the_models_inside_a_list_are_built_too() -> None:
    """An agent's turn reads back with its tool calls as ``AgentToolCall``s, each with
    its defaults, and what is not a mapping in the list as it was written."""
    calls = [
        {"id": "c1", "name": "shell", "arguments": {"command": "ls"}},
        {"id": "c2", "name": "read_file", "raw_arguments": "{not json"},
    ]
    data = {"task_id": "t0", "index": 0, "turn": 1, "messages_in_count": 2, "tool_calls": calls}
    check_run_event("AgentModelTurn", data)
    entry = parse_run_event(message("AgentModelTurn", **data))
    assert entry is not None and isinstance(entry.data, AgentModelTurn)
    first, second = entry.data.tool_calls
    assert isinstance(first, AgentToolCall) and first.arguments == {"command": "ls"}
    assert isinstance(second, AgentToolCall) and second.arguments == {}  # default filled in
    assert second.raw_arguments == "{not json" and entry.data.attempt == 1
    assert read_run_event_data(AgentModelTurn, {"turn": 2}).tool_calls == []
    odd = read_run_event_data(AgentModelTurn, {"tool_calls": ["unexpected"]})
    assert odd.tool_calls == ["unexpected"]  # type: ignore[comparison-overlap]


def test_the_agent_events_are_in_the_vocabulary() -> None:
    for model in AGENT_EVENT_TYPES:
        assert RUN_EVENT_TYPES[model.__name__] is model
        assert run_event_type(model) == model.__name__
    assert "AgentToolCall" not in RUN_EVENT_TYPES  # travels inside a turn


def test_a_reader_skips_a_type_it_does_not_know() -> None:
    assert parse_run_event(message("PhaseDaydreamed", phase="find")) is None
    assert parse_run_event(message("", phase="find")) is None
    envelope = RunEvent(run_id=RUN, seq=0, type="RunLaunched", ts=T0, data={"account": "a"})
    entry = parse_run_event(envelope)
    assert entry is not None and isinstance(entry.data, RunLaunched)
    assert entry.data.account == "a" and entry.data.mode == "pinned"


def test_handlers_dispatch_on_the_type_and_pass_over_the_rest() -> None:
    seen: list[tuple[str, Any]] = []
    handlers: RunEventHandlers[list[tuple[str, Any]]] = RunEventHandlers()

    @handlers.on(PhaseStarted)
    def started(log: list[tuple[str, Any]], e: LogEntry[PhaseStarted]) -> None:
        log.append((e.type, e.data.phase))

    @handlers.on(RunLaunched, RunDeleted)
    def bookends(log: list[tuple[str, Any]], e: LogEntry[RunLaunched | RunDeleted]) -> None:
        log.append((e.type, e.seq))

    assert handlers.dispatch(seen, message("PhaseStarted", phase="fetch"))
    assert handlers.dispatch(seen, message("RunDeleted", seq=9, deleted_by="x"))
    assert not handlers.dispatch(seen, message("PhaseCompleted", phase="fetch", duration_ms=1))
    assert not handlers.dispatch(seen, message("FromTheFuture", anything=1))
    assert seen == [("PhaseStarted", "fetch"), ("RunDeleted", 9)]
    assert handlers.types == {"PhaseStarted", "RunLaunched", "RunDeleted"}
    with pytest.raises(ValueError, match="already"):
        handlers.on(PhaseStarted)(started)


def test_tables_name_only_types_of_the_vocabulary() -> None:
    class Stranger(BaseModel):
        pass

    with pytest.raises(UnknownRunEventError):
        run_event_table({Stranger: 1})  # type: ignore[dict-item]
    with pytest.raises(UnknownRunEventError):
        run_event_type(SutRef)  # a model, but no event's
    assert run_event_table({PhaseStarted: "p", RunDeleted: "d"}) == {
        "PhaseStarted": "p",
        "RunDeleted": "d",
    }
