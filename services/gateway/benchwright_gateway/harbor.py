"""``harness: "harbor"``: agents on a Harbor-format dataset that travels with the launch.

The launch names the dataset, its files, the agent and the agent's arguments::

    metadata.harbor_harness = {
        "dataset": "benchwright-starter",
        "files": {"fix-median/task.toml": "...", "fix-median/instruction.md": "...", ...},
        "agent": "benchwright",            # or "oracle" (runs solution/solve.sh), "nop",
                                           # "product" (a product under test: agentic/product.py),
                                           # Harbor's own: "harbor:oracle", "harbor:nop", ...
        "agent_args": {"max_turns": 30},
    }
    metadata.harbor_task = "fix-median"    # optional: one task, by folder or task.toml name

Everything that can be known from the files is checked here, before anything is
written or sent: the dataset's layout and sizes (``benchwright_shared.agentic``),
the agent and its arguments, a solution for the oracle, and an environment each
selected task can have on the run's backend. The files travel to the orchestrator
in the launch (one bus message, so the same cap as an Inspect task's files); the
run's metadata keeps their names and SHA-256 only.

A dataset stored in the registry as an agentic subset (``check_dataset``, the same
checks and caps as a launch's) is launched pinned: ``benchmark`` + ``subset`` with
``harness: "harbor"``, and ``metadata.harbor_harness`` holding only the agent and its
arguments (``check_pinned``). The gateway reads the subset's rows and launches them
as the files of a file launch (``with_stored_files``; decision 0050).
"""

import importlib.util
import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchwright_gateway.harness import MAX_BUNDLE_BYTES
from benchwright_shared.agentic import (
    AgenticDataset,
    AgenticTask,
    DatasetLimits,
    ProductAgentArgs,
    builds_dockerfiles,
    environment_plan,
    files_from_rows,
    load_dataset,
    template_plan,
)
from benchwright_shared.hashing import sha256_hex
from benchwright_shared.refusal import Refused

HARNESS_FIELD = "metadata.harbor_harness"
TASK_FIELD = "metadata.harbor_task"
DEFAULT_AGENT = "benchwright"
# Harbor's own agents, run through the bridge (the ``harbor`` package, the ``agents`` extra).
# ``harbor:claude-code`` and ``harbor:codex`` run the ``claude`` or ``codex`` CLI the
# task's sandbox must already hold: whether it does is known only there (the task's
# image, the operator's agent directory), so a sandbox without it makes an error row
# naming it, not a refusal here.
BRIDGE_AGENTS = (
    "harbor:oracle",
    "harbor:nop",
    "harbor:terminus-2",
    "harbor:claude-code",
    "harbor:codex",
)
AGENTS = ("benchwright", "oracle", "nop", "product", *BRIDGE_AGENTS)
ORACLES = ("oracle", "harbor:oracle")
# Harbor's installed-agent CLIs the bridge does not run, and why not.
UNBRIDGED_AGENTS = {
    "harbor:gemini-cli": "the bridge does not point 'gemini' at the run's proxy",
    "harbor:aider": "the bridge does not point 'aider' at the run's proxy",
    "harbor:opencode": "the bridge does not point 'opencode' at the run's proxy",
}
# The agents that take arguments, and what each takes.
AGENT_ARGS: dict[str, type[BaseModel]] = {}
SOLVE_SCRIPT = "solution/solve.sh"
# The backend that runs a task's own image ([environment] docker_image): Kubernetes.
IMAGE_BACKEND = "sandbox0"
# One bus message carries the files: each file and all of them within the bundle cap.
LIMITS = DatasetLimits(max_file_bytes=MAX_BUNDLE_BYTES, max_dataset_bytes=MAX_BUNDLE_BYTES)


class HarborHarnessIn(BaseModel):
    """``metadata.harbor_harness``, its shape only; the files are checked by the loader."""

    model_config = ConfigDict(extra="forbid")

    dataset: str = Field(min_length=1, max_length=128)
    files: dict[str, str]
    agent: str = DEFAULT_AGENT
    agent_args: dict[str, Any] = Field(default_factory=dict)


class HarborPinIn(BaseModel):
    """``metadata.harbor_harness`` of a pinned launch: the subset brings the dataset."""

    model_config = ConfigDict(extra="forbid")

    agent: str = DEFAULT_AGENT
    agent_args: dict[str, Any] = Field(default_factory=dict)


class BenchwrightAgentArgs(BaseModel):
    """What the platform's own agent loop takes; each absent one is the loop's default."""

    model_config = ConfigDict(extra="forbid", strict=True)

    max_turns: int | None = Field(default=None, ge=1, le=500)
    max_tokens: int | None = Field(default=None, ge=1)
    wall_time_s: float | None = Field(default=None, gt=0)
    system_prompt: str | None = Field(default=None, max_length=20_000)


AGENT_ARGS.update({DEFAULT_AGENT: BenchwrightAgentArgs, "product": ProductAgentArgs})


