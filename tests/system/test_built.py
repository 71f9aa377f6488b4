"""A BUILT benchmark end to end (guide section 6.6): five sums and a recipe, pinned runs
against a fake model, then a recipe edit and a sample edit. Each edit moves the ids
the next run records; no earlier run changes."""

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from benchwright import AsyncBenchwright, ConflictError, NotFoundError
from benchwright.cli import app
from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = [pytest.mark.slow, pytest.mark.connected]

RUN_TIMEOUT = 120.0
PAIRS = [(2, 3), (7, 5), (13, 29), (40, 2), (11, 11)]
TASKS = [
    {"task_id": f"sum-{a}-{b}", "input": {"a": a, "b": b}, "expected": str(a + b)} for a, b in PAIRS
]
RECIPE = {
    "prompt_template": "What is {input.a} + {input.b}? Reply with the number.",
    "extraction": "last_number",
    "grading": "numeric",
    "max_tokens": 16,
    "run_timeout": 60,
}
# The model gets every sum right but 13 + 29.
WRONG = {(13, 29)}
SUM = re.compile(r"What is (\d+) \+ (\d+)\?")


def arithmetic(prompt: str) -> str:
    found = SUM.search(prompt)
    if not found:
        return "I do not know."
    a, b = int(found.group(1)), int(found.group(2))
    return f"The sum is {a + b + (1 if (a, b) in WRONG else 0)}"


@pytest.fixture
def calculator() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer(arithmetic).start()
    yield server
    server.stop()


def sut(server: FakeOpenAIServer) -> dict[str, str]:
    return {"model": "calc", "provider": "openai_compatible", "api_base": server.base_url}


async def trial_results(platform: Platform, run_id: str) -> list[dict[str, Any]]:
    assert platform.client is not None
    page = await platform.client.get(
        f"/v1/runs/{run_id}/events", params={"limit": 5000, "types": "MaterializeTaskResult"}
    )
    return [e for e in page.json()["data"] if e["type"] == "MaterializeTaskResult"]


async def test_editing_a_built_benchmark_never_rewrites_history(
    platform: Platform, bw: AsyncBenchwright, calculator: FakeOpenAIServer
) -> None:
    assert platform.client is not None
    bm = await bw.benchmarks.create(name="Built Sums", category="math")
    first = await bw.registry.build.create_subset(
        bm.id, "sums", name="Five sums", tasks=TASKS, recipe=RECIPE, note="first cut"
    )
    assert first.impl_id.startswith(f"{first.subset_id}:") and first.task_count == 5
    code = await bw.registry.impls.code(first.impl_id)
    assert code.startswith("# task_impl.py of a BUILT subset") and "'trials': 1," in code

    async def run_it(**pins: Any) -> Any:
        run = await bw.runs.launch(benchmark=bm.id, sut=sut(calculator), **pins)
        done = await bw.runs.wait(run.id, timeout=RUN_TIMEOUT, poll_interval=0.2)
        assert done.status == "ok", (done.phase, done.halt_reason, done.summary)
        return done

    # -- a pinned run: the generated impl, the recipe's trials and timeout ------------------
    before = await run_it()
    assert before.impl_id == first.impl_id
    assert before.subset is not None and before.subset.id == first.subset_id
    tasks = await bw.runs.tasks(before.id)
    assert (tasks.summary.total, tasks.summary.passed, tasks.summary.failed) == (5, 4, 1)
    assert [t.task_id for t in tasks.data if t.outcome == "fail"] == ["sum-13-29"]
    assert len(await trial_results(platform, before.id)) == 5
    shown = (await platform.client.get(f"/v1/runs/{before.id}")).json()
    assert shown["limits"]["task"]["duration"] == 60  # the recipe's run_timeout

    # -- a recipe edit: the same subset, a new impl, two trials a task ----------------------
    twice = await bw.registry.build.update_recipe("sums", {"trials": 2}, note="two tries each")
    assert twice.changed and twice.subset_id == first.subset_id
    assert twice.impl_id != first.impl_id and twice.default_trials.plan.k == 2
    after_recipe = await run_it()
    assert after_recipe.impl_id == twice.impl_id
    assert after_recipe.subset is not None and after_recipe.subset.id == first.subset_id
    trials = await trial_results(platform, after_recipe.id)
    assert sorted((e["data"]["index"], e["data"]["trial"]) for e in trials) == [
        (i, t) for i in range(5) for t in range(2)
    ]
    assert (await bw.runs.tasks(after_recipe.id)).summary.passed == 4

    # -- a sample edit: a new subset carrying the recipe; the old one is retired -------------
    fixed = {"task_id": "sum-13-29", "input": {"a": 13, "b": 30}, "expected": "43"}
    forked = await bw.registry.build.update_samples(
        "sums", upsert=[fixed], note="q3 pointed at the wrong numbers"
    )
    assert forked.changed and forked.subset_id != first.subset_id
    assert forked.predecessor_id == first.subset_id and forked.config.trials == 2
    assert forked.impl_id.startswith(f"{forked.subset_id}:")
    after_samples = await run_it()
    assert after_samples.subset is not None and after_samples.subset.id == forked.subset_id
    assert after_samples.impl_id == forked.impl_id
    assert (await bw.runs.tasks(after_samples.id)).summary.passed == 5
    assert len(await trial_results(platform, after_samples.id)) == 10

    # The retired subset no longer resolves for a new launch, with a reason.
    with pytest.raises(ConflictError) as retired:
        await bw.runs.launch(benchmark=bm.id, subset=first.subset_id, sut=sut(calculator))
    assert retired.value.code == "subset_retired"
    assert forked.subset_id in str(retired.value)
    with pytest.raises(ConflictError):
        await bw.registry.build.update_recipe(first.subset_id, {"trials": 1})
    old = await bw.registry.build.recipe(first.subset_id)
    assert old.retired and old.successor_id == forked.subset_id

    # -- history is never rewritten -----------------------------------------------------------
    for run, subset_id, impl_id, passed in (
        (before, first.subset_id, first.impl_id, 4),
        (after_recipe, first.subset_id, twice.impl_id, 4),
    ):
        again = await bw.runs.get(run.id)
        assert again.impl_id == impl_id
        assert again.subset is not None and again.subset.id == subset_id
        summary = (await bw.runs.tasks(run.id)).summary
        assert (summary.total, summary.passed) == (5, passed)
    payload = await (await bw.runs.tasks(before.id)).payload(tasks.data[2].id)
    assert payload.input == {"a": 13, "b": 29}  # the row as it was when it ran
    assert await bw.registry.impls.code(first.impl_id) == code
    assert (await bw.registry.subsets.get(first.subset_id)).task_count == 5

    # The history reads back with its notes.
    now = await bw.registry.build.recipe("sums")
    assert [(h.kind, h.note) for h in now.history] == [
        ("created", "first cut"),
        ("recipe", "two tries each"),
        ("samples", "q3 pointed at the wrong numbers"),
    ]
    assert now.history[1].changes == {"trials": [1, 2]}
    with pytest.raises(NotFoundError):
        await bw.registry.build.recipe("not-a-slug")


