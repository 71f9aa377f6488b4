"""``harness``: who scores a run. ``benchwright`` (the default: a scorer the Driver
writes or a pin names), ``inspect``: a team's own Inspect AI task, run as it is, or
``harbor``: agents on a Harbor-format dataset of tasks (``harbor.py``).

An Inspect launch names its task in ``metadata.inspect_harness``::

    {"task": "arith.py@arith",                 # file.py, or file.py@task_name
     "args": {"epochs": 1},                    # the task's arguments (-T)
     "files": {"arith.py": "...", "data/arith.jsonl": "..."}}

The files (the task file and its local datasets) travel to the orchestrator with the
launch and are laid into the run's work sandbox; the run's metadata keeps only their
names and SHA-256. lm-evaluation-harness and lighteval are refused by name: their
tasks download data this deployment cannot reach.
"""

import json
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from benchwright_shared.hashing import sha256_hex
from benchwright_shared.refusal import Refused

OWN = "benchwright"
SUPPORTED = (OWN, "inspect", "harbor")
KNOWN = (*SUPPORTED, "lmeval", "lighteval")
SUPPORTED_TEXT = (
    "'inspect' (an Inspect AI task file with its local data, in "
    "metadata.inspect_harness), 'harbor' (a Harbor-format dataset of agentic tasks, "
    "in metadata.harbor_harness) or 'benchwright' (the default)"
)
MAX_FILES = 100
# The files travel in one bus message (launch, run log, sandbox write): NATS caps those at 1 MB.
MAX_BUNDLE_BYTES = 512 * 1024
# file.py or dir/file.py, optionally @task_name: relative, no parent steps.
TASK_SPEC = re.compile(r"^(?P<file>[\w.-]+(?:/[\w.-]+)*\.py)(?:@(?P<name>[A-Za-z_]\w*))?$")
SAFE_PATH = re.compile(r"^[\w.-]+(?:/[\w.-]+)*$")


def check_harness(value: str | None) -> str | None:
    """The launch's ``harness``, or a message that says what is supported."""
    if value is None or value in SUPPORTED:
        return value
    if value in KNOWN:
        raise ValueError(
            f"the {value!r} harness is not supported here (its tasks fetch their data from "
            f"the internet); use {SUPPORTED_TEXT}"
        )
    raise ValueError(f"unknown harness {value!r}; use {SUPPORTED_TEXT}")


class InspectHarnessIn(BaseModel):
    """``metadata.inspect_harness``: the Inspect task a run evaluates."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field(min_length=1, max_length=300)
    args: dict[str, Any] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict, max_length=MAX_FILES)

    @field_validator("task")
    @classmethod
    def _task(cls, value: str) -> str:
        if value.startswith("inspect_evals/"):
            if value.removeprefix("inspect_evals/") not in OFFLINE_EVALS:
                offline = ", ".join(f"inspect_evals/{name}" for name in OFFLINE_EVALS)
                raise ValueError(
                    f"{value} loads its data from the Hugging Face hub, which this deployment "
                    f"cannot reach; offline: {offline}, or upload a task file and its data "
                    "in 'files'"
                )
            return value
        if not TASK_SPEC.match(value) or ".." in value.split("/"):
            raise ValueError(f"task {value[:80]!r} must be a relative file.py or file.py@task_name")
        return value

    @field_validator("files")
    @classmethod
    def _files(cls, value: dict[str, str]) -> dict[str, str]:
        for path in value:
            if not SAFE_PATH.match(path) or ".." in path.split("/"):
                raise ValueError(f"file name {path[:80]!r} must be a relative path")
        size = sum(len(text.encode()) for text in value.values())
        if size > MAX_BUNDLE_BYTES:
            raise ValueError(f"the files hold {size:,} bytes; at most {MAX_BUNDLE_BYTES:,}")
        return value

    def task_file(self) -> str:
        return self.task.partition("@")[0]

    def catalog(self) -> tuple[str, str] | None:
        """(benchmark, subset) of the catalog rows an ``inspect_evals`` task is fed."""
        name = self.task.removeprefix("inspect_evals/")
        if name == self.task:
            return None
        benchmark, subset_of = OFFLINE_EVALS[name]
        return benchmark, subset_of(self.args)


def _mmlu_subset(args: dict[str, Any]) -> str:
    """One subject's subset when the task asks for one subject, else all of MMLU."""
    subjects = args.get("subjects") or []
    subjects = subjects.split(",") if isinstance(subjects, str) else list(subjects)
    return str(subjects[0]).strip() if len(subjects) == 1 else "all"


# inspect_evals tasks whose data the catalog holds offline: the runtime's
# bench_inspect_evals.py feeds them those rows -> (catalog benchmark, its subset).
OFFLINE_EVALS: dict[str, tuple[str, Callable[[dict[str, Any]], str]]] = {
    "mmlu_0_shot": ("MMLU", _mmlu_subset),
    "gsm8k": ("GSM8K", lambda _args: "test"),
}
OFFLINE_EVALS_FILE = "bench_inspect_evals.py"


def inspect_launch(metadata: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The harness spec for the orchestrator, and the metadata the run keeps.

    Raises ``Refused`` naming the field at fault.
    """
    found = metadata.get("inspect_harness")
    if not isinstance(found, dict):
        raise Refused(
            400,
            "the inspect harness needs its task",
            "name it in metadata.inspect_harness: {task, args, files}",
            field="metadata.inspect_harness",
        )
    try:
        spec = InspectHarnessIn.model_validate(found)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"][:1])
        raise Refused(
            400,
            "invalid inspect task",
            str(error["msg"]).removeprefix("Value error, "),
            field=f"metadata.inspect_harness.{where}" if where else "metadata.inspect_harness",
        ) from None
    catalog = spec.catalog()
    if catalog is not None:
        if spec.files:
            raise Refused(
                400,
                "an inspect_evals task takes no files",
                f"{spec.task} is fed the catalog's rows of {catalog[0]}",
                field="metadata.inspect_harness.files",
            )
        name = spec.task.removeprefix("inspect_evals/")
        harness = {
            "name": "inspect",
            "task": f"{OFFLINE_EVALS_FILE}@{name}",
            "args": spec.args,
            "files": {},
            "catalog": {"benchmark": catalog[0], "subset": catalog[1]},
        }
        return harness, {**metadata, "inspect_harness": {"task": spec.task, "args": spec.args}}
    if spec.task_file() not in spec.files:
        raise Refused(
            400,
            "the task file is missing",
            f"metadata.inspect_harness.files holds no {spec.task_file()!r}",
            field="metadata.inspect_harness.files",
        )
    harness = {"name": "inspect", "task": spec.task, "args": spec.args, "files": spec.files}
    kept = {
        "task": spec.task,
        "args": spec.args,
        "files": sorted(spec.files),
        "files_sha256": sha256_hex(json.dumps(spec.files, sort_keys=True)),
    }
    return harness, {**metadata, "inspect_harness": kept}
