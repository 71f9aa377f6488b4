"""Guide section 7, "Distilling a hard subset from a sweep": run a five-model panel
(one natural-language anchor, four replays), bucket the failures, publish the tasks
every model failed as a new benchmark and subset, inherit the scorer from the panel's
runs, and run and publish the gauntlet once.

Adapted in the models: the panel keeps the guide's model names, each served by a
fake OpenAI-compatible server with a scripted accuracy (the machine reaches no
provider). ``metadata["limit"] = 5`` caps the anchor (the guide runs MMLU Pro's full
set); the replays inherit those five tasks. Two of them (indices 2 and 3) are failed
by every panelist; so the gauntlet has two rows.

And in one phrase of the request: the catalog has MMLU but not MMLU Pro (its data is
not on this machine), and a request never silently runs another benchmark than the
one it names. The guide's literal request is refused, naming MMLU as the nearest
(step 0); the panel's anchor then says "or the nearest benchmark", runs MMLU and
records that it stood in for MMLU Pro.
"""

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchwright import Benchwright
from tests.scenarios.support import (
    RUN_TIMEOUT,
    Steps,
    catalog_rows,
    mmlu_panelist,
    offthread,
    sut_of,
)
from tests.support.chat_oracle import ChatOracleServer

pytestmark = [pytest.mark.slow, pytest.mark.connected]

TASKS = 5
panel = [
    "openai/gpt-4o-mini",
    "anthropic/claude-haiku-4-5",
    "google/gemini-2.5-flash",
    "qwen/qwen3-32b",
    "meta-llama/llama-3.3-70b-instruct",
]
# Which of the first five MMLU rows each panelist gets right: none gets 2 or 3.
RIGHT = {
    "openai/gpt-4o-mini": {0, 1},
    "anthropic/claude-haiku-4-5": {0},
    "google/gemini-2.5-flash": {1, 4},
    "qwen/qwen3-32b": {0, 1},
    "meta-llama/llama-3.3-70b-instruct": {4},
}
HARD = [2, 3]


@pytest.fixture(scope="module")
def mmlu_rows() -> list[dict[str, Any]]:
    return catalog_rows("MMLU", "all")[:TASKS]


@pytest.fixture(scope="module")
def models(mmlu_rows: list[dict[str, Any]]) -> Iterator[dict[str, ChatOracleServer]]:
    servers = {
        m: mmlu_panelist(mmlu_rows, {mmlu_rows[i]["task_id"] for i in RIGHT[m]}).start()
        for m in panel
    }
    yield servers
    for server in servers.values():
        server.stop()


def step_1_run_the_panel(bw: Benchwright, models: dict[str, ChatOracleServer]) -> list[Any]:
    # 1. Run the panel: one natural-language anchor authors the scorer,
    #    then replays fan the same impl out across the panel.
    anchor = bw.runs.launch(
        request="Run MMLU Pro (full), or the nearest benchmark, on " + panel[0],
        sut=sut_of(models[panel[0]], panel[0]),
        metadata={"sweep": "hard-mmlu-2026-04", "model": panel[0], "limit": TASKS},
        idempotency_key=f"hard-mmlu-{panel[0]}",
    )
    bw.runs.wait(anchor.id, timeout=RUN_TIMEOUT)
    runs = [anchor] + [
        bw.runs.launch(
            replay={"from_run": anchor.id},
            sut=sut_of(models[m], m),
            metadata={"sweep": "hard-mmlu-2026-04", "model": m},
            idempotency_key=f"hard-mmlu-{m}",
        )
        for m in panel[1:]
    ]
    for r in runs:
        bw.runs.wait(r.id, timeout=RUN_TIMEOUT)
    return runs


