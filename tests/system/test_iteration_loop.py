"""The developer guide's section 5 iteration loop, through the SDK, on the embedded
platform: fork to fix the scorer (5.1), replay the fork against the same model for
noise (5.2), replay it against a bigger model (5.3).

The model under test is the offline local one (SmolLM2-135M through llama.cpp); the
machine has no bigger model, so 5.3's stands in as a fake OpenAI-compatible server that
answers every problem right.
"""

import asyncio
import importlib.util
import time
from typing import Any

import pytest

from benchwright import Benchwright
from benchwright_registry.catalog import builtin_catalog
from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer, gsm8k_oracle

pytestmark = [pytest.mark.slow, pytest.mark.connected]

TASKS = 3
LOCAL = {"model": "smollm2", "provider": "local"}
# ~10 s per GSM8K task for SmolLM2 on one thread, plus the pipeline: generous but bounded.
RUN_TIMEOUT = 600.0


def gsm8k_rows() -> list[dict[str, Any]]:
    bench = next(b for b in builtin_catalog() if b.name == "GSM8K")
    return bench.subsets[0].load_rows()


def phases(bw: Benchwright, run_id: str) -> list[str]:
    return [e.data.phase for e in bw.runs.events(run_id, types="PhaseStarted").data]


def task_ids(bw: Benchwright, run_id: str) -> list[str]:
    return [t.task_id for t in bw.runs.iter_tasks(run_id)]


def iteration_loop(bw: Benchwright, bigger_model: FakeOpenAIServer) -> dict[str, float]:
    """Section 5, step by step, as a user would write it; returns each step's seconds."""
    took: dict[str, float] = {}

    # The anchor: a natural-language run of the local model.
    started = time.perf_counter()
    run = bw.runs.launch(request=f"Run GSM8K, first {TASKS} problems", sut=LOCAL, driver="builtin")
    anchor = bw.runs.wait(run.id, timeout=RUN_TIMEOUT, poll_interval=0.5)
    took["anchor"] = time.perf_counter() - started
    assert anchor.status == "ok", (anchor.phase, anchor.halt_reason, anchor.summary)
    assert anchor.impl_id
    assert bw.runs.tasks(anchor.id).summary.total == TASKS

    # 5.1 Fork to fix the scorer: rewinds to Atomize, mints a new impl.
    started = time.perf_counter()
    key = f"fix-zero-shot-{anchor.id}"
    description = "Answer zero-shot: no worked examples."
    fix = bw.runs.fork(
        anchor.id, description=description, from_phase="atomize", idempotency_key=key
    )
    again = bw.runs.fork(
        anchor.id, description=description, from_phase="atomize", idempotency_key=key
    )
    assert again.id == fix.id, "a retried fork with the same idempotency key made a second run"
    fix = bw.runs.wait(fix.id, timeout=RUN_TIMEOUT, poll_interval=0.5)
    took["5.1 fork"] = time.perf_counter() - started
    assert fix.status == "ok", (fix.phase, fix.halt_reason, fix.summary)
    assert fix.mode == "fork" and fix.derived_from == anchor.id
    assert fix.impl_id and fix.impl_id != anchor.impl_id
    assert fix.model == anchor.model  # forks inherit the model
    assert phases(bw, fix.id) == ["fork", "atomize", "materialize", "report"]
    atomized = bw.runs.events(fix.id, types="AtomizeArtifact").data
    own = [e for e in atomized if not e.data.get("inherited_from")]
    assert own and own[-1].data.impl_id == fix.impl_id
    assert "zero-shot" in own[-1].data.code  # the description reached the scorer
    assert task_ids(bw, fix.id) == task_ids(bw, anchor.id)

    # 5.2 Replay against the same model: same tasks, same impl, fresh samples.
    started = time.perf_counter()
    rerun = bw.runs.launch(replay={"from_run": fix.id})
    rerun = bw.runs.wait(rerun.id, timeout=RUN_TIMEOUT, poll_interval=0.5)
    took["5.2 replay, same model"] = time.perf_counter() - started
    assert rerun.status == "ok", (rerun.phase, rerun.halt_reason, rerun.summary)
    assert rerun.derived_from == fix.id
    assert rerun.impl_id == fix.impl_id
    assert rerun.model == fix.model
    assert rerun.fingerprint and rerun.fingerprint == fix.fingerprint  # a true replay
    assert phases(bw, rerun.id) == ["attach", "materialize", "report"]
    assert task_ids(bw, rerun.id) == task_ids(bw, fix.id)
    before = bw.runs.tasks(fix.id).summary.pass_rate
    after = bw.runs.tasks(rerun.id).summary.pass_rate
    assert before is not None and after is not None
    print(f"noise check: {before:.1%} → {after:.1%}")

    # 5.3 Replay against a different (bigger) model: same tasks and scorer.
    started = time.perf_counter()
    sut = {"model": "bigger", "provider": "openai_compatible", "api_base": bigger_model.base_url}
    bigger = bw.runs.launch(replay={"from_run": fix.id}, sut=sut)
    bigger = bw.runs.wait(bigger.id, timeout=RUN_TIMEOUT, poll_interval=0.5)
    took["5.3 replay, bigger model"] = time.perf_counter() - started
    assert bigger.status == "ok", (bigger.phase, bigger.halt_reason, bigger.summary)
    assert bigger.derived_from == fix.id
    assert bigger.impl_id == fix.impl_id
    assert bigger.model is not None and bigger.model.model == "bigger"
    assert bigger.fingerprint and bigger.fingerprint != fix.fingerprint  # the model differs
    assert task_ids(bw, bigger.id) == task_ids(bw, fix.id)
    bt = bw.runs.tasks(bigger.id).summary
    assert bt.total == TASKS and bt.pass_rate == 1.0
    print(f"bigger model: {bt.pass_rate:.1%}")
    assert bigger_model.state["calls"] == TASKS  # every task reached it, through the proxy

    # Everything above went by the one fixed scorer, except the anchor.
    assert bw.runs.get(fix.id).impl_id == rerun.impl_id == bigger.impl_id != anchor.impl_id
    return took


@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None,
    reason="the loop scores the local model (scripts/bootstrap.sh --model)",
)
async def test_guide_section_5_iteration_loop(platform: Platform) -> None:
    if platform.settings.database_url:
        pytest.skip("the guide's loop runs on the embedded default")
    assert platform.client is not None
    bigger_model = FakeOpenAIServer(gsm8k_oracle(gsm8k_rows()[:TASKS], correct_every=1)).start()
    bw = Benchwright(api_key=platform.token, base_url=str(platform.client.base_url).rstrip("/"))
    started = time.perf_counter()
    try:
        # The platform shares this event loop: the sync SDK must run on another thread.
        took = await asyncio.to_thread(iteration_loop, bw, bigger_model)
    finally:
        bw.close()
        bigger_model.stop()
    steps = ", ".join(f"{step} {seconds:.1f}s" for step, seconds in took.items())
    print(f"iteration loop: {time.perf_counter() - started:.1f}s ({steps})")
