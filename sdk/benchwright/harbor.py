"""Harbor datasets from a local folder, as a ``harness="harbor"`` launch sends them.

A dataset is a folder of Harbor task folders (``task.toml``, ``instruction.md``,
``environment/``, ``tests/test.sh``, optional ``solution/solve.sh``); it travels
with the launch as ``{relative path: text}``, and the server checks it whole before
anything runs.

>>> from benchwright.harbor import harbor_metadata
>>> run = bw.runs.launch(
...     harness="harbor",
...     sut={"model": "m", "provider": "openrouter"},
...     metadata=harbor_metadata("./my-tasks", agent="benchwright", agent_args={"max_turns": 30}),
... )
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._errors import BenchwrightError

__all__ = [
    "DEFAULT_AGENT",
    "MAX_DATASET_BYTES",
    "MAX_FILE_BYTES",
    "DatasetFolderError",
    "dataset_files",
    "harbor_metadata",
]

# What the server takes: the files travel in one bus message with the launch.
MAX_FILE_BYTES = 512 * 1024
MAX_DATASET_BYTES = 512 * 1024
DEFAULT_AGENT = "benchwright"
# Folders a task never needs: caches and installed dependencies.
SKIPPED = frozenset({"__pycache__", "node_modules"})


class DatasetFolderError(BenchwrightError, ValueError):
    """A local folder that cannot be sent as a Harbor dataset: missing, empty, too
    large, or holding a file that is not text."""


def dataset_files(
    path: str | Path,
    *,
    max_file_bytes: int = MAX_FILE_BYTES,
    max_dataset_bytes: int = MAX_DATASET_BYTES,
) -> dict[str, str]:
    """Every file under ``path`` by its ``/``-separated path relative to it, as text.

    Hidden files and folders (``.git``, ``.venv``), ``__pycache__`` and
    ``node_modules`` are left out. Raises :class:`DatasetFolderError` for a missing
    folder, a file that is not UTF-8 text, a link out of the folder, or more bytes
    than the server takes (measured before a file is read).
    """
    root = Path(path)
    if not root.is_dir():
        raise DatasetFolderError(f"{path}: no such folder")
    root = root.resolve()
    files: dict[str, str] = {}
    total = 0
    for found in sorted(root.rglob("*")):
        relative = found.relative_to(root)
        if any(part.startswith(".") or part in SKIPPED for part in relative.parts):
            continue
        if not found.is_file():
            continue
        name = relative.as_posix()
        if found.is_symlink() and not found.resolve().is_relative_to(root):
            raise DatasetFolderError(f"{found} links out of the dataset folder")
        size = found.stat().st_size
        total += size
        if size > max_file_bytes:
            raise DatasetFolderError(
                f"{found} holds {size:,} bytes; a dataset's file may hold {max_file_bytes:,}"
            )
        if total > max_dataset_bytes:
            raise DatasetFolderError(
                f"{root} holds more than {max_dataset_bytes:,} bytes of files; a launch "
                "carries at most that: send fewer tasks (or one, with harbor_task)"
            )
        files[name] = _text(found)
    if not files:
        raise DatasetFolderError(f"{path} holds no files")
    return files


def _text(file: Path) -> str:
    try:
        text: str | None = file.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or "\x00" in text:
        raise DatasetFolderError(
            f"{file} is not UTF-8 text: a dataset's files are sent as text (leave binary "
            "files out of the folder)"
        )
    return text


def harbor_metadata(
    path: str | Path,
    *,
    dataset: str | None = None,
    agent: str = DEFAULT_AGENT,
    agent_args: Mapping[str, Any] | None = None,
    task: str | None = None,
) -> dict[str, Any]:
    """A harbor launch's ``metadata``: the folder's files as ``harbor_harness`` (the
    dataset named after the folder unless ``dataset`` is given), and ``harbor_task``
    when ``task`` narrows the run to one task."""
    files = dataset_files(path)
    metadata: dict[str, Any] = {
        "harbor_harness": {
            "dataset": dataset or Path(path).resolve().name,
            "files": files,
            "agent": agent,
            "agent_args": dict(agent_args or {}),
        }
    }
    if task is not None:
        metadata["harbor_task"] = task
    return metadata