def step_2_bucket_failures(bw: Benchwright, runs: list[Any], workdir: Path) -> dict[str, Any]:
    # 2. Bucket failures across the panel.
    fail_counts: Counter[str] = Counter()
    payloads = {}
    for r in runs:
        t = bw.runs.tasks(r.id, passed=False)
        for row in t.data:
            fail_counts[row.task_id] += 1
            if row.task_id not in payloads:
                p = t.payload(row.id)
                payloads[row.task_id] = {
                    "task_id": row.task_id,
                    "input": p.input,
                    "expected": p.expected,
                }
    hard = [payloads[tid] for tid, n in fail_counts.items() if n == len(panel)]
    print(f"{len(hard)} universally hard tasks")

    # Keep the sweep manifest: run ids are the durable correlation
    # handle (launch metadata is behavioral config, not a queryable tag).
    with open(workdir / "sweep-manifest.json", "w") as f:
        json.dump({"sweep": "hard-mmlu-2026-04", "runs": [r.id for r in runs]}, f)
    return {"hard": hard, "fail_counts": fail_counts}


def step_3_scaffold(bw: Benchwright, hard: list[dict[str, Any]]) -> tuple[Any, Any]:
    # 3. Scaffold the new benchmark + subset.
    gauntlet = bw.benchmarks.create(
        name="MMLU Pro Frontier Gauntlet",
        description="MMLU Pro tasks that every model in the 2026-04 frontier panel failed.",
        category="reasoning",
        tags=["curated", "hard", "regression"],
    )
    sub = bw.benchmarks.subsets.create(
        benchmark=gauntlet.id,
        slug="v1-2026-04",
        name="Gauntlet v1 (April 2026)",
        description=f"Distilled from a {len(panel)}-model panel on MMLU Pro full.",
        tasks=hard,
    )
    return gauntlet, sub


async def test_step_0_a_benchmark_the_catalog_lacks_is_refused(
    bw: Benchwright, models: dict[str, ChatOracleServer]
) -> None:
    def literal() -> Any:
        run = bw.runs.launch(
            request="Run MMLU Pro (full) on " + panel[0],
            sut=sut_of(models[panel[0]], panel[0]),
            metadata={"limit": TASKS},
        )
        bw.runs.wait(run.id, timeout=RUN_TIMEOUT)
        return bw.runs.get(run.id)

    run = await offthread(literal)
    assert run.status == "error" and run.error is not None, run
    assert run.error.type == "request_not_understood"
    assert "no 'MMLU Pro'" in run.error.detail and "MMLU" in run.error.detail
    assert "or the nearest benchmark" in run.error.detail
    assert models[panel[0]].state["calls"] == 0  # nothing ran


async def test_step_1_run_the_panel(
    bw: Benchwright, steps: Steps, models: dict[str, ChatOracleServer]
) -> None:
    runs = await offthread(step_1_run_the_panel, bw, models)
    runs = [await offthread(bw.runs.get, r.id) for r in runs]
    anchor = runs[0]
    for model, run in zip(panel, runs, strict=True):
        assert run.status == "ok", (model, run.phase, run.halt_reason, run.error)
        assert run.model is not None and run.model.model == model
        assert run.metadata is not None and run.metadata.get("sweep") == "hard-mmlu-2026-04"
    assert anchor.benchmark is not None and anchor.benchmark.name == "MMLU"
    assert anchor.benchmark.substituted_for == "MMLU Pro"  # said, not silent
    # The replays fan the anchor's impl out: one scorer, every model.
    assert {r.impl_id for r in runs} == {anchor.impl_id}
    assert all(r.derived_from == anchor.id for r in runs[1:])
    for model, run in zip(panel, runs, strict=True):
        summary = (await offthread(bw.runs.tasks, run.id)).summary
        assert (summary.total, summary.passed) == (TASKS, len(RIGHT[model])), model
        assert models[model].state["calls"] == TASKS
    # A retried sweep re-attaches: the same idempotency keys, the same runs.
    again = await offthread(step_1_run_the_panel, bw, models)
    assert [r.id for r in again] == [r.id for r in runs]
    steps["runs"] = runs


