"""The gateway's runs/tasks read model, applied message by message (no bus)."""

from pathlib import Path
from typing import Any

import pytest

from benchwright_gateway import projections as views
from benchwright_gateway.projections import RunsProjection
from benchwright_gateway.render import render_task
from benchwright_shared.projection import ProjectionStore
from benchwright_shared.settings import Settings
from tests.conftest import machine_database_url, reset_postgres

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


def _history() -> list[dict[str, Any]]:
    """Two runs' logs interleaved: trials, a re-sent result, a late aggregate after the
    terminal event, a halt, a metadata change, and a deleted run."""
    other = "22222222-2222-2222-2222-222222222222"

    def at(run: str, seq: int, kind: str, **data: Any) -> dict[str, Any]:
        return {**message(seq, kind, **data), "run_id": run}

    log = [at(RUN, 0, "RunLaunched", account="a", mode="pinned")]
    log.append(at(other, 0, "RunLaunched", account="a", mode="pinned"))
    log.append(at(RUN, 1, "PhaseStarted", phase="materialize"))
    seq = 2
    for index in range(6):
        for trial in (0, 1):
            log.append(
                at(
                    RUN,
                    seq,
                    "MaterializeTaskResult",
                    task_id=f"t{index}",
                    index=index,
                    invocation=1,
                    trial=trial,
                    output=f"answer {index}.{trial}",
                    duration_ms=3,
                )
            )
            seq += 1
        if index == 2:  # the same result again (a redelivered batch, a new seq)
            log.append(
                at(
                    RUN,
                    seq,
                    "MaterializeTaskResult",
                    task_id="t2",
                    index=2,
                    invocation=1,
                    trial=1,
                    output="answer 2.1 again",
                )
            )
            seq += 1
            log.append(at(other, 1, "RunUpdated", metadata={"team": "x"}))
            log.append(at(other, 2, "RunHalted", halt_reason="cost"))
        if index < 5:
            log.append(
                at(
                    RUN,
                    seq,
                    "MaterializeTaskAggregated",
                    task_id=f"t{index}",
                    index=index,
                    invocation=1,
                    score=index % 2,
                    outcome="pass",
                )
            )
            seq += 1
    log.append(at(RUN, seq, "PipelineFinished", status="ok", summary={"total": 6}))
    log.append(
        at(
            RUN,
            seq + 1,
            "MaterializeTaskAggregated",
            task_id="t5",
            index=5,
            invocation=1,
            score=1.0,
            outcome="pass",
        )
    )
    log.append(at(other, 3, "MaterializeTaskResult", task_id="t0", index=0, invocation=1))
    log.append(at(other, 4, "RunDeleted", deleted_by="a"))
    log.append(
        at(
            other,
            5,
            "MaterializeTaskAggregated",
            task_id="t0",
            index=0,
            invocation=1,
            score=0.0,
            outcome="fail",
        )
    )
    return log


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_batch_ends_where_its_messages_one_by_one_would(tmp_path: Path, backend: str) -> None:
    """``apply_batch`` folds statements across a batch; the view must not tell."""
    url = None
    if backend == "postgresql":
        url = machine_database_url()
        if url is None:
            pytest.skip("BW_TEST_DATABASE_URL is not set")
        reset_postgres(url)
    log = _history()
    last_seq = max(m["seq"] for m in log if m["run_id"] == RUN)
    digests = []
    for name, batch in (("one", 1), ("some", 7), ("all", len(log))):
        settings = Settings(data_dir=tmp_path / name, database_url=url)
        store = ProjectionStore(settings, f"gateway{name}", [RunsProjection()])
        try:
            items = list(enumerate(log, start=1))
            for start in range(0, len(items), batch):
                store.apply_many("runs", items[start : start + batch])
            digests.append(store.digest("runs"))
            row = store.read(lambda cur: views.get_run(cur, RUN))
            assert row["status"] == "ok" and row["last_seq"] == last_seq
            tasks = store.read(
                lambda cur: views.list_tasks(cur, RUN, outcomes=None, after=None, limit=20)
            )
            assert [t["output"] for t in tasks][2] == "answer 2.1 again"
            assert len(tasks) == 6
        finally:
            store.close()
    assert len(set(digests)) == 1, digests
