"""A Harbor dataset from its files: ``{relative_path: content}``, checked, no I/O.

A dataset is a folder of task folders, each Harbor's layout::

    fix-bug/
      task.toml              required: Harbor's TaskConfig
      instruction.md         required: what the agent is told
      environment/           required unless [environment] docker_image is set
        Dockerfile           and the files it copies
      tests/test.sh          required: writes /logs/verifier/reward.txt or reward.json
      solution/solve.sh      optional: what Harbor's ``oracle`` agent runs

A dataset that is one task (``task.toml`` at its root) is a dataset of that task,
named after the dataset. Top-level folders holding none of a task's parts (and
files at the top) are not tasks and are left out.

Every refusal is a ``Refused`` whose ``field`` names the place at fault, as the
launch spells it: ``metadata.harbor_harness.files["fix-bug/instruction.md"]``.
"""

import hashlib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from pydantic import ValidationError

from benchwright_shared.agentic.config import TaskConfig
from benchwright_shared.refusal import Refused

MIB = 1 << 20
# One file of a task: an environment's source files, a test's fixtures.
MAX_FILE_BYTES = 4 * MIB
# All files of a dataset together.
MAX_DATASET_BYTES = 32 * MIB
MAX_FILES = 5_000
MAX_TASKS = 500
MAX_PATH_CHARS = 512

CONFIG_FILE = "task.toml"
INSTRUCTION_FILE = "instruction.md"
TEST_SCRIPT = "tests/test.sh"
SOLVE_SCRIPT = "solution/solve.sh"
TASK_PARTS = (CONFIG_FILE, INSTRUCTION_FILE, "environment/", "tests/", "solution/")

HARNESS_FIELD = "metadata.harbor_harness"
TASK_FIELD = "metadata.harbor_task"

TASK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
DRIVE = re.compile(r"^[A-Za-z]:$")
# Harbor strips leading provenance markers from the instruction (harbor.models.task.task).
CANARY_LINE = re.compile(r"^(<!--.*canary.*-->|#.*canary.*)$", re.IGNORECASE)


@dataclass(frozen=True)
class DatasetLimits:
    """The caps a dataset is held to; a caller whose transport is smaller passes its own."""

    max_file_bytes: int = MAX_FILE_BYTES
    max_dataset_bytes: int = MAX_DATASET_BYTES
    max_files: int = MAX_FILES
    max_tasks: int = MAX_TASKS


DEFAULT_LIMITS = DatasetLimits()


@dataclass(frozen=True)
class AgenticTask:
    """One Harbor task: its config, instruction and files (paths relative to the task)."""

    name: str
    config: TaskConfig
    instruction: str
    files: Mapping[str, bytes]
    # Where this task's files came from, to name them in a refusal.
    files_field: str = f"{HARNESS_FIELD}.files"
    prefix: str = ""

    def field_for(self, path: str) -> str:
        """The launch field naming one of this task's files."""
        return f'{self.files_field}["{self.prefix}{path}"]'

    def under(self, folder: str) -> dict[str, bytes]:
        """The files under ``folder`` (``environment``, ``tests``, ``solution``), keyed
        relative to it."""
        start = folder.rstrip("/") + "/"
        return {p.removeprefix(start): c for p, c in self.files.items() if p.startswith(start)}

    @property
    def has_solution(self) -> bool:
        return SOLVE_SCRIPT in self.files

    @property
    def digest(self) -> str:
        """SHA-256 over the task's paths and contents: equal tasks, equal digests."""
        return _digest(self.files)


@dataclass(frozen=True)
class AgenticDataset:
    """A named folder of tasks, by name in name order."""

    name: str
    tasks: Mapping[str, AgenticTask] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        """SHA-256 over every task's name and digest."""
        return _digest({name: task.digest.encode() for name, task in self.tasks.items()})


def _digest(files: Mapping[str, bytes]) -> str:
    outer = hashlib.sha256()
    for path in sorted(files):
        outer.update(f"{path}\0{hashlib.sha256(files[path]).hexdigest()}\n".encode())
    return outer.hexdigest()


