"""Run summaries keyed on (benchmark_id, subset_id, impl_id) with model as its own column.

The shape columns are filled only when a run is terminal, so anything keyed
on the run shape sees finished runs only.
"""

import json
from typing import Any

from benchwright_shared.projection import Projection, ViewCursor


class RunSummariesProjection(Projection):
    name = "run_summaries"
    version = 2
    tables = {
        "run_summaries": (
            "run_id TEXT PRIMARY KEY, account TEXT NOT NULL, model TEXT NOT NULL, "
            "launched_benchmark_id TEXT, launched_subset_id TEXT, impl_seen TEXT, "
            "benchmark_id TEXT, subset_id TEXT, impl_id TEXT, status TEXT NOT NULL, "
            "pass_rate DOUBLE PRECISION, summary TEXT"
        ),
    }
    indexes = ("run_summaries(benchmark_id, subset_id, impl_id)",)

    def apply(self, cur: ViewCursor, message: dict[str, Any]) -> None:
        kind, data, run_id = message.get("type"), message.get("data", {}), message.get("run_id")
        table = cur.table("run_summaries")
        if kind == "RunLaunched":
            sut = data.get("sut") or {}
            cur.execute(
                f"INSERT INTO {table} (run_id, account, model, launched_benchmark_id, "
                "launched_subset_id, impl_seen, status) VALUES (?, ?, ?, ?, ?, ?, 'running') "
                "ON CONFLICT (run_id) DO NOTHING",
                [
                    run_id,
                    data.get("account", ""),
                    f"{sut.get('provider')}/{sut.get('model')}" if sut else "",
                    data.get("benchmark_id"),
                    data.get("subset_id"),
                    data.get("impl_id"),
                ],
            )
        elif kind == "BenchmarkResolved":
            # A natural-language launch learns its benchmark (and maybe model) in Find.
            sut = data.get("sut") or {}
            cur.execute(
                f"UPDATE {table} SET launched_benchmark_id = ?, launched_subset_id = ?, "
                "model = COALESCE(NULLIF(?, ''), model) WHERE run_id = ?",
                [
                    data.get("benchmark_id"),
                    data.get("subset_id"),
                    f"{sut['provider']}/{sut['model']}" if sut else None,
                    run_id,
                ],
            )
        elif kind in ("SetupArtifact", "AtomizeArtifact", "DatasetTasksArtifact"):
            column = "launched_subset_id" if kind == "DatasetTasksArtifact" else "impl_seen"
            value = data.get("subset_id" if kind == "DatasetTasksArtifact" else "impl_id")
            if value:
                cur.execute(f"UPDATE {table} SET {column} = ? WHERE run_id = ?", [value, run_id])
        elif kind == "RunDeleted":
            cur.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
        elif kind == "PipelineFinished":
            summary = data.get("summary") or {}
            cur.execute(
                f"UPDATE {table} SET status = ?, pass_rate = ?, summary = ?, "
                "benchmark_id = launched_benchmark_id, subset_id = launched_subset_id, "
                "impl_id = impl_seen WHERE run_id = ?",
                [data.get("status"), summary.get("pass_rate"), json.dumps(summary), run_id],
            )
