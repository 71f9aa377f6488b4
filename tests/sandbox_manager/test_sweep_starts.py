"""The runner says when each task begins; the sweep hands that to ``on_started`` and
keeps it out of the results (a run page shows those tasks running)."""

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from benchwright_sandbox_manager.ports import SandboxLimits
from benchwright_sandbox_manager.sweep import runner_argv, sweep
from benchwright_shared.contracts import RunTasks, TaskSpec

LIMITS = SandboxLimits(
    cpu_seconds=60, memory_mb=512, file_size_mb=64, max_procs=64, disk_mb=512, tmp_mb=64
)


class ScriptedRunner:
    """A backend whose runner prints the given lines."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self.argv: list[str] = []

    async def exec_lines(
        self, sandbox_id: str, argv: Sequence[str], **_: Any
    ) -> AsyncIterator[str]:
        self.argv = list(argv)
        for line in self.lines:
            yield line + "\n"


def result(index: int) -> str:
    return json.dumps({"index": index, "trial": 0, "task_id": f"t{index}", "outcome": "pass"})


async def test_starts_go_to_on_started_and_results_to_the_batches() -> None:
    lines = [
        json.dumps({"started": [0, 0]}),
        json.dumps({"started": [1, 0]}),
        result(0),
        json.dumps({"started": [2, 0]}),
        result(1),
        result(2),
    ]
    backend = ScriptedRunner(lines)
    command = RunTasks(
        command_id="c", run_id="r", sandbox_id="s", tasks=[TaskSpec(index=i) for i in range(3)]
    )
    heard: list[tuple[int, int]] = []
    batches = [
        b
        async for b in sweep(backend, command, LIMITS, lambda i, t: heard.append((i, t)))  # type: ignore[arg-type]
    ]
    assert heard == [(0, 0), (1, 0), (2, 0)]
    assert [r.index for batch in batches for r in batch] == [0, 1, 2]
    assert "--announce" in backend.argv
    # Without a listener the starts are dropped, never taken for results.
    quiet = [b async for b in sweep(ScriptedRunner(lines), command, LIMITS)]  # type: ignore[arg-type]
    assert [r.index for batch in quiet for r in batch] == [0, 1, 2]


def test_both_runners_are_asked_to_announce() -> None:
    plain = RunTasks(command_id="c", run_id="r", sandbox_id="s", tasks=[])
    inspect = plain.model_copy(update={"harness": "inspect", "harness_task": "a.py"})
    assert "--announce" in runner_argv(plain) and "--announce" in runner_argv(inspect)
