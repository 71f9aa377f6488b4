"""The Inspect bridge end to end (issue 14): a team's Inspect task file with its local
dataset runs as a Benchwright run (``harness: "inspect"``) on the embedded platform,
through the model proxy, offline; its scores are the ones plain ``inspect eval`` gives,
and its tasks, trials, events and summary read as any run's."""

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import read_eval_log
from typer.testing import CliRunner

from benchwright import AsyncBenchwright
from benchwright.cli import app
from tests.conftest import Platform
from tests.sandbox_manager.test_bench_inspect import (
    ARITH,
    SUMS,
    WRONG,
    answer,
    plain_inspect_eval,
)
from tests.support.fake_openai import FakeOpenAIServer
from tests.system.test_leaderboards import finish

pytestmark = [pytest.mark.slow, pytest.mark.connected]

ROWS = [
    {"id": f"sum-{a}-{b}", "input": f"What is {a} + {b}?", "target": str(a + b)} for a, b in SUMS
]
FILES = {"arith.py": ARITH, "data/arith.jsonl": "\n".join(json.dumps(r) for r in ROWS)}


@pytest.fixture
def model() -> Any:
    server = FakeOpenAIServer(answer).start()
    yield server
    server.stop()


def sut(model: FakeOpenAIServer) -> dict[str, Any]:
    return {"model": "calc", "provider": "openai_compatible", "api_base": model.base_url}


async def test_an_inspect_task_file_runs_as_a_run(
    platform: Platform, bw: AsyncBenchwright, model: FakeOpenAIServer, tmp_path: Path
) -> None:
    task = {"task": "arith.py@arith", "files": FILES}
    launched = await bw.runs.launch(
        harness="inspect",
        sut=sut(model),
        metadata={"inspect_harness": task},
        trials={"plan": {"k": 2}, "aggregator": {"name": "mean"}},
    )
    run = await finish(bw, launched.id)
    # Every sample of every epoch made its one call, through the run's proxy.
    assert model.state["calls"] == len(SUMS) * 2
    assert run.benchmark.name == "inspect:arith.py@arith"
    # The files went to the sandbox; the run keeps their names and digest only.
    kept = run.metadata["inspect_harness"]
    assert kept["files"] == sorted(FILES) and len(kept["files_sha256"]) == 64
    assert run.summary.total == len(SUMS)
    assert run.summary.passed == len(SUMS) - len(WRONG)

    page = await bw.runs.tasks(run.id, limit=100)
    rows = {t.task_id: t for t in page.data}
    assert set(rows) == {r["id"] for r in ROWS}
    for a, b in SUMS:
        row = rows[f"sum-{a}-{b}"]
        assert row.outcome == ("fail" if (a, b) in WRONG else "pass")
        assert len(row.trials) == 2  # Inspect's epochs, one trial each

    # The same samples under plain `inspect eval`: the same value for every (id, epoch).
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    reference = await asyncio.to_thread(
        plain_inspect_eval, tmp_path, model, "arith.py", "--epochs", "2"
    )
    assert reference.samples is not None
    want = {(str(s.id), s.epoch - 1): s.scores["match"].value for s in reference.samples}
    events = await bw.runs.events(run.id, types=["MaterializeTaskResult"], limit=500)
    got = {(e.data.task_id, e.data.trial): e.data.score_meta["inspect_value"] for e in events.data}
    assert got == want

    # Inspect's own logs are the run's artifacts: downloadable, and Inspect reads them.
    assert platform.client is not None
    listing = await platform.client.get(
        f"/v1/runs/{run.id}/artifacts", params={"type": "inspect_log"}
    )
    logs = listing.json()["data"]
    assert logs and all(a["name"].endswith(".eval") for a in logs)
    epochs = set()
    for artifact in logs:
        content = await platform.client.get(f"/v1/runs/{run.id}/artifacts/{artifact['id']}/content")
        assert content.status_code == 200 and len(content.content) == artifact["size_bytes"]
        path = tmp_path / artifact["name"]
        path.write_bytes(content.content)
        log = await asyncio.to_thread(read_eval_log, str(path))
        assert log.status == "success" and log.samples is not None
        epochs |= {(str(s.id), s.epoch) for s in log.samples}
    assert epochs == {(r["id"], e) for r in ROWS for e in (1, 2)}


@pytest.mark.embedded_only
async def test_inspect_launches_are_checked_before_anything_runs(platform: Platform) -> None:
    client = platform.client
    assert client is not None
    body = {"harness": "inspect", "sut": {"model": "m", "provider": "openrouter"}}

    async def refused(extra: dict[str, Any]) -> dict[str, Any]:
        answer = await client.post("/v1/runs", json=body | extra)
        assert answer.status_code == 400, answer.text
        assert answer.headers["content-type"].startswith("application/problem+json")
        problem: dict[str, Any] = answer.json()
        return problem

    missing = await refused({})
    assert missing["field"] == "metadata.inspect_harness"
    hub = await refused({"metadata": {"inspect_harness": {"task": "inspect_evals/drop"}}})
    assert hub["field"] == "metadata.inspect_harness.task" and "inspect_evals/drop" in hub["detail"]
    escape = {"task": "a.py", "files": {"a.py": "", "../etc/passwd": "x"}}
    assert (await refused({"metadata": {"inspect_harness": escape}}))["field"] == (
        "metadata.inspect_harness.files"
    )
    lost = {"task": "a.py@t", "files": {"b.py": ""}}
    assert "'a.py'" in (await refused({"metadata": {"inspect_harness": lost}}))["detail"]
    other = await refused({"harness": "lmeval"})
    assert other["field"] == "harness" and "inspect" in other["detail"]
    pinned = await refused({"benchmark": "GSM8K", "metadata": {"inspect_harness": lost}})
    assert pinned["field"] == "benchmark"