@dataclass(frozen=True)
class HarborLaunch:
    """A checked harbor launch: what it asked for and the tasks it selects."""

    spec: HarborHarnessIn
    task: str | None
    dataset: AgenticDataset

    @property
    def tasks(self) -> list[AgenticTask]:
        return list(self.dataset.tasks.values())

    def harness(self) -> dict[str, Any]:
        """The harness spec the orchestrator reads (``LaunchRun.harness``)."""
        return {
            "name": "harbor",
            "dataset": self.spec.dataset,
            "files": self.spec.files,
            "agent": self.spec.agent,
            "agent_args": self.spec.agent_args,
            "task": self.task,
        }

    def kept(self) -> dict[str, Any]:
        """What the run's metadata keeps of ``harbor_harness``: names, not contents."""
        return {
            "dataset": self.spec.dataset,
            "agent": self.spec.agent,
            "agent_args": self.spec.agent_args,
            "files": sorted(self.spec.files),
            "files_sha256": sha256_hex(json.dumps(self.spec.files, sort_keys=True)),
            "tasks": list(self.dataset.tasks),
        }


def harbor_launch(
    metadata: dict[str, Any], compute: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The harness spec for the orchestrator, and the metadata the run keeps, for a
    run on ``compute`` (the launch's, else the account's default).

    Raises ``Refused`` naming the field at fault.
    """
    checked = check_harbor(metadata, compute)
    for task in checked.tasks:
        _check_backend(task, compute)
    return checked.harness(), {**metadata, "harbor_harness": checked.kept()}


def check_harbor(metadata: dict[str, Any], compute: str | None = None) -> HarborLaunch:
    """Everything about a harbor launch that can be known before its backend is, with
    each Dockerfile read as ``compute`` would take it (built, or honoured as a plan)."""
    spec = _spec(metadata.get("harbor_harness"))
    _check_agent(spec.agent, spec.agent_args)
    only = _only(metadata)
    dataset = check_dataset(spec.files, spec.dataset, only=only, compute=compute)
    checked = HarborLaunch(spec=spec, task=only, dataset=dataset)
    for task in checked.tasks:
        if spec.agent in ORACLES and not task.has_solution:
            raise Refused(
                400,
                "the oracle agent needs a solution",
                f"task {task.name!r} has no {SOLVE_SCRIPT}: the oracle runs it",
                field=task.field_for(SOLVE_SCRIPT),
                code="missing_solution",
            )
    return checked


def check_dataset(
    files: dict[str, str],
    name: str,
    *,
    only: str | None = None,
    where: str = HARNESS_FIELD,
    compute: str | None = None,
) -> AgenticDataset:
    """A dataset's layout, sizes and environments, as a launch and the registry's store
    hold them; ``where`` names the field its ``files`` and ``dataset`` came in (empty:
    the body's own). A Dockerfile is checked as a build on a ``compute`` that builds
    one (e2b), else as the local plan. Raises ``Refused`` naming the file at fault."""
    dataset = load_dataset(files, dataset=name, only=only, limits=LIMITS, where=where)
    for task in dataset.tasks.values():
        if task.config.environment.docker_image:
            continue
        # A step that cannot be built, or honoured, refuses now.
        if builds_dockerfiles(compute):
            template_plan(task)
        else:
            environment_plan(task)
    return dataset


def check_pinned(metadata: dict[str, Any]) -> HarborPinIn:
    """A pinned harbor launch's agent, its arguments and its task narrowing; the files
    are the subset's, checked once they are read (``with_stored_files``)."""
    found = metadata.get("harbor_harness", {})
    if isinstance(found, dict) and {"dataset", "files"} & found.keys():
        key = "files" if "files" in found else "dataset"
        raise Refused(
            400,
            "a pinned harbor run takes its dataset from the subset",
            "name the agent and its arguments only; send 'files' without 'benchmark' to "
            "launch a folder instead",
            field=f"{HARNESS_FIELD}.{key}",
        )
    if not isinstance(found, dict):
        raise Refused(
            400,
            "invalid harbor harness",
            "metadata.harbor_harness is an object: {agent, agent_args}",
            field=HARNESS_FIELD,
        )
    try:
        pin = HarborPinIn.model_validate(found)
    except ValidationError as exc:
        raise _invalid(exc) from None
    _check_agent(pin.agent, pin.agent_args)
    _only(metadata)
    return pin


def with_stored_files(
    metadata: dict[str, Any], dataset: str, rows: list[dict[str, Any]]
) -> dict[str, Any]:
    """A pinned launch's metadata with the subset's tasks as its dataset's files: what
    a file launch of the same tasks would send. Refuses a subset of other rows."""
    files = files_from_rows(rows)
    if files is None:
        raise Refused(
            400,
            "the subset is not a Harbor dataset",
            "harness 'harbor' runs an agentic subset (one stored with "
            "POST /v1/benchmarks/{id}/subsets/harbor); this subset holds other rows",
            field="subset",
            code="not_an_agentic_subset",
        )
    pin = check_pinned(metadata)
    return {**metadata, "harbor_harness": {"dataset": dataset, "files": files, **pin.model_dump()}}


def _only(metadata: dict[str, Any]) -> str | None:
    only = metadata.get("harbor_task")
    if only is not None and (not isinstance(only, str) or not only):
        raise Refused(
            400,
            "invalid harbor task",
            "metadata.harbor_task names one task of the dataset: its folder or task.toml name",
            field=TASK_FIELD,
        )
    return only


def _spec(found: Any) -> HarborHarnessIn:
    if not isinstance(found, dict):
        raise Refused(
            400,
            "the harbor harness needs its dataset",
            "name it in metadata.harbor_harness: {dataset, files, agent, agent_args}",
            field=HARNESS_FIELD,
        )
    try:
        return HarborHarnessIn.model_validate(found)
    except ValidationError as exc:
        raise _invalid(exc) from None


def _invalid(exc: ValidationError) -> Refused:
    error = exc.errors()[0]
    loc = [str(p) for p in error["loc"]]
    where = f"{HARNESS_FIELD}.{loc[0]}" if loc else HARNESS_FIELD
    if loc[:1] == ["files"] and len(loc) > 1:
        where = f'{HARNESS_FIELD}.files["{loc[1][:200]}"]'
    detail = "unknown field" if error["type"] == "extra_forbidden" else str(error["msg"])
    return Refused(400, "invalid harbor harness", detail, field=where)


def _check_agent(agent: str, agent_args: dict[str, Any]) -> None:
    if agent in UNBRIDGED_AGENTS:
        raise Refused(
            400,
            "agent not available",
            f"agent {agent!r}: {UNBRIDGED_AGENTS[agent]}. Use 'harbor:claude-code' or "
            "'harbor:codex' (its CLI in the sandbox) or 'harbor:terminus-2' (Harbor's "
            "model-driven agent)",
            field=f"{HARNESS_FIELD}.agent",
            code="agent_unavailable",
        )
    if agent not in AGENTS:
        raise Refused(
            400,
            "unknown agent",
            f"agent {agent[:80]!r} is not one this deployment runs; use "
            "'benchwright' (the platform's own loop, the default), 'oracle' (runs each "
            "task's solution/solve.sh), 'nop' (does nothing), 'product' (a product "
            "under test, started in the sandbox from agent_args.command), or one of "
            f"Harbor's own through the bridge: {', '.join(repr(a) for a in BRIDGE_AGENTS)}",
            field=f"{HARNESS_FIELD}.agent",
            code="unknown_agent",
        )
    if agent in BRIDGE_AGENTS and importlib.util.find_spec("harbor") is None:
        raise Refused(
            400,
            "Harbor's agents are not installed",
            f"agent {agent!r} runs Harbor's own agent, and this deployment has no "
            "'harbor' package: install the 'agents' extra (pip install 'benchwright[agents]')",
            field=f"{HARNESS_FIELD}.agent",
            code="agent_unavailable",
        )
    model = AGENT_ARGS.get(agent)
    if model is None:
        if agent_args:
            key = next(iter(agent_args))
            raise Refused(
                400,
                "unknown agent argument",
                f"the {agent} agent takes no arguments; not {key[:80]!r}",
                field=f"{HARNESS_FIELD}.agent_args.{key}",
                code="unknown_agent_arg",
            )
        return
    try:
        model.model_validate(agent_args)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = [str(p) for p in error["loc"]]
        key = ".".join(loc[:2]) if loc else ""
        field = f"{HARNESS_FIELD}.agent_args" + (f".{key}" if key else "")
        if error["type"] == "extra_forbidden":
            known = ", ".join(model.model_fields)
            raise Refused(
                400,
                "unknown agent argument",
                f"the {agent} agent takes {known}; not {key[:80]!r}",
                field=field,
                code="unknown_agent_arg",
            ) from None
        what = "missing" if error["type"] == "missing" else error["msg"]
        raise Refused(
            400,
            "invalid agent argument",
            f"the {agent} agent's {key or 'arguments'}: {what}",
            field=field,
        ) from None


def _check_backend(task: AgenticTask, compute: str | None) -> None:
    """A task's own image runs only where images run: the Kubernetes backend. The
    gateway goes by the launch's ``compute`` (or the account's default): a run left
    to the deployment's choice may land on the local backend, which has no Docker."""
    image = task.config.environment.docker_image
    if image and compute != IMAGE_BACKEND:
        raise Refused(
            422,
            "the task's image needs the Kubernetes backend",
            f"task {task.name!r} runs the Docker image {image}: a Docker image run needs "
            f"the Kubernetes backend (compute: {IMAGE_BACKEND!r}); the local backend has no "
            "Docker. Launch with that compute, or give the task an environment/Dockerfile "
            "the local backend can honour instead of docker_image",
            field=task.field_for("task.toml"),
            code="image_needs_kubernetes",
        )