def load_dataset(
    files: Mapping[str, str | bytes],
    *,
    dataset: str,
    only: str | None = None,
    limits: DatasetLimits = DEFAULT_LIMITS,
    where: str = HARNESS_FIELD,
    only_where: str = TASK_FIELD,
) -> AgenticDataset:
    """The dataset these files make, narrowed to task ``only`` when it is given.

    ``where`` is the launch field the dataset came in (its ``files`` and ``dataset``
    are named under it; empty: they are the body's own fields, as when a dataset is
    stored in the registry); ``only_where`` the field that named ``only``. Raises
    ``Refused`` naming the file or field at fault.
    """
    files_field = _under(where, "files")
    if not TASK_NAME.match(dataset):
        raise Refused(
            400,
            "invalid dataset name",
            f"dataset {dataset[:80]!r} must be 1-128 letters, digits, '.', '_' or '-'",
            field=_under(where, "dataset"),
            code="bad_dataset_name",
        )
    contents = _checked_files(files, files_field, limits)
    groups = _group_by_task(contents, dataset)
    if not groups:
        raise Refused(
            400,
            "the dataset holds no task",
            "a task is a folder with task.toml, instruction.md and tests/test.sh",
            field=files_field,
            code="no_tasks",
        )
    if len(groups) > limits.max_tasks:
        raise Refused(
            413,
            "too many tasks",
            f"the dataset holds {len(groups):,} tasks; at most {limits.max_tasks:,}",
            field=files_field,
            code="too_many_tasks",
        )
    tasks: dict[str, AgenticTask] = {}
    seen: dict[str, str] = {}
    for name, (prefix, task_files) in sorted(groups.items()):
        task = _load_task(name, prefix, task_files, files_field)
        for alias in {name.casefold(), *([task.config.task.name] if task.config.task else [])}:
            if alias in seen:
                raise Refused(
                    400,
                    "two tasks share a name",
                    f"tasks {seen[alias]!r} and {name!r} are both named {alias!r}",
                    field=task.field_for(CONFIG_FILE),
                    code="duplicate_task",
                )
            seen[alias] = name
        tasks[name] = task
    if only is not None:
        picked = _pick(tasks, only, only_where)
        tasks = {picked: tasks[picked]}
    return AgenticDataset(name=dataset, tasks=MappingProxyType(tasks))


def _under(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _pick(tasks: Mapping[str, AgenticTask], only: str, only_where: str) -> str:
    for name, task in tasks.items():
        package = task.config.task
        if only in (name, package and package.name, package and package.name.split("/")[-1]):
            return name
    known = ", ".join(list(tasks)[:20]) + (", ..." if len(tasks) > 20 else "")
    raise Refused(
        400,
        "no such task in the dataset",
        f"the dataset has no task {only[:80]!r}; it has: {known}",
        field=only_where,
        code="unknown_task",
    )


def path_problem(path: str) -> str | None:
    """Why ``path`` cannot name a file inside the dataset, or None when it can."""
    if not path:
        return "the path is empty"
    if len(path) > MAX_PATH_CHARS:
        return f"the path is longer than {MAX_PATH_CHARS} characters"
    if "\x00" in path:
        return "the path holds a NUL character"
    if "\\" in path:
        return "the path holds a backslash; separate folders with '/'"
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in path):
        return "the path holds a control character"
    if path.startswith("/") or DRIVE.match(path.split("/")[0]):
        return "the path is absolute; paths are relative to the dataset"
    parts = path.split("/")
    if ".." in parts:
        return "the path climbs out of the dataset with '..'"
    if "" in parts or "." in parts:
        return "the path has an empty or '.' segment"
    return None


def _checked_files(
    files: Mapping[str, str | bytes], files_field: str, limits: DatasetLimits
) -> dict[str, bytes]:
    if len(files) > limits.max_files:
        raise Refused(
            413,
            "too many files",
            f"the dataset holds {len(files):,} files; at most {limits.max_files:,}",
            field=files_field,
            code="too_many_files",
        )
    total = 0
    contents: dict[str, bytes] = {}
    for path in sorted(files):
        where = f'{files_field}["{path[:200]}"]'
        problem = path_problem(path)
        if problem:
            raise Refused(400, "unsafe file path", problem, field=where, code="unsafe_path")
        content = files[path]
        # Measured before anything is copied: an oversized file costs nothing to refuse.
        size = len(content)
        if size <= limits.max_file_bytes and isinstance(content, str):
            content = content.encode()
            size = len(content)
        if size > limits.max_file_bytes:
            raise Refused(
                413,
                "file too large",
                f"{path} holds {size:,} bytes or more; a file may hold {limits.max_file_bytes:,}",
                field=where,
                code="file_too_large",
            )
        if not isinstance(content, bytes):
            raise Refused(400, "file content must be text", field=where, code="bad_content")
        total += size
        if total > limits.max_dataset_bytes:
            raise Refused(
                413,
                "dataset too large",
                f"the files hold more than {limits.max_dataset_bytes:,} bytes together",
                field=files_field,
                code="dataset_too_large",
            )
        contents[path] = content
    folders = {
        "/".join(parts[:depth])
        for parts in (path.split("/") for path in contents)
        for depth in range(1, len(parts))
    }
    clash = sorted(folders.intersection(contents))
    if clash:
        raise Refused(
            400,
            "unsafe file path",
            f"{clash[0]} is both a file and a folder",
            field=f'{files_field}["{clash[0][:200]}"]',
            code="unsafe_path",
        )
    return contents