@pytest.mark.embedded_only
async def test_the_cli_sends_a_task_file_with_its_folder(
    platform: Platform,
    model: FakeOpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert platform.client is not None
    monkeypatch.setenv("BW_PAT", platform.token)
    monkeypatch.setenv("BW_BASE_URL", str(platform.client.base_url).rstrip("/"))
    monkeypatch.setenv("BW_CONFIG", str(tmp_path / "config.toml"))
    folder = tmp_path / "evals"
    for name, text in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "arith.cpython-312.pyc").write_bytes(b"\0")
    launch = [
        "run",
        "--harness",
        "inspect",
        "--harness-task",
        f"{folder}/arith.py@arith",
        "--harness-arg",
        "epochs=1",
        "--model",
        "calc@openai_compatible",
        "--api-base",
        model.base_url,
        "--limit",
        "3",
        "-o",
        "json",
    ]
    done = await asyncio.to_thread(CliRunner().invoke, app, launch)
    assert done.exit_code == 0, done.output
    document = json.loads(done.stdout)
    assert document["run"]["status"] == "ok"
    assert document["summary"]["total"] == 3
    kept = document["run"]["metadata"]["inspect_harness"]
    assert kept["files"] == sorted(FILES) and kept["args"] == {"epochs": 1}

    # A task file that is not there is a one-line usage error, before any request.
    missing = await asyncio.to_thread(
        CliRunner().invoke, app, ["run", "--harness", "inspect", "--harness-task", "nope.py"]
    )
    assert missing.exit_code != 0 and "nope.py: no such file" in missing.stderr


async def test_the_guides_inspect_evals_example_runs_offline(
    platform: Platform, bw: AsyncBenchwright
) -> None:
    """``inspect_evals/mmlu_0_shot`` on abstract_algebra, 50 samples: inspect_evals' own
    prompt and ``choice()`` scorer, fed the catalog's rows instead of the hub's."""
    from benchwright_registry.catalog.mmlu import load_mmlu_subject

    rows = load_mmlu_subject("abstract_algebra")
    verdicts: dict[str, bool] = {}

    def student(prompt: Any) -> str:
        text = prompt if isinstance(prompt, str) else json.dumps(prompt)
        position, row = next((i, r) for i, r in enumerate(rows) if r["input"]["question"] in text)
        right = position % 3 != 0  # two in three right
        verdicts[row["task_id"]] = right
        letters = "ABCD".replace(row["expected"], "")
        return f"ANSWER: {row['expected'] if right else letters[0]}"

    server = FakeOpenAIServer(student).start()
    try:
        launched = await bw.runs.launch(
            "Run MMLU abstract_algebra on calc via Inspect",
            harness="inspect",
            sut=sut(server),
            metadata={
                "inspect_harness": {
                    "task": "inspect_evals/mmlu_0_shot",
                    "args": {"subjects": ["abstract_algebra"]},
                },
                "limit": 50,
            },
        )
        run = await finish(bw, launched.id)
    finally:
        server.stop()
    assert run.benchmark.name == "MMLU" and run.subset.slug == "abstract_algebra"
    assert run.summary.total == 50 and server.state["calls"] == 50
    assert run.summary.passed == sum(verdicts.values())
    page = await bw.runs.tasks(run.id, limit=100)
    assert all(t.task_id.startswith("mmlu_") for t in page.data)  # inspect_evals' own ids


@pytest.mark.embedded_only
async def test_a_halt_stops_an_inspect_run_mid_evaluation(
    platform: Platform, bw: AsyncBenchwright
) -> None:
    """Halts apply as to any run: halted while Inspect waits on the model, the run
    ends halted, its work sandbox is killed, and no call is made after it."""
    release = threading.Event()

    def slow(prompt: Any) -> str:
        release.wait(30.0)  # held until the test lets go
        return answer(prompt)

    server = FakeOpenAIServer(slow, threaded=True).start()
    try:
        launched = await bw.runs.launch(
            harness="inspect",
            sut=sut(server),
            metadata={"inspect_harness": {"task": "arith.py", "files": FILES}},
        )
        for _ in range(600):  # Inspect under way: its first call is waiting
            if server.state["calls"]:
                break
            await asyncio.sleep(0.1)
        assert server.state["calls"] >= 1
        await bw.runs.halt(launched.id, reason="enough")
        run = await bw.runs.wait(launched.id, timeout=120, poll_interval=0.2)
        calls_at_end = server.state["calls"]
        release.set()
        await asyncio.sleep(2)
        assert server.state["calls"] == calls_at_end  # nothing ran on after the halt
    finally:
        release.set()
        server.stop()
    assert run.halted and run.display_status == "killed", (run.halt_reason, run.display_status)
    assert run.summary is None or run.summary.total < len(SUMS)
    killed = await bw.runs.events(run.id, types=["SandboxKilled"], limit=50)
    created = await bw.runs.events(run.id, types=["SandboxCreated"], limit=50)
    assert created.data
    assert {e.data.sandbox_id for e in created.data} <= {e.data.sandbox_id for e in killed.data}
