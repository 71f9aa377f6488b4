"""The gateway's runs/tasks read model, applied message by message (no bus)."""

from pathlib import Path
from typing import Any

from benchwright_gateway import projections as views
from benchwright_gateway.api.render import render_task
from benchwright_gateway.projections import RunsProjection
from benchwright_shared.projection import ProjectionStore
from benchwright_shared.settings import Settings

RUN = "11111111-1111-1111-1111-111111111111"


def message(seq: int, kind: str, **data: Any) -> dict[str, Any]:
    return {
        "run_id": RUN,
        "seq": seq,
        "type": kind,
        "ts": f"2026-11-29T00:00:{seq:02d}Z",
        "data": data,
    }


def test_a_natural_language_run_fills_in_as_find_and_atomize_answer(tmp_path: Path) -> None:
    store = ProjectionStore(Settings(data_dir=tmp_path), "gateway", [RunsProjection()])
    try:
        store.apply(
            "runs",
            1,
            message(0, "RunLaunched", account="a", mode="natural_language", request="Run GSM8K"),
        )
        row = store.read(lambda cur: views.get_run(cur, RUN))
        assert row["benchmark_id"] is None and row["model"] is None
        store.apply(
            "runs",
            2,
            message(
                3,
                "BenchmarkResolved",
                benchmark_id="bm_1",
                benchmark_name="GSM8K",
                subset_id="sub_1",
                subset_slug="test",
                sut={"model": "m", "provider": "local"},
            ),
        )
        store.apply("runs", 3, message(9, "AtomizeArtifact", impl_id="bm_1:abc"))
        # A trial is in, the task's other trials are not: the row is running.
        store.apply(
            "runs",
            4,
            message(10, "MaterializeTaskResult", task_id="t0", index=0, invocation=1, trial=0),
        )
        row = store.read(lambda cur: views.get_run(cur, RUN))
        assert (row["benchmark_name"], row["impl_id"]) == ("GSM8K", "bm_1:abc")
        assert '"local"' in row["model"]
        settled = store.read(
            lambda cur: views.list_tasks(cur, RUN, outcomes=None, after=None, limit=10)
        )
        assert settled == []
        live = store.read(
            lambda cur: views.list_tasks(
                cur, RUN, outcomes=None, after=None, limit=10, include_running=True
            )
        )
        assert [render_task(r)["outcome"] for r in live] == ["running"]

        store.apply("runs", 5, message(11, "RunDeleted", deleted_by="a"))
        assert store.read(lambda cur: views.get_run(cur, RUN)) is None
    finally:
        store.close()


def test_a_finished_run_shows_finished_only_once_its_task_rows_are_in(tmp_path: Path) -> None:
    """A redelivered batch can land after the terminal event: the run waits for it."""
    store = ProjectionStore(Settings(data_dir=tmp_path), "gateway", [RunsProjection()])
    try:
        store.apply("runs", 1, message(0, "RunLaunched", account="a", mode="pinned"))
        for seq, index in ((5, 0),):
            store.apply(
                "runs",
                seq,
                message(
                    seq,
                    "MaterializeTaskAggregated",
                    task_id=f"t{index}",
                    index=index,
                    outcome="pass",
                ),
            )
        store.apply(
            "runs",
            9,
            message(9, "PipelineFinished", status="ok", duration_ms=1, summary={"total": 2}),
        )
        row = store.read(lambda cur: views.get_run(cur, RUN))
        assert row["status"] == "running" and row["final_status"] == "ok"
        store.apply(
            "runs",
            6,
            message(6, "MaterializeTaskAggregated", task_id="t1", index=1, outcome="fail"),
        )
        row = store.read(lambda cur: views.get_run(cur, RUN))
        assert row["status"] == "ok"
    finally:
        store.close()