async def test_step_2_bucket_failures(
    bw: Benchwright, steps: Steps, workdir: Path, mmlu_rows: list[dict[str, Any]]
) -> None:
    runs = steps.need("runs")
    bucketed = await offthread(step_2_bucket_failures, bw, runs, workdir)
    hard = bucketed["hard"]
    assert [h["task_id"] for h in hard] == [mmlu_rows[i]["task_id"] for i in HARD]
    for h, i in zip(hard, HARD, strict=True):
        assert h["input"] == mmlu_rows[i]["input"] and h["expected"] == mmlu_rows[i]["expected"]
    manifest = json.loads((workdir / "sweep-manifest.json").read_text())
    assert manifest["runs"] == [r.id for r in runs]
    steps["hard"] = hard


async def test_step_3_scaffold_the_gauntlet(bw: Benchwright, steps: Steps) -> None:
    hard = steps.need("hard")
    gauntlet, sub = await offthread(step_3_scaffold, bw, hard)
    assert gauntlet.id.startswith("bm_") and gauntlet.visibility == "private"
    assert sub.benchmark_id == gauntlet.id and sub.task_count == len(HARD)
    rows = await offthread(bw.registry.subsets.tasks, sub.id)
    assert [r["task_id"] for r in rows.data] == [h["task_id"] for h in hard]
    steps.update(gauntlet=gauntlet, sub=sub)


async def test_step_4_inherit_the_scorer(bw: Benchwright, steps: Steps) -> None:
    runs, gauntlet, sub = steps.need("runs", "gauntlet", "sub")

    def inherit() -> Any:
        # 4. Inherit the scorer from the parent runs (they all used the same impl).
        return bw.impls.create_from_run(
            from_run=runs[0].id,
            benchmark=gauntlet.id,
            subset=sub.id,
            label="inherited from mmlu-pro/official",
        )

    impl = await offthread(inherit)
    assert impl.id.startswith(f"{gauntlet.id}:") and impl.subset_id == sub.id
    assert impl.label == "inherited from mmlu-pro/official"
    # The same scorer, byte for byte, as the panel's runs used.
    atomized = await offthread(bw.runs.events, runs[0].id, types="AtomizeArtifact")
    code = [e.data.code for e in atomized.data if e.data.get("code")][-1]
    assert await offthread(bw.registry.impls.code, impl.id) == code
    steps["impl"] = impl


async def test_step_5_publish(
    bw: Benchwright, steps: Steps, models: dict[str, ChatOracleServer]
) -> None:
    gauntlet, sub = steps.need("gauntlet", "sub")

    def publish() -> Any:
        # 5. Publish: run the gauntlet once and flip that run public
        #    (visibility is run-derived, §6.5).
        ref = bw.runs.launch(
            request="Run the MMLU Pro Frontier Gauntlet on qwen3-32b",
            sut=sut_of(models["qwen/qwen3-32b"], "qwen/qwen3-32b"),
        )
        bw.runs.wait(ref.id, timeout=RUN_TIMEOUT)
        bw.runs.update(ref.id, visibility="public")
        print(f"live at https://benchwright.ai/registry/{gauntlet.id}")
        return bw.runs.get(ref.id)

    ref = await offthread(publish)
    assert ref.status == "ok", (ref.phase, ref.halt_reason, ref.error)
    assert ref.benchmark is not None and ref.benchmark.id == gauntlet.id
    assert ref.subset is not None and ref.subset.id == sub.id
    summary = (await offthread(bw.runs.tasks, ref.id)).summary
    assert (summary.total, summary.passed) == (len(HARD), 0)  # still hard for qwen3-32b
    assert ref.visibility == "public"
    for _ in range(100):
        shown = await offthread(bw.registry.benchmarks.get, gauntlet.id)
        if shown.visibility == "public":
            break
        await asyncio.sleep(0.1)
    assert shown.visibility == "public"
    # First-class: its own leaderboard, seeded by the reference run.
    for _ in range(100):
        board = await offthread(bw.registry.subsets.leaderboard, sub.id)
        if board.data:
            break
        await asyncio.sleep(0.1)
    assert [(row.run_id, row.pass_rate) for row in board.data] == [(ref.id, 0.0)]
