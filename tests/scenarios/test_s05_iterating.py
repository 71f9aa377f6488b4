"""Guide sections 5.1-5.3, "Iterating on failures", on the BFCL run of section 4: fork
to fix the scorer, replay on the same model for noise, replay on a bigger model.

Adapted in the models only: the run under study is section 4's anchor on the local
SmolLM2 (two tasks); 5.3's qwen/qwen3-235b-a22b-thinking is a fake OpenAI-compatible
server under that name that makes the reference calls for every task (the machine has
no bigger model).
"""

import re
from collections.abc import Iterator
from typing import Any

import pytest

from benchwright import Benchwright
from tests.scenarios.support import (
    LOCAL,
    RUN_TIMEOUT,
    Steps,
    bfcl_panelist,
    catalog_rows,
    needs_local_model,
    offthread,
    sut_of,
)
from tests.support.chat_oracle import ChatOracleServer

pytestmark = [pytest.mark.slow, pytest.mark.connected, needs_local_model]

TASKS = 2
BIGGER = "qwen/qwen3-235b-a22b-thinking"
FIX = (
    "Parallel function calling failures are order-sensitive. "
    "Rewrite score() in task_impl.py to compare sets of "
    "{name, canonical_args} instead of ordered lists."
)


@pytest.fixture(scope="module")
def bigger_model() -> Iterator[ChatOracleServer]:
    rows = catalog_rows("BFCL v4", "parallel")[:TASKS]
    server = bfcl_panelist(rows, right={r["task_id"] for r in rows}).start()
    yield server
    server.stop()


def phases(bw: Benchwright, run_id: str) -> list[str]:
    return [e.data.phase for e in bw.runs.events(run_id, types="PhaseStarted").data]


def task_ids(bw: Benchwright, run_id: str) -> list[str]:
    return [t.task_id for t in bw.runs.tasks(run_id).data]


async def test_the_run_under_study(bw: Benchwright, steps: Steps) -> None:
    """Section 4's anchor: the run whose failures sections 5.1-5.3 iterate on."""

    def anchor() -> Any:
        run = bw.runs.launch(
            request="Run BFCL v4 parallel function calling on smollm2",
            sut=LOCAL,
            limits={"run": {"cost": 15.0}},
            metadata={"purpose": "baseline", "model_family": "smollm2", "limit": TASKS},
        )
        return bw.runs.wait(run.id, timeout=RUN_TIMEOUT)

    run = await offthread(anchor)
    assert run.status == "ok", (run.phase, run.halt_reason, run.error)
    assert run.impl_id
    steps["run"] = run


async def test_5_1_fork_to_fix_the_scorer(bw: Benchwright, steps: Steps) -> None:
    run = steps.need("run")

    def fork() -> tuple[Any, Any]:
        fix = bw.runs.fork(
            run.id,
            description=FIX,
            from_phase="atomize",
            idempotency_key=f"fix-order-scorer-{run.id}",
        )
        again = bw.runs.fork(
            run.id,
            description=FIX,
            from_phase="atomize",
            idempotency_key=f"fix-order-scorer-{run.id}",
        )
        bw.runs.wait(fix.id, timeout=RUN_TIMEOUT)
        return bw.runs.get(fix.id), again

    fix, again = await offthread(fork)
    assert again.id == fix.id  # the idempotency key made the retry the same fork
    assert fix.status == "ok", (fix.phase, fix.halt_reason, fix.error)
    # Rewound to Atomize with the description as context.
    assert fix.mode == "fork" and fix.derived_from == run.id
    assert await offthread(phases, bw, fix.id) == ["fork", "atomize", "materialize", "report"]
    guidance = await offthread(bw.runs.events, fix.id, types="AgentTextEvent")
    assert any(FIX in (e.data.get("text") or "") for e in guidance.data)
    # Forks inherit the request, model and metadata ...
    assert fix.request == run.request and fix.model == run.model
    assert fix.metadata is not None and fix.metadata.get("purpose") == "baseline"
    # ... and produce a new impl.id because the code changed.
    assert fix.impl_id and fix.impl_id != run.impl_id
    assert await offthread(task_ids, bw, fix.id) == await offthread(task_ids, bw, run.id)
    steps["fix"] = fix


async def test_5_1_the_fix_is_what_the_description_asked(bw: Benchwright, steps: Steps) -> None:
    """The description asks to compare the calls as sets "instead of ordered lists": the
    fork's scorer must not be order-sensitive (the parent's compared sets already)."""
    run, fix = steps.need("run", "fix")

    def scorer(run_id: str) -> str:
        atomized = bw.runs.events(run_id, types="AtomizeArtifact").data
        return str([e.data.code for e in atomized if e.data.get("code")][-1])

    parent, fixed = await offthread(scorer, run.id), await offthread(scorer, fix.id)
    assert re.search(r"^ORDER_SENSITIVE = False", parent, re.M)
    setting = re.search(r"^ORDER_SENSITIVE = .*$", fixed, re.M)
    assert setting and setting.group().startswith("ORDER_SENSITIVE = False"), (
        f"the fork's scorer says {setting.group() if setting else None!r}"
    )


