"""Guide section 12.2, "Per-run: limits": the launch as the guide prints it, and the
older ``constraints`` spelling that sets the same run-level ceilings.

Adapted in the request and the model: the guide's ``request="..."`` is a GSM8K
request, served by a fake OpenAI-compatible model. The printed launch includes
``task.cost``, which the proxy enforces per task (it meters every call by the task
and trial the scorer runtime names).
"""

from collections.abc import Iterator
from typing import Any

import pytest

from benchwright import BadRequestError, Benchwright
from tests.scenarios.support import RUN_TIMEOUT, catalog_rows, gsm8k_panelist, offthread, sut_of
from tests.support.chat_oracle import ChatOracleServer

pytestmark = [pytest.mark.slow, pytest.mark.connected]

MODEL = "qwen/qwen3-32b"
REQUEST = "Run GSM8K on " + MODEL
TASKS = 3


@pytest.fixture(scope="module")
def model() -> Iterator[ChatOracleServer]:
    rows = catalog_rows("GSM8K", "test")[:TASKS]
    server = gsm8k_panelist(rows, {rows[0]["task_id"]}).start()
    yield server
    server.stop()


async def test_the_guides_launch_with_every_level(bw: Benchwright, model: ChatOracleServer) -> None:
    def launch() -> Any:
        return bw.runs.launch(
            request=REQUEST,
            sut=sut_of(model, MODEL),
            limits={
                "run": {"cost": 5.0, "duration": 600, "tasks": 50},
                "task": {"cost": 0.50, "attempts": 1},
                "attempt": {"duration": 120},
            },
        )

    run = await offthread(launch)
    done = await offthread(bw.runs.wait, run.id, timeout=RUN_TIMEOUT)
    assert done.status == "ok", (done.error, done.halt_reason)
    assert done.limits is not None and done.limits.task.cost == 0.5
    assert done.summary is not None and done.summary.total == 50  # run.tasks caps


async def test_the_enforceable_ceilings_and_the_older_spelling_agree(
    bw: Benchwright, model: ChatOracleServer
) -> None:
    def launch(**ceilings: Any) -> Any:
        run = bw.runs.launch(request=REQUEST, sut=sut_of(model, MODEL), **ceilings)
        return bw.runs.wait(run.id, timeout=RUN_TIMEOUT)

    limited = await offthread(
        launch,
        limits={
            "run": {"cost": 5.0, "duration": 600, "tasks": TASKS},
            "task": {"attempts": 1},
            "attempt": {"duration": 120},
        },
    )
    older = await offthread(
        launch,
        constraints={"max_cost_cents": 500, "max_duration_ms": 600_000, "max_tasks": TASKS},
    )
    for run in (limited, older):
        assert run.status == "ok", (run.error, run.halt_reason)
        assert run.summary is not None and run.summary.total == TASKS  # run.tasks caps
    assert limited.limits is not None and older.limits is not None
    assert limited.limits.run.cost == older.limits.run.cost == 5.0
    assert limited.limits.run.duration == older.limits.run.duration == 600.0
    with pytest.raises(BadRequestError) as refused:
        await offthread(launch, limits={"attempt": {"attempts": 2}})
    assert refused.value.field == "limits"
    assert "cannot be enforced" in str(refused.value)