def _group_by_task(
    contents: Mapping[str, bytes], dataset: str
) -> dict[str, tuple[str, dict[str, bytes]]]:
    """Task name -> (its folder's prefix in the dataset, its files keyed in the task)."""
    if CONFIG_FILE in contents:
        return {dataset: ("", dict(contents))}
    groups: dict[str, tuple[str, dict[str, bytes]]] = {}
    for path, content in contents.items():
        folder, _, inner = path.partition("/")
        if inner:
            groups.setdefault(folder, (f"{folder}/", {}))[1][inner] = content
    return {
        name: group
        for name, group in groups.items()
        if any(p == part or p.startswith(part) for p in group[1] for part in TASK_PARTS)
    }


def _text(task: str, path: str, content: bytes, where: str) -> str:
    try:
        return content.decode()
    except UnicodeDecodeError:
        raise Refused(
            400,
            "file is not UTF-8 text",
            f"task {task!r}: {path} must be UTF-8 text",
            field=where,
            code="bad_encoding",
        ) from None


def _load_task(name: str, prefix: str, files: dict[str, bytes], files_field: str) -> AgenticTask:
    def where(path: str) -> str:
        return f'{files_field}["{prefix}{path}"]'

    if not TASK_NAME.match(name):
        raise Refused(
            400,
            "invalid task folder name",
            f"task folder {name[:80]!r} must be 1-128 letters, digits, '.', '_' or '-'",
            field=where(CONFIG_FILE),
            code="bad_task_name",
        )
    for path, code, what in (
        (CONFIG_FILE, "missing_task_config", "its configuration"),
        (INSTRUCTION_FILE, "missing_instruction", "what the agent is told"),
    ):
        if path not in files:
            raise Refused(
                400,
                f"task has no {path}",
                f"task {name!r} needs {path}: {what}",
                field=where(path),
                code=code,
            )
    config_text = _text(name, CONFIG_FILE, files[CONFIG_FILE], where(CONFIG_FILE))
    config = _config(name, config_text, where(CONFIG_FILE))
    if config.steps:
        raise Refused(
            422,
            "multi-step tasks are not supported",
            f"task {name!r} declares [[steps]]; Benchwright runs single-step tasks",
            field=where(CONFIG_FILE),
            code="multi_step_unsupported",
        )
    if config.environment.os != "linux":
        raise Refused(
            422,
            "only Linux tasks are supported",
            f"task {name!r} targets {config.environment.os}",
            field=where(CONFIG_FILE),
            code="unsupported_os",
        )
    if TEST_SCRIPT not in files:
        raise Refused(
            400,
            "task has no tests/test.sh",
            f"task {name!r} needs tests/test.sh: it writes the reward",
            field=where(TEST_SCRIPT),
            code="missing_tests",
        )
    if not config.environment.docker_image and not any(p.startswith("environment/") for p in files):
        raise Refused(
            400,
            "task has no environment",
            f"task {name!r} needs environment/ (a Dockerfile) or [environment] docker_image",
            field=where("environment/Dockerfile"),
            code="missing_environment",
        )
    instruction = _strip_canary(
        _text(name, INSTRUCTION_FILE, files[INSTRUCTION_FILE], where(INSTRUCTION_FILE))
    )
    return AgenticTask(
        name=name,
        config=config,
        instruction=instruction,
        files=MappingProxyType(files),
        files_field=files_field,
        prefix=prefix,
    )


def _config(name: str, text: str, field_name: str) -> TaskConfig:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise Refused(
            400,
            "task.toml is not valid TOML",
            f"task {name!r}: {exc}",
            field=field_name,
            code="bad_toml",
        ) from None
    try:
        return TaskConfig.model_validate(data)
    except (ValidationError, ValueError) as exc:
        detail = str(exc)
        if isinstance(exc, ValidationError):
            error = exc.errors()[0]
            detail = f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}"
        raise Refused(
            400,
            "task.toml does not fit Harbor's task format",
            f"task {name!r}: {detail}",
            field=field_name,
            code="bad_task_config",
        ) from None


def _strip_canary(text: str) -> str:
    lines = text.split("\n")
    index = 0
    while index < len(lines) and CANARY_LINE.match(lines[index].strip()):
        index += 1
    while index < len(lines) and not lines[index].strip():
        index += 1
    return "\n".join(lines[index:])
