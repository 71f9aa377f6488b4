"""A Harbor dataset as a registry subset's rows, and back. Pure, no I/O.

An agentic subset holds one row per task, in name order (index ``i`` of a run is
the ``i``-th task, as for a dataset that travels with the launch)::

    {"task_id": "fix-median", "input": {"harbor_files": {"task.toml": "...", ...}}}

Paths are relative to the task's folder, so the rows hold what decides a task and
nothing else: files outside every task are left out, and a one-task dataset (its
``task.toml`` at the top) is stored as the task it makes. The subset's id is the
registry's content address of these rows, so the same tasks are the same subset;
``files_from_rows`` lays them out again as a folder per task, whose dataset digest
equals the original's (the digest covers each task's own paths, not its folder).
"""

from collections.abc import Sequence
from typing import Any

from benchwright_shared.agentic.dataset import AgenticDataset

FILES_KEY = "harbor_files"


def dataset_rows(dataset: AgenticDataset) -> list[dict[str, Any]]:
    """The subset rows of a checked dataset, one a task, in name order."""
    return [
        {
            "task_id": name,
            "input": {FILES_KEY: {path: task.files[path].decode() for path in sorted(task.files)}},
        }
        for name, task in sorted(dataset.tasks.items())
    ]


def is_agentic_row(row: Any) -> bool:
    """Whether ``row`` is a task of an agentic subset."""
    if not isinstance(row, dict) or not isinstance(row.get("task_id"), str):
        return False
    found = row.get("input")
    return isinstance(found, dict) and isinstance(found.get(FILES_KEY), dict)


def files_from_rows(rows: Sequence[dict[str, Any]]) -> dict[str, str] | None:
    """The dataset's files, a folder per task; None when the rows are not an agentic
    subset's (every row must be one)."""
    if not rows or not all(is_agentic_row(row) for row in rows):
        return None
    return {
        f"{row['task_id']}/{path}": str(content)
        for row in rows
        for path, content in row["input"][FILES_KEY].items()
    }
