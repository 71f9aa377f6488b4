"""A RunTasks sweep with ``harness: inspect`` in a real local sandbox (bubblewrap where
it runs): Inspect's libraries come from the read-only harness mount, the model through
the sandbox's forward to the proxy, and each sample comes back as a task result."""

import json
import shutil
from pathlib import Path

import pytest

from benchwright_sandbox_manager.backends import get_backend
from benchwright_sandbox_manager.runtime import runtime_files
from benchwright_sandbox_manager.sweep import sweep
from benchwright_shared.contracts import RunTasks, TaskSpec
from tests.sandbox_manager.test_bench_inspect import ARITH, SUMS, WRONG, answer
from tests.support.fake_openai import FakeOpenAIServer

pytest.importorskip("inspect_ai", reason="the inspect extra is not installed")


async def test_an_inspect_sweep_runs_in_the_sandbox(tmp_path: Path) -> None:
    model = FakeOpenAIServer(answer).start()
    backend = get_backend("local", tmp_path)
    try:
        await backend.create("s1")
        files = {**runtime_files(), "arith.py": ARITH}
        rows = [
            {"id": f"sum-{a}-{b}", "input": f"What is {a} + {b}?", "target": str(a + b)}
            for a, b in SUMS
        ]
        files["data/arith.jsonl"] = "\n".join(json.dumps(r) for r in rows)
        for name, text in files.items():
            await backend.put_file("s1", name, text.encode())
        env = {
            "BW_MODEL_PROXY_URL": model.base_url.removesuffix("/v1"),
            "BW_MODEL_PROXY_KEY": "bw-run-fake-key",
            "BW_MODEL_MODEL": "calc",
        }
        argv = ["python", "-E", "-s", "bench_inspect.py", "list", "--task", "arith.py"]
        listed = await backend.exec("s1", argv, stdin=None, env=env, timeout_s=120)
        assert listed.exit_code == 0, listed.stderr
        assert json.loads(listed.stdout)["samples"] == len(rows)
        written = await backend.get_file("s1", "inspect_samples.json")
        assert json.loads(written) == [r["id"] for r in rows]

        command = RunTasks(
            command_id="c1",
            run_id="run_1",
            sandbox_id="s1",
            tasks=[TaskSpec(index=i, trial=0) for i in range(len(SUMS))],
            concurrency=2,
            timeout_s=120,
            env=env,
            harness="inspect",
            harness_task="arith.py",
        )
        got = [r async for batch in sweep(backend, command, backend.limits) for r in batch]
        assert sorted(r.index for r in got) == list(range(len(SUMS)))
        for r in got:
            a, b = SUMS[r.index]
            assert r.task_id == f"sum-{a}-{b}"
            assert r.outcome == ("fail" if (a, b) in WRONG else "pass"), r
        assert model.state["calls"] == len(SUMS)
        if shutil.which("bwrap"):  # CI has it: there the sweep ran isolated
            assert getattr(backend, "isolation", None) == "bubblewrap"
    finally:
        await backend.kill("s1")
        model.stop()
