"""The registry's run-log views dispatch on the type through the shared vocabulary: the
data arrives typed, and a type they do not know (a newer orchestrator's) is passed over."""

from pathlib import Path
from typing import Any

from benchwright_registry.projections import PhaseCellsProjection, RunSummariesProjection
from benchwright_shared.projection import ProjectionStore, ViewCursor
from benchwright_shared.settings import Settings

RUN = "33333333-3333-3333-3333-333333333333"


def message(seq: int, kind: str, /, **data: Any) -> dict[str, Any]:
    return {
        "run_id": RUN,
        "seq": seq,
        "type": kind,
        "ts": f"2026-11-29T00:00:{seq:02d}Z",
        "data": data,
    }


def rows(store: ProjectionStore, table: str) -> list[dict[str, Any]]:
    def select(cur: ViewCursor) -> list[dict[str, Any]]:
        cur.execute(f"SELECT * FROM {cur.table(table)}")
        return cur.fetchall()

    return store.read(select)


def test_the_run_views_read_typed_data_and_pass_over_unknown_types(tmp_path: Path) -> None:
    views = [RunSummariesProjection(), PhaseCellsProjection()]
    store = ProjectionStore(Settings(data_dir=tmp_path), "registry", views)
    log = [
        message(
            0,
            "RunLaunched",
            run_id=RUN,
            account="acct",
            benchmark_id="bm_1",
            subset_id="sub_1",
            sut={"model": "m", "provider": "p"},
        ),
        message(1, "PhaseDaydreamed", phase="fetch", dream={"of": "sheep"}),
        message(2, "PhaseFingerprint", phase="fetch", fingerprint="f" * 12, cache_hit=False),
        message(3, "AtomizeArtifact", impl_id="bm_1:abc", impl_sha256="s", kind="exact", code="x"),
        message(4, "MaterializeTaskAggregated", task_id="t0", index=0, outcome="pass"),
        message(5, "PipelineFinished", status="ok", duration_ms=1, summary={"total": 1}),
    ]
    try:
        for view in views:
            assert store.apply_many(view.name, list(enumerate(log, start=1))) == len(log)
            assert store.parked(view.name) == []
        (run,) = rows(store, "run_summaries")
        assert (run["model"], run["mode"], run["impl_id"], run["status"]) == (
            "p/m",
            "pinned",
            "bm_1:abc",
            "ok",
        )
        assert run["started_at"] == "2026-11-29T00:00:00Z"
        (code,) = rows(store, "scorer_code")
        assert (code["phase"], code["kind"], code["run_id"]) == ("atomize", "exact", RUN)
        (cell,) = rows(store, "phase_cells")
        assert (cell["phase"], cell["run_id"]) == ("fetch", RUN)
    finally:
        store.close()
