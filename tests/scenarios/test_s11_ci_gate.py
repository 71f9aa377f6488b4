"""Guide section 11.1, "Gate synchronously with the CLI": the workflow step's ``run:``
block, under bash, against a reference run. The step passes when the replay's
aggregate pass rate holds the gate, fails when it does not or when the run errors,
and a re-run of the same workflow re-attaches to the run it already paid for.

Adapted in the model only: ``--model qwen/qwen3-32b@openrouter`` is
``qwen/qwen3-32b@openai_compatible --api-base "$MODEL_API_BASE"``, a fake server under
that name; one build of it makes every reference call (the gate holds), one makes half
(a regression), and a third address serves nothing (the run cannot reach its model).
The anchor is section 10's pattern: a natural-language run of the same model.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchwright import Benchwright
from tests.conftest import free_port
from tests.scenarios.support import (
    RUN_TIMEOUT,
    Steps,
    bfcl_panelist,
    catalog_rows,
    offthread,
    shell,
    sut_of,
)
from tests.support.chat_oracle import ChatOracleServer

pytestmark = [pytest.mark.slow, pytest.mark.connected]

TASKS = 4
MODEL = "qwen/qwen3-32b"
# The workflow step's run: block, as the guide prints it (the model adapted).
STEP = """\
benchwright run \\
  --replay-from "$BW_ANCHOR_RUN" \\
  --model qwen/qwen3-32b@openai_compatible --api-base "$MODEL_API_BASE" \\
  --limit-to run.cost=15 \\
  --gate pass_rate=0.90 \\
  --idempotency-key "gha-$GITHUB_RUN_ID"
"""


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return catalog_rows("BFCL v4", "parallel")[:TASKS]


@pytest.fixture(scope="module")
def good_model(rows: list[dict[str, Any]]) -> Iterator[ChatOracleServer]:
    server = bfcl_panelist(rows, {r["task_id"] for r in rows}).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def regressed_model(rows: list[dict[str, Any]]) -> Iterator[ChatOracleServer]:
    server = bfcl_panelist(rows, {r["task_id"] for r in rows[: TASKS // 2]}).start()
    yield server
    server.stop()


def workflow_env(guide_env: dict[str, str], anchor: str, api_base: str, job: str) -> dict[str, str]:
    return {
        **guide_env,
        "BW_ANCHOR_RUN": anchor,
        "MODEL_API_BASE": api_base,
        "GITHUB_RUN_ID": job,
    }


async def test_the_reference_run(
    bw: Benchwright, steps: Steps, good_model: ChatOracleServer
) -> None:
    def anchor() -> Any:
        run = bw.runs.launch(
            request=f"Run BFCL v4 parallel function calling on {MODEL}",
            sut=sut_of(good_model, MODEL),
            metadata={"limit": TASKS},
        )
        return bw.runs.wait(run.id, timeout=RUN_TIMEOUT)

    run = await offthread(anchor)
    assert run.status == "ok", (run.phase, run.halt_reason, run.error)
    assert (await offthread(bw.runs.tasks, run.id)).summary.pass_rate == 1.0
    steps["anchor"] = run


async def test_the_gate_holds(
    bw: Benchwright,
    steps: Steps,
    good_model: ChatOracleServer,
    guide_env: dict[str, str],
    workdir: Path,
) -> None:
    anchor = steps.need("anchor")
    env = workflow_env(guide_env, anchor.id, good_model.base_url, "1001")
    step = await shell(STEP, cwd=workdir, env=env)
    assert step.exit_code == 0, str(step)
    # The run streams to the job log: its events, then the verdict.
    lines = step.ndjson()
    assert lines[0]["type"] == "RunLaunched"
    assert any(e.get("type") == "PipelineFinished" for e in lines)
    final = lines[-1]
    run = final["run"]
    assert final["gate"]["held"] and final["gate"]["threshold"] == 0.9
    assert final["summary"]["pass_rate"] == 1.0 and final["summary"]["total"] == TASKS
    assert run["derived_from"] == anchor.id and run["impl_id"] == anchor.impl_id
    assert run["model"]["model"] == MODEL and run["limits"] == {"run": {"cost": 15.0}}
    assert "gate held" in step.stderr
    steps["gated"] = run

    # A re-run of the workflow re-attaches to the same Benchwright run.
    again = await shell(STEP, cwd=workdir, env=env)
    assert again.exit_code == 0, str(again)
    assert again.ndjson()[-1]["run"]["id"] == run["id"]
    listed = await offthread(bw.runs.list)
    assert sum(1 for r in listed.data if r.derived_from == anchor.id) == 1


async def test_the_step_fails_below_the_gate(
    steps: Steps, regressed_model: ChatOracleServer, guide_env: dict[str, str], workdir: Path
) -> None:
    anchor = steps.need("anchor")
    env = workflow_env(guide_env, anchor.id, regressed_model.base_url, "1002")
    step = await shell(STEP, cwd=workdir, env=env)
    assert step.exit_code != 0, str(step)
    final = step.ndjson()[-1]
    assert final["run"]["status"] == "ok"  # the run is fine; the model regressed
    assert final["summary"]["pass_rate"] == 0.5 and final["gate"]["held"] is False
    assert "gate failed" in step.stderr


async def test_the_step_fails_when_the_run_cannot_reach_its_model(
    steps: Steps, guide_env: dict[str, str], workdir: Path
) -> None:
    anchor = steps.need("anchor")
    nowhere = f"http://127.0.0.1:{free_port()}/v1"
    env = workflow_env(guide_env, anchor.id, nowhere, "1003")
    step = await shell(STEP, cwd=workdir, env=env)
    assert step.exit_code != 0, str(step)
    final = step.ndjson()[-1]
    # Every task errored (no model to reach): no pass rate, so the gate cannot hold.
    assert final["summary"]["errored"] == TASKS and final["summary"]["pass_rate"] is None
    assert "gate failed" in step.stderr
