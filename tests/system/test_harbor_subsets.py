"""A Harbor dataset stored in the registry as an agentic subset (issue 22, decision 0050)
on the embedded platform, offline: the benchwright-starter dataset stored once, launched
pinned (``benchmark`` + ``subset``, ``harness: "harbor"``) with ``oracle``, ``nop`` and the
platform's agent against a scripted model, each run replayed.

The pinned runs score what the launch that carried the files scores (oracle all five,
nop none, the agent exactly its script's three), on the same dataset digest, and each
replay scores what its parent did. A bad dataset is refused when it is stored, naming
the file at fault.
"""

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from benchwright import AsyncBenchwright, BadRequestError, ConflictError
from benchwright.cli import app
from tests.conftest import Platform
from tests.support.harbor_scripts import DATASET, SOLVED, TASKS, dataset_files
from tests.support.scripted_agent_model import ScriptedAgentServer
from tests.system.test_harbor_runs import harbor, model, outcomes, sut
from tests.system.test_leaderboards import eventually, finish

pytestmark = [pytest.mark.slow, pytest.mark.connected, pytest.mark.embedded_only]

__all__ = ["model"]  # the fixture, shared with the file launches' tests
AGENTS = ("oracle", "nop", "benchwright")
EXPECTED = {
    "oracle": {name: ["pass"] for name in TASKS},
    "nop": {name: ["fail"] for name in TASKS},
    "benchwright": {name: ["pass" if name in SOLVED else "fail"] for name in TASKS},
}


async def dataset_digest(bw: AsyncBenchwright, run_id: str) -> str:
    events = (await bw.runs.events(run_id, types=["DatasetTasksArtifact"], limit=10)).data
    return str(events[-1].data["content_sha256"])


async def test_a_stored_dataset_runs_pinned_and_replays_with_the_file_launchs_scores(
    platform: Platform, bw: AsyncBenchwright, model: ScriptedAgentServer
) -> None:
    bm = await bw.benchmarks.create(name="Harbor starter", category="agents")
    stored = await bw.benchmarks.subsets.create_harbor(bm.id, "starter", dataset_files())
    assert (stored.task_count, stored.rolling, stored.slug) == (len(TASKS), False, "starter")
    # Content-addressed: the same files (here read from the folder) are the same subset;
    # other files cannot take its slug.
    again = await bw.benchmarks.subsets.create_harbor(bm.id, "starter", DATASET)
    assert again.id == stored.id
    changed = dataset_files()
    changed["fix-median/instruction.md"] += "\nKeep the function's name.\n"
    with pytest.raises(ConflictError) as taken:
        await bw.benchmarks.subsets.create_harbor(bm.id, "starter", changed)
    assert taken.value.code == "slug_taken"
    page = await bw.benchmarks.subsets.tasks(stored.id)
    assert [row.task_id for row in page.data] == list(TASKS)

    carried = await bw.runs.launch(harness="harbor", sut=sut(model), metadata=harbor("benchwright"))
    launched = {
        agent: await bw.runs.launch(
            harness="harbor",
            benchmark=bm.id,
            subset="starter",
            sut=sut(model),
            metadata={"harbor_harness": {"agent": agent}},
        )
        for agent in AGENTS
    }
    runs = {agent: await finish(bw, run.id) for agent, run in launched.items()}
    file_run = await finish(bw, carried.id)
    for agent, run in runs.items():
        assert await outcomes(bw, run.id) == EXPECTED[agent], agent
        assert (run.benchmark.id, run.subset.id) == (bm.id, stored.id)
    assert (runs["oracle"].summary.passed, runs["nop"].summary.passed) == (len(TASKS), 0)
    # The same tasks as the launch that carried the files: the same digest, the same scores.
    assert await outcomes(bw, file_run.id) == EXPECTED["benchwright"]
    digest = await dataset_digest(bw, file_run.id)
    assert {await dataset_digest(bw, run.id) for run in runs.values()} == {digest}
    kept = runs["oracle"].metadata["harbor_harness"]
    assert kept["dataset"] == "starter" and kept["tasks"] == list(TASKS)

    # Each replay runs its parent's tasks and agent on the pinned subset.
    replays = {
        agent: await bw.runs.launch(replay={"from_run": run.id}) for agent, run in runs.items()
    }
    for agent, launched_replay in replays.items():
        replayed = await finish(bw, launched_replay.id)
        assert await outcomes(bw, replayed.id) == EXPECTED[agent], agent
        assert replayed.subset.id == stored.id and replayed.derived_from == runs[agent].id
        assert replayed.summary.passed == runs[agent].summary.passed
    sliced = await finish(
        bw,
        (
            await bw.runs.launch(
                replay={"from_run": runs["benchwright"].id, "task_ids": ["fix-median"]}
            )
        ).id,
    )
    assert await outcomes(bw, sliced.id) == {"fix-median": ["pass"]}

    # The subset's leaderboard places its public runs.
    await bw.runs.publish(runs["oracle"].id)
    board = await eventually(
        lambda: bw.registry.subsets.leaderboard(stored.id),
        lambda b: [r.run_id for r in b.data] == [runs["oracle"].id],
        "the leaderboard",
    )
    assert board.data[0].pass_rate == 1.0


