"""Guide section 2, "Your first run": a natural-language launch streamed to its end,
then its pass rate, its cost and its link; and the same launch from the CLI.

Adapted in the model only: the request says "on local/smollm2" where the guide says
"on openai/gpt-4o-mini via OpenRouter". SmolLM2 is slow, so ``metadata={"limit": 2}``
(the launch's documented task cap) keeps the run to two questions.
"""

from pathlib import Path
from typing import Any

import pytest

from benchwright import Benchwright
from tests.scenarios.support import RUN_TIMEOUT, Steps, cli, needs_local_model, offthread

pytestmark = [pytest.mark.slow, pytest.mark.connected, needs_local_model]

TASKS = 2
REQUEST = "Run MMLU Abstract Algebra on local/smollm2"
NL_PHASES = ["find", "fetch", "analyze", "setup", "attach", "atomize", "materialize", "report"]


def first_run(bw: Benchwright) -> dict[str, Any]:
    """Section 2's program, collecting what it prints."""
    printed: list[str] = []
    events = []
    run = bw.runs.launch(
        request=REQUEST,
        metadata={"limit": TASKS},
    )

    # Watch it. The stream ends when the run is terminal.
    for evt in bw.runs.stream(run.id):
        events.append(evt)
        if evt.type in ("PhaseStarted", "PhaseCompleted"):
            printed.append(f"{evt.type}: {evt.data.phase}")
        if evt.type == "MaterializeTaskResult":
            printed.append(f"  task {evt.data.task_id}  score={evt.data.score}")

    # Summary.
    run = bw.runs.get(run.id)
    tasks = bw.runs.tasks(run.id)
    printed.append(
        f"\n{tasks.summary.pass_rate:.1%} pass rate, "
        f"${run.cost.billed.amount_cents / 100:.2f} billed"
    )

    # Open the report in your browser.
    printed.append(str(run.links.dashboard))
    return {"run": run, "tasks": tasks, "events": events, "printed": printed}


async def test_first_run_streams_to_its_end(bw: Benchwright, steps: Steps) -> None:
    seen = await offthread(first_run, bw)
    steps.update(seen)
    run, events = seen["run"], seen["events"]
    print("\n".join(seen["printed"]))

    # The stream ended because the run is terminal, and it ended ok.
    assert run.status == "ok", (run.phase, run.halt_reason, run.summary)
    assert events[0].type == "RunLaunched" and events[-1].type == "PipelineFinished"
    started = [e.data.phase for e in events if e.type == "PhaseStarted"]
    completed = [e.data.phase for e in events if e.type == "PhaseCompleted"]
    assert started == NL_PHASES and completed == NL_PHASES
    assert [e.seq for e in events] == sorted({e.seq for e in events})  # in order, once each

    # The Driver read the request: MMLU's abstract algebra, on the local model.
    assert run.mode != "pinned"
    assert run.benchmark is not None and run.benchmark.name == "MMLU"
    assert run.subset is not None and run.subset.slug == "abstract_algebra"
    assert run.model is not None and (run.model.model, run.model.provider) == ("smollm2", "local")

    # One MaterializeTaskResult per task, each scored.
    results = [e for e in events if e.type == "MaterializeTaskResult"]
    assert len(results) == TASKS
    for evt in results:
        assert evt.data.task_id.startswith("mmlu/abstract_algebra/")
        assert 0.0 <= evt.data.score <= 1.0


async def test_summary_pass_rate_and_cost(steps: Steps) -> None:
    run, tasks, events = steps.need("run", "tasks", "events")
    summary = tasks.summary
    assert summary.total == TASKS and summary.passed + summary.failed + summary.errored == TASKS
    assert summary.errored == 0, tasks.data
    assert summary.pass_rate == pytest.approx(summary.passed / summary.total)
    scores = [e.data.score for e in events if e.type == "MaterializeTaskResult"]
    assert summary.passed == sum(1 for s in scores if s >= 1.0)
    # A local model and local compute: the bill is a number of cents, here nothing.
    assert run.cost.billed is not None and isinstance(run.cost.billed.amount_cents, int)
    assert run.cost.billed.amount_cents >= 0
    assert "pass rate, $" in steps["printed"][-2]


async def test_dashboard_link_opens_the_report(steps: Steps) -> None:
    """'Open the report in your browser': ``print(run.links.dashboard)``."""
    run = steps.need("run")
    assert run.links.dashboard, (
        f"run.links.dashboard is {run.links.dashboard!r}; the guide prints it as the "
        f"report's URL (links: {run.links.model_dump()})"
    )


async def test_first_run_from_the_cli(
    guide_env: dict[str, str], workdir: Path, bw: Benchwright
) -> None:
    """The same first run as `benchwright run "<request>" --limit 2` (guide section 15)."""
    result = await cli("run", REQUEST, "--limit", str(TASKS), "-o", "json", cwd=workdir)
    assert result.exit_code == 0, str(result)
    document = result.json()
    run, summary = document["run"], document["summary"]
    assert run["status"] == "ok" and run["benchmark"]["name"] == "MMLU"
    assert run["model"]["model"] == "smollm2" and run["model"]["provider"] == "local"
    assert summary["total"] == TASKS
    assert "▶ materialize" in result.stderr  # the live progress, beside the JSON document
    # `@last` is the run the CLI just launched.
    shown = await cli("run", "show", "@last", "-o", "json", cwd=workdir)
    assert shown.exit_code == 0, str(shown)
    assert shown.json()["id"] == run["id"]
    done = await offthread(bw.runs.wait, run["id"], timeout=RUN_TIMEOUT)
    assert done.status == "ok"
