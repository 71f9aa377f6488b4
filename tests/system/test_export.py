"""Exports of a finished run (issue 14): jsonl, csv, a markdown report and
lm-evaluation-harness's results and samples shapes, streamed, for the run's owner
only; the CLI writes them to a file."""

import asyncio
import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from benchwright import AsyncBenchwright, NotFoundError
from benchwright.cli import app
from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer
from tests.system.test_authoring import TASK_IMPL, WRONG, arithmetic
from tests.system.test_leaderboards import finish, new_account

pytestmark = [pytest.mark.slow, pytest.mark.connected]

ROWS = [
    {"task_id": f"sum-{a}-{b}", "input": {"a": a, "b": b}, "expected": str(a + b)}
    for a, b in [(2, 3), (7, 5), (13, 29), (40, 2), (11, 11), (6, 1)]
]


@pytest.fixture
def calculator() -> Any:
    server = FakeOpenAIServer(arithmetic).start()
    yield server
    server.stop()


async def test_a_run_exports_to_every_format(
    platform: Platform,
    bw: AsyncBenchwright,
    calculator: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    bm = await bw.benchmarks.create(name="Exported Sums", category="math")
    sub = await bw.benchmarks.subsets.create(benchmark=bm.id, slug="v1", tasks=ROWS)
    impl = await bw.impls.create(subset=sub.id, label="sums", code=TASK_IMPL)
    sut = {"model": "calc", "provider": "openai_compatible", "api_base": calculator.base_url}
    run = await finish(
        bw, (await bw.runs.launch(benchmark=bm.id, subset=sub.id, impl=impl.id, sut=sut)).id
    )
    wrong = {f"sum-{a}-{b}" for a, b in WRONG}
    want = {r["task_id"]: ("fail" if r["task_id"] in wrong else "pass") for r in ROWS}

    lines = (await bw.runs.export(run.id, format="jsonl")).decode().splitlines()
    tasks = [json.loads(line) for line in lines]
    assert [t["index"] for t in tasks] == list(range(len(ROWS)))
    assert {t["task_id"]: t["outcome"] for t in tasks} == want
    assert all(t["output"].startswith("The sum is") for t in tasks)

    table = list(csv.DictReader(io.StringIO((await bw.runs.export(run.id, "csv")).decode())))
    assert [r["task_id"] for r in table] == [t["task_id"] for t in tasks]
    assert [r["outcome"] for r in table] == [t["outcome"] for t in tasks]

    report = (await bw.runs.export(run.id, "markdown")).decode()
    assert report.startswith(f"# Benchwright run {run.id}")
    assert "95% CI" in report and "| tasks_sha256 |" in report and "| impl_sha256 |" in report
    assert report.count("\n| ") >= len(ROWS) + 4  # the built-from and task tables

    results = json.loads(await bw.runs.export(run.id, "lm-eval"))
    (name,) = results["results"]
    assert name == "exported_sums_v1"
    assert results["results"][name]["acc,none"] == run.summary.pass_rate
    assert results["n-samples"][name] == {"original": len(ROWS), "effective": len(ROWS)}
    assert results["configs"][name]["metadata"]["benchwright_run"] == run.id
    samples = [
        json.loads(line)
        for line in (await bw.runs.export(run.id, "lm-eval-samples")).decode().splitlines()
    ]
    assert [s["doc_id"] for s in samples] == list(range(len(ROWS)))
    assert [s["doc"] for s in samples] == [r["input"] for r in ROWS]
    assert [s["target"] for s in samples] == [r["expected"] for r in ROWS]
    assert [s["acc"] for s in samples] == [
        1.0 if want[r["task_id"]] == "pass" else 0.0 for r in ROWS
    ]

    # Inspect's own reader opens the .eval export: a sample per task, the run's scores.
    log = await asyncio.to_thread(
        read_inspect_log, await bw.runs.export(run.id, "inspect"), tmp_path
    )
    assert log.status == "success" and log.eval.task_id == run.id
    assert log.results is not None
    metrics = {s.name: s.metrics for s in log.results.scores}
    assert metrics["pass"]["accuracy"].value == pytest.approx(run.summary.pass_rate)
    assert log.samples is not None and len(log.samples) == len(ROWS)
    by_id = {str(s.id): s for s in log.samples}
    for r in ROWS:
        sample = by_id[r["task_id"]]
        assert sample.epoch == 1 and sample.target == r["expected"]
        assert json.loads(str(sample.input)) == r["input"]
        assert sample.scores is not None
        assert sample.scores["pass"].value == ("C" if want[r["task_id"]] == "pass" else "I")
        assert sample.output.completion.startswith("The sum is")

    # Another account sees nothing; an unknown format names its field.
    bob = await new_account(platform, "bob", ["runs:read"])
    async with AsyncBenchwright(api_key=bob, base_url=str(bw.base_url)) as other:
        with pytest.raises(NotFoundError):
            await other.runs.export(run.id, "jsonl")
    assert platform.client is not None
    bad = await platform.client.get(f"/v1/runs/{run.id}/export", params={"format": "xml"})
    assert bad.status_code == 400 and bad.json()["field"] == "format"
    # Trajectories are an agent run's: this run has none, and says so.
    refused = await platform.client.get(f"/v1/runs/{run.id}/export", params={"format": "atif"})
    assert refused.status_code == 400 and refused.json()["field"] == "format"
    assert refused.headers["content-type"].startswith("application/problem+json")

    # The CLI writes an export to a file.
    monkeypatch.setenv("BW_PAT", platform.token)
    monkeypatch.setenv("BW_BASE_URL", str(bw.base_url).rstrip("/"))
    monkeypatch.setenv("BW_CONFIG", str(tmp_path / "config.toml"))
    target = tmp_path / "run.csv"
    done = await asyncio.to_thread(
        CliRunner().invoke, app, ["run", "export", run.id, "--format", "csv", "--to", str(target)]
    )
    assert done.exit_code == 0, done.output
    assert target.read_text().splitlines()[0].startswith("task_id,index")


def read_inspect_log(content: bytes, folder: Path) -> Any:
    """The export read back by Inspect AI itself (as ``inspect view`` would).

    Called in a thread: on a running event loop, Inspect's sync readers patch asyncio
    with nest_asyncio for the whole process."""
    from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries

    path = folder / "export.eval"
    path.write_bytes(content)
    summaries = read_eval_log_sample_summaries(str(path))
    log = read_eval_log(str(path))
    assert log.samples is not None
    assert sorted((str(s.id), s.epoch) for s in summaries) == sorted(
        (str(s.id), s.epoch) for s in log.samples
    )
    return log


async def test_an_inspect_export_has_a_sample_per_trial(
    platform: Platform, bw: AsyncBenchwright, calculator: FakeOpenAIServer, tmp_path: Path
) -> None:
    bm = await bw.benchmarks.create(name="Tried Sums", category="math")
    sub = await bw.benchmarks.subsets.create(benchmark=bm.id, slug="v1", tasks=ROWS[:3])
    impl = await bw.impls.create(subset=sub.id, label="sums", code=TASK_IMPL)
    sut = {"model": "calc", "provider": "openai_compatible", "api_base": calculator.base_url}
    trials = {"plan": {"k": 2}, "aggregator": {"name": "mean"}}
    launched = await bw.runs.launch(
        benchmark=bm.id, subset=sub.id, impl=impl.id, sut=sut, trials=trials
    )
    run = await finish(bw, launched.id)
    assert platform.client is not None
    answer = await platform.client.get(f"/v1/runs/{run.id}/export", params={"format": "inspect"})
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/zip"
    # Named as Inspect names logs: <created>_<task>_<id>.eval (``inspect log list`` reads it).
    assert answer.headers["content-disposition"].endswith(f'_tried_sums_v1_{run.id}.eval"')
    log = await asyncio.to_thread(read_inspect_log, answer.content, tmp_path)
    assert log.eval.config.epochs == 2
    assert log.samples is not None
    assert sorted((str(s.id), s.epoch) for s in log.samples) == sorted(
        (r["task_id"], e) for r in ROWS[:3] for e in (1, 2)
    )
    assert {s.metadata["benchwright"]["trial"] for s in log.samples} == {0, 1}