async def test_a_bad_dataset_is_refused_when_stored_naming_the_file(
    platform: Platform, bw: AsyncBenchwright
) -> None:
    bm = await bw.benchmarks.create(name="Harbor broken", category="agents")
    files = {p: t for p, t in dataset_files().items() if p != "fix-median/instruction.md"}
    with pytest.raises(BadRequestError) as missing:
        await bw.benchmarks.subsets.create_harbor(bm.id, "broken", files)
    assert missing.value.field == 'files["fix-median/instruction.md"]'
    escaping = {**dataset_files(), "../outside.txt": "x"}
    with pytest.raises(BadRequestError) as unsafe:
        await bw.benchmarks.subsets.create_harbor(bm.id, "broken", escaping)
    assert unsafe.value.field == 'files["../outside.txt"]'
    assert (await bw.benchmarks.get(bm.id)).subsets == []
    # A subset of ordinary rows is not launched as a Harbor dataset.
    await bw.benchmarks.subsets.create(
        bm.id, "plain", tasks=[{"task_id": "q1", "input": "2+2", "expected": "4"}]
    )
    with pytest.raises(BadRequestError) as plain:
        await bw.runs.launch(
            harness="harbor",
            benchmark=bm.id,
            subset="plain",
            sut={"model": "m", "provider": "openai_compatible", "api_base": "http://127.0.0.1:9"},
            metadata={"harbor_harness": {"agent": "nop"}},
        )
    assert (plain.value.field, plain.value.code) == ("subset", "not_an_agentic_subset")
    # Nor is a Harbor dataset launched without the harness that runs its agent.
    await bw.benchmarks.subsets.create_harbor(bm.id, "starter", dataset_files())
    with pytest.raises(BadRequestError) as unharnessed:
        await bw.runs.launch(
            benchmark=bm.id,
            subset="starter",
            sut={"model": "m", "provider": "openai_compatible", "api_base": "http://127.0.0.1:9"},
        )
    assert (unharnessed.value.field, unharnessed.value.code) == (
        "harness",
        "agentic_subset_needs_harbor",
    )


async def test_the_cli_stores_a_folder_and_launches_it_pinned(
    platform: Platform,
    model: ScriptedAgentServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert platform.client is not None
    monkeypatch.setenv("BW_PAT", platform.token)
    monkeypatch.setenv("BW_BASE_URL", str(platform.client.base_url).rstrip("/"))
    monkeypatch.setenv("BW_CONFIG", str(tmp_path / "config.toml"))

    def invoke(*argv: str) -> Any:
        return asyncio.to_thread(CliRunner().invoke, app, list(argv))

    made = await invoke("bench", "create", "Harbor via CLI", "-o", "json")
    assert made.exit_code == 0, made.output
    bm_id = json.loads(made.stdout)["id"]
    stored = await invoke("bench", "subset", "add-harbor", bm_id, str(DATASET), "-o", "json")
    assert stored.exit_code == 0, stored.output
    subset = json.loads(stored.stdout)
    assert (subset["slug"], subset["task_count"]) == ("benchwright-starter", len(TASKS))
    ran = await invoke(
        "run",
        "--harness",
        "harbor",
        "--benchmark",
        bm_id,
        "--subset",
        "benchwright-starter",
        "--agent",
        "oracle",
        "--harbor-task",
        "organize-logs",
        "--model",
        "scripted@openai_compatible",
        "--api-base",
        model.base_url,
        "-o",
        "json",
    )
    assert ran.exit_code == 0, ran.output
    document = json.loads(ran.stdout)
    assert document["run"]["subset"]["id"] == subset["id"]
    assert document["summary"]["total"] == 1 and document["summary"]["passed"] == 1