async def test_5_1_the_forks_impl_lives_in_the_registry(bw: Benchwright, steps: Steps) -> None:
    """The guide: "The fork's impl lives in the registry like any other": read it back there."""
    run, fix = steps.need("run", "fix")
    impl = await offthread(bw.registry.impls.get, fix.impl_id)
    assert impl.id == fix.impl_id and impl.benchmark_id == run.benchmark.id
    code = await offthread(bw.registry.impls.code, fix.impl_id)
    assert "class Task" in code
    parent = await offthread(bw.registry.impls.code, run.impl_id)
    assert code != parent


async def test_5_1_fork_and_parent_side_by_side_in_the_registry(
    bw: Benchwright, steps: Steps
) -> None:
    """The guide: "the two runs show up side by side in the registry with a 'derived
    from' edge"."""
    run, fix = steps.need("run", "fix")
    listed = await offthread(bw.registry.subsets.runs, run.subset.id)
    by_id = {r.id: r for r in listed.data}
    assert {run.id, fix.id} <= set(by_id)
    assert by_id[fix.id].derived_from == run.id
    assert (by_id[fix.id].impl_id, by_id[run.id].impl_id) == (fix.impl_id, run.impl_id)


async def test_5_2_replay_against_the_same_model(bw: Benchwright, steps: Steps) -> None:
    run = steps.need("run")

    def noise_check() -> tuple[Any, float, float]:
        rerun = bw.runs.launch(
            replay={"from_run": run.id},
        )
        bw.runs.wait(rerun.id, timeout=RUN_TIMEOUT)

        before = bw.runs.tasks(run.id).summary.pass_rate
        after = bw.runs.tasks(rerun.id).summary.pass_rate
        print(f"noise check: {before:.1%} → {after:.1%}")
        return bw.runs.get(rerun.id), before, after

    rerun, before, after = await offthread(noise_check)
    assert rerun.status == "ok", (rerun.phase, rerun.halt_reason, rerun.error)
    # Same tasks, same impl, same model: a true replay, so any change is noise.
    assert rerun.mode == "replay" and rerun.derived_from == run.id
    assert rerun.impl_id == run.impl_id and rerun.model == run.model
    assert rerun.fingerprint and rerun.fingerprint == run.fingerprint
    assert await offthread(phases, bw, rerun.id) == ["attach", "materialize", "report"]
    assert await offthread(task_ids, bw, rerun.id) == await offthread(task_ids, bw, run.id)
    assert 0.0 <= before <= 1.0 and 0.0 <= after <= 1.0
    steps["rerun"] = rerun


async def test_5_3_replay_against_a_different_model(
    bw: Benchwright, steps: Steps, bigger_model: ChatOracleServer
) -> None:
    run = steps.need("run")

    def bigger_run() -> tuple[Any, Any]:
        bigger = bw.runs.launch(
            replay={"from_run": run.id},
            sut=sut_of(bigger_model, BIGGER),
        )
        bw.runs.wait(bigger.id, timeout=RUN_TIMEOUT)

        bt = bw.runs.tasks(bigger.id).summary
        print(f"bigger model: {bt.pass_rate:.1%}")
        return bw.runs.get(bigger.id), bt

    bigger, bt = await offthread(bigger_run)
    assert bigger.status == "ok", (bigger.phase, bigger.halt_reason, bigger.error)
    assert bigger.derived_from == run.id
    # Shares the parent's impl.id: directly comparable.
    assert bigger.impl_id == run.impl_id
    assert bigger.model is not None and bigger.model.model == BIGGER
    assert bigger.fingerprint != run.fingerprint  # the model is part of the fingerprint
    assert await offthread(task_ids, bw, bigger.id) == await offthread(task_ids, bw, run.id)
    # Every task reached the bigger model, through the proxy, and it got them right.
    assert (bt.total, bt.passed, bt.pass_rate) == (TASKS, TASKS, 1.0)
    assert bigger_model.state["calls"] == TASKS
    steps["bigger"] = bigger


async def test_5_3_the_comparison_view_picks_the_replays_up(bw: Benchwright, steps: Steps) -> None:
    """The guide: "The comparison view at /registry/{benchmark} picks this up automatically":
    every run scored by the parent's impl, in the registry's same-impl view."""
    run, rerun, bigger = steps.need("run", "rerun", "bigger")
    scored = await offthread(bw.registry.impls.runs, run.impl_id)
    ids = {r.id for r in scored.data}
    assert {run.id, rerun.id, bigger.id} <= ids
