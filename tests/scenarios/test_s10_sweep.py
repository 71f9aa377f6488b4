"""Guide section 10, "Cross-model sweeps": an anchor authors the scorer once, replays
fan it out across a model family, and the sweep is aggregated from the run ids
collected at launch; every run shares one ``impl.id``, so the registry's same-impl
comparison view holds the whole sweep.

Adapted in the models only: the four Qwen3 models are fake OpenAI-compatible servers
under those names, right on 1, 2, 3 and 4 of every 4 BFCL tasks (the reference calls
as JSON in the reply's text). ``metadata["limit"] = 8`` caps the anchor's 200 tasks;
the replays inherit those eight.
"""

from collections.abc import Iterator
from typing import Any

import pytest

from benchwright import Benchwright
from tests.scenarios.support import (
    RUN_TIMEOUT,
    Steps,
    bfcl_panelist,
    catalog_rows,
    offthread,
    sut_of,
)
from tests.support.chat_oracle import ChatOracleServer

pytestmark = [pytest.mark.slow, pytest.mark.connected]

TASKS = 8
SWEEP = "bfcl-pfc-qwen3-family-2026-04"
models = ["qwen/qwen3-8b", "qwen/qwen3-14b", "qwen/qwen3-32b", "qwen/qwen3-235b-a22b-thinking"]
# Model i is right on the tasks whose index mod 4 is at most i: 25%, 50%, 75%, 100%.
PASS_RATE = {m: (i + 1) / 4 for i, m in enumerate(models)}


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, ChatOracleServer]]:
    rows = catalog_rows("BFCL v4", "parallel")[:TASKS]
    started = {
        m: bfcl_panelist(rows, {r["task_id"] for k, r in enumerate(rows) if k % 4 <= i}).start()
        for i, m in enumerate(models)
    }
    yield started
    for server in started.values():
        server.stop()


def fan_out(bw: Benchwright, servers: dict[str, ChatOracleServer]) -> list[str]:
    # 1. Fan out. `replay` anchors all runs to the same impl from a
    #    reference run, so costs stay low after the first run authors the
    #    scorer.
    anchor = bw.runs.launch(
        request="Run BFCL v4 parallel function calling on " + models[0],
        sut=sut_of(servers[models[0]], models[0]),
        metadata={"limit": TASKS},
        idempotency_key=f"sweep-{SWEEP}-{models[0]}",
    )
    bw.runs.wait(anchor.id, timeout=RUN_TIMEOUT)

    peers = [anchor.id]
    for m in models[1:]:
        r = bw.runs.launch(
            replay={"from_run": anchor.id},
            sut=sut_of(servers[m], m),
            idempotency_key=f"sweep-{SWEEP}-{m}",
        )
        peers.append(r.id)
    return peers


def aggregate(bw: Benchwright, peers: list[str]) -> list[tuple[Any, ...]]:
    # 2. Wait for the sweep, then aggregate. The run ids collected at
    #    launch time are the sweep's correlation handle.
    rows = []
    for rid in peers:
        r = bw.runs.wait(rid, timeout=RUN_TIMEOUT)
        t = bw.runs.tasks(rid).summary
        rows.append(
            (r.model.identifier, t.pass_rate, t.passed, t.total, r.cost.billed.amount_cents)
        )
    rows.sort(key=lambda x: -x[1])

    print("BFCL v4 parallel function calling, Qwen3 family")
    for model, pr, p, n, cents in rows:
        print(f"  {model:<44} {pr:>6.1%}  {p}/{n}  ${cents / 100:.2f}")
    return rows


async def test_step_1_fan_out(
    bw: Benchwright, steps: Steps, servers: dict[str, ChatOracleServer]
) -> None:
    peers = await offthread(fan_out, bw, servers)
    runs = [await offthread(bw.runs.wait, rid, timeout=RUN_TIMEOUT) for rid in peers]
    anchor = runs[0]
    for m, run in zip(models, runs, strict=True):
        assert run.status == "ok", (m, run.phase, run.halt_reason, run.error)
        assert run.model is not None and run.model.model == m
        summary = (await offthread(bw.runs.tasks, run.id)).summary
        assert summary.total == TASKS and summary.pass_rate == pytest.approx(PASS_RATE[m]), m
    # One impl for the whole sweep: the anchor's.
    assert anchor.impl_id and {r.impl_id for r in runs} == {anchor.impl_id}
    assert all(r.derived_from == anchor.id and r.mode == "replay" for r in runs[1:])
    # The keys make the fan-out safe to retry: the same runs again, nothing new.
    assert await offthread(fan_out, bw, servers) == peers
    assert all(servers[m].state["calls"] == TASKS for m in models)
    steps.update(peers=peers, anchor=anchor)


async def test_step_2_aggregate(bw: Benchwright, steps: Steps) -> None:
    peers = steps.need("peers")
    rows = await offthread(aggregate, bw, peers)
    assert [row[1] for row in rows] == sorted(PASS_RATE.values(), reverse=True)
    assert rows[0][0].endswith(models[-1])
    assert all(row[3] == TASKS and isinstance(row[4], int) for row in rows)


async def test_the_same_impl_comparison_view_holds_the_sweep(bw: Benchwright, steps: Steps) -> None:
    """The guide: "Every run in the sweep shares impl.id, so the registry's same-impl comparison
    view 'just works' for the whole sweep"."""
    peers, anchor = steps.need("peers", "anchor")
    view = await offthread(bw.registry.impls.compare, anchor.impl_id)
    assert view.impl_id == anchor.impl_id
    assert sorted(run_id for row in view.data for run_id in row.run_ids) == sorted(peers)
    best = {row.model.split("/", 1)[-1]: row.best_pass_rate for row in view.data}
    assert best == pytest.approx(PASS_RATE)