async def cli(*args: str) -> Result:
    # The platform shares this event loop: the CLI's blocking calls go to a thread.
    return await asyncio.to_thread(CliRunner().invoke, app, list(args))


async def test_the_guides_cli_fixes_a_built_benchmark(
    platform: Platform,
    bw: AsyncBenchwright,
    calculator: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """Guide section 6.6 as typed: bench create, subset create with a recipe, recipe
    show / set, samples set, and bench range over the runs."""
    assert platform.client is not None
    monkeypatch.setenv("BW_PAT", platform.token)
    monkeypatch.setenv("BW_BASE_URL", str(platform.client.base_url).rstrip("/"))
    monkeypatch.setenv("BW_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("COLUMNS", "200")
    tasks, fix = tmp_path / "tasks.jsonl", tmp_path / "fix.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    fix.write_text(json.dumps({**TASKS[2], "input": {"a": 13, "b": 30}, "expected": "43"}) + "\n")

    made = await cli("bench", "create", "My Bench", "--category", "math", "-o", "json")
    assert made.exit_code == 0, made.output
    bm = json.loads(made.stdout)["id"]
    knobs = [
        f"--set={k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in RECIPE.items()
    ]
    created = await cli(
        "bench", "subset", "create", bm, "--slug", "my-bench", "--file", str(tasks), *knobs,
        "--note", "first cut", "-o", "json",
    )  # fmt: skip
    assert created.exit_code == 0, created.output
    first = json.loads(created.stdout)
    assert first["config"]["run_timeout"] == 60 and first["config"]["max_tokens"] == 16

    shown = await cli("bench", "recipe", "show", "my-bench", "-o", "table")
    assert shown.exit_code == 0 and first["impl_id"] in shown.stdout

    run = await bw.runs.launch(benchmark=bm, sut=sut(calculator))
    await bw.runs.wait(run.id, timeout=RUN_TIMEOUT, poll_interval=0.2)

    edited = await cli(
        "bench", "recipe", "set", "my-bench", "--set", "run_timeout=900", "--set", "trials=3",
        "--note", "product boots slower than 240s", "-o", "table",
    )  # fmt: skip
    assert edited.exit_code == 0, edited.output
    assert edited.stdout.startswith(f"my-bench: recipe changed; impl {first['impl_id']} → ")
    forked = await cli(
        "bench", "samples", "set", "my-bench", "--upsert-file", str(fix),
        "--note", "q3 pointed at the wrong numbers", "-o", "json",
    )  # fmt: skip
    assert forked.exit_code == 0, forked.output
    after = json.loads(forked.stdout)
    assert after["predecessor_id"] == first["subset_id"] and after["config"]["trials"] == 3
    assert [h["note"] for h in after["history"]] == [
        "first cut",
        "product boots slower than 240s",
        "q3 pointed at the wrong numbers",
    ]

    # A slug that names none of yours: one line on stderr, non-zero.
    other = await cli("bench", "recipe", "set", "not-mine", "--set", "trials=2")
    assert other.exit_code == 1 and other.stderr.count("\n") == 1
    assert "not found" in other.stderr

    covering = await cli("bench", "range", bm, "0-5", "-o", "json")
    assert covering.exit_code == 0, covering.output
    assert [r["run_id"] for r in json.loads(covering.stdout)["data"]] == [run.id]
