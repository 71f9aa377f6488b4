"""The gateway reads the run log through the shared vocabulary: its projection and
narration dispatch on the type through tables keyed by the models, and a type they
do not know (a newer orchestrator's) changes nothing and breaks nothing."""

from pathlib import Path
from typing import Any

from benchwright_gateway import projections as views
from benchwright_gateway.api.artifacts import KINDS
from benchwright_gateway.api.narration import SENTENCES, narrate
from benchwright_gateway.projections import HANDLERS, RunsProjection
from benchwright_shared.contracts.run_events import RUN_EVENT_TYPES
from benchwright_shared.projection import ProjectionStore
from benchwright_shared.settings import Settings

RUN = "22222222-2222-2222-2222-222222222222"


def message(seq: int, kind: str, /, **data: Any) -> dict[str, Any]:
    return {
        "run_id": RUN,
        "seq": seq,
        "type": kind,
        "ts": f"2026-11-29T00:00:{seq:02d}Z",
        "data": data,
    }


def test_every_handler_of_the_runs_view_is_in_its_table() -> None:
    # A handler method the table does not name would never run.
    methods = {
        name.removeprefix("_on_") for name in vars(RunsProjection) if name.startswith("_on_")
    }
    assert methods == set(HANDLERS)
    assert set(HANDLERS) | set(SENTENCES) | set(KINDS) <= set(RUN_EVENT_TYPES)


def test_the_runs_view_passes_over_a_type_it_does_not_know(tmp_path: Path) -> None:
    store = ProjectionStore(Settings(data_dir=tmp_path), "gateway", [RunsProjection()])
    try:
        applied = store.apply_many(
            "runs",
            [
                (1, message(0, "RunLaunched", account="a", mode="pinned")),
                (2, message(1, "PhaseStarted", phase="fetch")),
                (3, message(2, "PhaseDaydreamed", phase="fetch", dream={"of": "sheep"})),
            ],
        )
        assert applied == 3 and store.parked("runs") == []
        row = store.read(lambda cur: views.get_run(cur, RUN))
        assert row is not None and (row["phase"], row["last_seq"]) == ("fetch", 2)
    finally:
        store.close()


def test_narration_tells_what_it_knows_and_skips_the_rest() -> None:
    events = [
        message(0, "RunLaunched", account="a", mode="pinned", benchmark_name="GSM8K"),
        message(1, "DriverSelected", driver="builtin", note="no key"),
        message(2, "PhaseDaydreamed", phase="fetch"),
        message(3, "MaterializeTaskAggregated", task_id="t0", index=0, outcome="pass"),
        message(4, "MaterializeTaskAggregated", task_id="t1", index=1, outcome="err"),
    ]
    told = narrate(events, "all")
    assert told["text"].splitlines() == [
        "Launched (pinned): GSM8K.",
        "The builtin Driver took the run (no key).",
        "So far 2 tasks settled: 1 err, 1 pass.",
    ]
    assert told["outcomes"] == {"pass": 1, "err": 1} and told["events_read"] == 5
