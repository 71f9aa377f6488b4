"""Guide section 4, "Run an existing benchmark against a model" and "Reading results":
find the benchmark, anchor it with a natural-language run, replay the anchor on
another model, then read the summary, the failures and their payloads.

Adapted in the models only: qwen/qwen3-32b@openrouter is the local SmolLM2
(``smollm2``), and the replay's qwen/qwen3-14b is the same local weights under their
other name, ``smollm2-135m-instruct``. ``metadata["limit"] = 2`` keeps SmolLM2's share
small; the replay inherits the anchor's two tasks.
"""

from typing import Any

import pytest

from benchwright import Benchwright
from tests.scenarios.support import (
    LOCAL,
    LOCAL_ALIAS,
    RUN_TIMEOUT,
    Steps,
    needs_local_model,
    offthread,
)

pytestmark = [pytest.mark.slow, pytest.mark.connected, needs_local_model]

TASKS = 2


def anchor_then_replay(bw: Benchwright) -> dict[str, Any]:
    """The section's first program."""
    # First run against a benchmark: natural language. The pipeline
    # authors the scorer and registers the run in the catalog.
    anchor = bw.runs.launch(
        request="Run BFCL v4 parallel function calling on smollm2",
        sut=LOCAL,
        limits={"run": {"cost": 15.0}},
        metadata={"purpose": "baseline", "model_family": "smollm2", "limit": TASKS},
    )
    bw.runs.wait(anchor.id, timeout=RUN_TIMEOUT)

    # Every run after that: replay the anchor. Same tasks, same impl,
    # no authoring cost. Override the model to compare another SUT.
    run = bw.runs.launch(
        replay={"from_run": anchor.id},
        sut=LOCAL_ALIAS,
    )
    bw.runs.wait(run.id, timeout=RUN_TIMEOUT)
    return {"anchor": bw.runs.get(anchor.id), "run": bw.runs.get(run.id)}


def read_results(bw: Benchwright, run_id: str) -> dict[str, Any]:
    """The "Reading results" snippets, collecting what they print."""
    printed: list[str] = []
    t = bw.runs.tasks(run_id)
    summary = t.summary
    printed.append(str(summary))

    t = bw.runs.tasks(run_id, passed=False)
    payloads = []
    for task in t.data[:5]:
        full = t.payload(task.id)
        payloads.append((task, full))
        printed.append(f"{task.task_id} → {full.output[:120]}")
    return {"summary": summary, "failures": t, "payloads": payloads, "printed": printed}


async def test_find_the_benchmark(bw: Benchwright) -> None:
    """``bm = bw.registry.benchmarks.find(name="BFCL v4")``."""
    bm = await offthread(bw.registry.benchmarks.find, name="BFCL v4")
    names = [b.name for b in (await offthread(bw.registry.benchmarks.list, limit=100)).data]
    assert bm is not None, f'find(name="BFCL v4") found nothing; the registry names: {names}'
    assert "function-calling" in bm.tags


async def test_anchor_then_replay_on_another_model(bw: Benchwright, steps: Steps) -> None:
    found = await offthread(anchor_then_replay, bw)
    steps.update(found)
    anchor, run = found["anchor"], found["run"]
    assert anchor.status == "ok", (anchor.phase, anchor.halt_reason, anchor.error)
    assert anchor.benchmark is not None and anchor.benchmark.name == "BFCL v4"
    assert anchor.subset is not None and anchor.subset.slug == "parallel"
    assert anchor.impl_id and anchor.metadata is not None
    assert anchor.metadata["purpose"] == "baseline"
    assert anchor.limits == {"run": {"cost": 15.0}}

    assert run.status == "ok", (run.phase, run.halt_reason, run.error)
    assert run.derived_from == anchor.id and run.mode == "replay"
    # The replay shares the anchor's impl: scored by byte-identical code.
    assert run.impl_id == anchor.impl_id
    assert run.model is not None and run.model.model == LOCAL_ALIAS["model"]
    ran = [t.task_id for t in (await offthread(bw.runs.tasks, run.id)).data]
    assert ran == [t.task_id for t in (await offthread(bw.runs.tasks, anchor.id)).data]
    assert len(ran) == TASKS


async def test_reading_results(bw: Benchwright, steps: Steps) -> None:
    run = steps.need("run")
    read = await offthread(read_results, bw, run.id)
    print("\n".join(read["printed"]))
    summary = read["summary"]
    # One call answers "how did it do?".
    assert summary.total == TASKS
    assert summary.passed + summary.failed + summary.errored == TASKS
    assert summary.pass_rate == pytest.approx(summary.passed / TASKS)
    assert summary.duration_ms_p50 is not None and summary.duration_ms_p95 is not None
    assert summary.duration_ms_p50 <= summary.duration_ms_p95

    # passed=False lists the rest, slim; .payload() has the full input/expected/output.
    failures = read["failures"]
    assert len(failures.data) == TASKS - summary.passed
    assert failures.summary == summary  # the summary is run-wide, not the filtered page
    for task, full in read["payloads"]:
        assert task.outcome != "pass"
        assert full.task_id == task.task_id
        assert full.input["functions"] and full.expected  # BFCL's functions and reference calls
        assert isinstance(full.output, str)


async def test_same_impl_comparison_view(bw: Benchwright, steps: Steps) -> None:
    """The guide: "The replay shares the anchor's impl, so the registry's same-impl comparison
    view picks both up automatically": ``bw.registry.impls.runs(imp_id)``."""
    anchor, run = steps.need("anchor", "run")
    scored = await offthread(bw.registry.impls.runs, anchor.impl_id)
    ids = {r.id for r in scored.data}
    assert {anchor.id, run.id} <= ids


async def test_the_runs_are_registered_in_the_catalog(bw: Benchwright, steps: Steps) -> None:
    """The guide: "The pipeline authors the scorer and registers the run in the
    catalog": both runs are listed against the subset, the model its own column."""
    anchor, run = steps.need("anchor", "run")
    listed = await offthread(bw.registry.subsets.runs, anchor.subset.id)
    by_id = {r.id: r for r in listed.data}
    assert {anchor.id, run.id} <= set(by_id)
    assert by_id[run.id].derived_from == anchor.id
    assert by_id[anchor.id].model.endswith(LOCAL["model"])
    assert by_id[run.id].model.endswith(LOCAL_ALIAS["model"])
