"""What a launch from the command line needs besides the SDK: flag parsing, the
aggregate gate, and the idempotency key that lets an identical invocation re-attach.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._models import Run, TaskSummary
from ._common import EXIT_USAGE, fail

if TYPE_CHECKING:
    from .._client import Benchwright

__all__ = [
    "Gate",
    "GateVerdict",
    "HarborFlags",
    "RegressionGate",
    "git_commit",
    "harness_metadata",
    "invocation_key",
    "parse_gate",
    "parse_limits",
    "parse_model",
]

# The task-summary figures a gate may name; each must reach its threshold.
GATE_METRICS = ("pass_rate",)


def parse_model(value: str, api_base: str | None = None) -> dict[str, str]:
    """``MODEL@PROVIDER`` split on its last ``@`` (model names may contain ``@``). With
    ``--api-base`` a bare ``MODEL`` means the OpenAI-compatible server found there."""
    model, sep, provider = value.rpartition("@")
    if not sep and api_base and value:
        model, provider = value, "openai_compatible"
    elif not sep or not model or not provider:
        fail(
            f"--model must be MODEL@PROVIDER, e.g. qwen/qwen3-32b@openrouter, or a bare "
            f"MODEL with --api-base (got {value!r})",
            code=EXIT_USAGE,
        )
    sut = {"model": model, "provider": provider}
    if api_base:
        sut["api_base"] = api_base
    return sut


def parse_judges(values: list[str]) -> dict[str, str] | list[dict[str, str]] | None:
    """``--judge MODEL@PROVIDER`` (repeat for a panel): one judge, a list, or None.
    ``MODEL@http://host:port/v1`` is a judge on an OpenAI-compatible server you run."""
    judges = []
    for value in values:
        model, sep, where = value.rpartition("@")
        if not sep or not model or not where:
            fail(
                f"--judge must be MODEL@PROVIDER or MODEL@URL, e.g. gpt-4o-mini@openrouter "
                f"(got {value!r})",
                code=EXIT_USAGE,
            )
        if where.startswith(("http://", "https://")):
            judges.append({"model": model, "provider": "openai_compatible", "api_base": where})
        else:
            judges.append({"model": model, "provider": where})
    if not judges:
        return None
    return judges[0] if len(judges) == 1 else judges


def parse_limits(values: list[str]) -> dict[str, dict[str, float]] | None:
    """``run.cost=15`` and friends as the launch's ``limits`` (dollars and seconds).

    The level may name a phase (``phase:atomize.duration=60``); the server says which
    ceilings it can enforce.
    """
    limits: dict[str, dict[str, float]] = {}
    for value in values:
        target, eq, number = value.partition("=")
        level, dot, quantity = target.strip().rpartition(".")
        try:
            amount = float(number)
        except ValueError:
            amount = -1.0
        if not eq or not dot or not level or not quantity or amount <= 0:
            fail(
                f"--limit-to takes LEVEL.QUANTITY=NUMBER, e.g. run.cost=15 (got {value!r})",
                code=EXIT_USAGE,
            )
        limits.setdefault(level, {})[quantity] = amount
    return limits or None


def parse_phase_models(values: list[str]) -> dict[str, str] | None:
    """``atomize=openai://gpt-4o`` and friends as the launch's ``phase_models``."""
    models: dict[str, str] = {}
    for value in values:
        phase, eq, model = value.partition("=")
        if not eq or not phase.strip() or "://" not in model:
            fail(
                "--phase-model takes PHASE=PROVIDER://MODEL, e.g. atomize=openai://gpt-4o "
                f"(got {value!r})",
                code=EXIT_USAGE,
            )
        models[phase.strip()] = model.strip()
    return models or None


@dataclass(frozen=True)
class GateVerdict:
    """How a finished run measured against its gate: whether it held, one line that
    says why, and the figures behind it (``document``)."""

    held: bool
    text: str
    figures: Mapping[str, Any]

    def line(self) -> str:
        """``gate held: pass_rate 0.950 >= 0.900`` (or why it did not hold)."""
        return self.text

    def document(self) -> dict[str, Any]:
        """The verdict as JSON-ready data."""
        return {**self.figures, "held": self.held}


@dataclass(frozen=True)
class Gate:
    """``pass_rate=0.90``: the run-wide aggregate must reach the threshold."""

    metric: str
    threshold: float

    def check(self, bw: Benchwright, run: Run, summary: TaskSummary, run_ok: bool) -> GateVerdict:
        """Measure a finished run's task summary."""
        found = getattr(summary, self.metric, None)
        value = None if found is None else float(found)
        shown = "none" if value is None else f"{value:.3f}"
        held = run_ok and value is not None and value >= self.threshold
        if not run_ok:
            text = f"gate failed: the run ended in error ({self.metric} {shown})"
        elif held:
            text = f"gate held: {self.metric} {shown} >= {self.threshold:.3f}"
        else:
            text = f"gate failed: {self.metric} {shown} < {self.threshold:.3f}"
        figures = {"metric": self.metric, "threshold": self.threshold, "value": value}
        return GateVerdict(held, text, figures)


# What ``no-regression-vs=`` may name besides a run id.
REFERENCES = ("@baseline", "@parent")


@dataclass(frozen=True)
class RegressionGate:
    """``no-regression-vs=REF,alpha=0.05``: the run must not be significantly worse
    than REF on the tasks both ran (``bw.runs.compare``: McNemar's exact test on the
    flips, a paired bootstrap of the mean score).

    REF is a run id, ``@parent`` (the run this replay or fork derives from), or
    ``@baseline`` (your newest finished run of the same benchmark and subset whose
    metadata says ``purpose: baseline`` or ``baseline: true``). A comparison with no
    shared scored task fails the gate: it cannot show there was no regression.
    """

    reference: str
    alpha: float = 0.05

    def check(self, bw: Benchwright, run: Run, summary: TaskSummary, run_ok: bool) -> GateVerdict:
        figures: dict[str, Any] = {
            "metric": "no_regression",
            "reference": self.reference,
            "alpha": self.alpha,
        }
        if not run_ok:
            return GateVerdict(False, "gate failed: the run ended in error", figures)
        reference = self._resolve(bw, run)
        if reference is None:
            text = f"gate failed: no run to compare with for {self.reference}"
            return GateVerdict(False, text, figures)
        found = bw.runs.compare(reference, run.id, alpha=self.alpha)
        verdict = found.verdict
        figures |= {
            "reference_run": reference,
            "outcome": verdict.outcome,
            "regressed": found.flips.regressed,
            "fixed": found.flips.fixed,
            "p_value": found.mcnemar.p_value,
        }
        held = verdict.outcome not in ("worse", "no_common_tasks")
        return GateVerdict(held, f"gate {'held' if held else 'failed'}: {verdict.text}", figures)

    def _resolve(self, bw: Benchwright, run: Run) -> str | None:
        if self.reference == "@parent":
            return run.derived_from
        if self.reference != "@baseline":
            return self.reference
        benchmark = run.benchmark.id if run.benchmark else None
        subset = run.subset.id if run.subset else None
        page_token = None
        for _ in range(20):  # the newest 1,000 runs of the benchmark
            page = bw.runs.list(
                {"benchmark": benchmark, "status": "ok"} if benchmark else {"status": "ok"},
                limit=50,
                page_token=page_token,
            )
            for candidate in page.data:
                metadata: Mapping[str, Any] = candidate.metadata or {}
                marked = metadata.get("purpose") == "baseline" or metadata.get("baseline") is True
                same_subset = candidate.subset is not None and candidate.subset.id == subset
                if marked and same_subset and candidate.id != run.id:
                    return candidate.id
            page_token = page.next_page_token
            if not page_token:
                return None
        return None


def parse_gate(value: str) -> Gate | RegressionGate:
    """``pass_rate=FRACTION`` (a fraction between 0 and 1), or
    ``no-regression-vs=REF[,alpha=A]`` (``RegressionGate``)."""
    metric, eq, rest = value.partition("=")
    metric = metric.strip()
    if metric == "no-regression-vs":
        return _parse_regression_gate(value, rest)
    try:
        threshold = float(rest)
    except ValueError:
        threshold = -1.0
    if not eq or metric not in GATE_METRICS or not 0 <= threshold <= 1:
        fail(
            f"--gate takes {'|'.join(GATE_METRICS)}=FRACTION or no-regression-vs=RUN[,alpha=A], "
            f"e.g. pass_rate=0.90 (got {value!r})",
            code=EXIT_USAGE,
        )
    return Gate(metric, threshold)


def _parse_regression_gate(value: str, rest: str) -> RegressionGate:
    reference, *options = [part.strip() for part in rest.split(",")]
    alpha = 0.05
    bad = not reference or (reference.startswith("@") and reference not in REFERENCES)
    for option in options:
        name, eq, number = option.partition("=")
        try:
            alpha = float(number) if name.strip() == "alpha" and eq else -1.0
        except ValueError:
            alpha = -1.0
        bad = bad or not 0 < alpha <= 0.5
    if bad:
        fail(
            "--gate no-regression-vs takes a run id, @baseline or @parent, and optionally "
            "alpha=A with 0 < A <= 0.5, e.g. no-regression-vs=@baseline,alpha=0.05 "
            f"(got {value!r})",
            code=EXIT_USAGE,
        )
    return RegressionGate(reference, alpha)


# What the CLI sends of a task file's folder (the server takes up to 512 KiB in all).
BUNDLE_MAX_FILES = 100
BUNDLE_MAX_BYTES = 512 * 1024
BUNDLE_SKIP = {"__pycache__", "logs", "node_modules"}


def harness_metadata(
    harness: str | None,
    task: str | None,
    args: list[str] | None = None,
    harbor: HarborFlags | None = None,
    *,
    pinned: bool = False,
) -> dict[str, Any]:
    """Where a harness reads its task: ``metadata.<harness>_harness``. A local Inspect
    task file goes with the files of its folder (its datasets); ``args`` are
    ``KEY=VALUE`` task arguments, each value read as JSON when it parses. A Harbor
    dataset is a local folder (``task``), sent whole with the agent ``harbor`` names,
    or, ``pinned`` (``--benchmark``/``--subset``), an agentic subset of the registry:
    then only the agent goes."""
    harbor = harbor or HarborFlags()
    if harness != "harbor" and harbor.given():
        fail(f"{harbor.given()} takes --harness harbor", EXIT_USAGE)
    if harness == "harbor" and (task is not None or pinned):
        if args:
            fail("--harness-arg is an Inspect task's; give the agent --agent-arg", EXIT_USAGE)
        if task is None:
            return harbor_pin(harbor)
        if pinned:
            fail(
                "a pinned Harbor run takes its tasks from --subset: drop --harness-task", EXIT_USAGE
            )
        return harbor_bundle(task, harbor)
    if task is None:
        if harness not in (None, "benchwright"):
            fail(f"--harness {harness} needs --harness-task", EXIT_USAGE)
        return {}
    if harness is None:
        fail("--harness-task needs --harness inspect", EXIT_USAGE)
    found: dict[str, Any] = {"task": task}
    if args:
        found["args"] = dict(_task_arg(a) for a in args)
    if harness == "inspect" and not task.startswith("inspect_evals/"):
        found |= inspect_bundle(task)
    return {f"{harness}_harness": found}


@dataclass(frozen=True)
class HarborFlags:
    """The flags of a Harbor launch besides the dataset folder."""

    task: str | None = None
    agent: str | None = None
    agent_args: tuple[str, ...] = ()

    def given(self) -> str:
        """The first of these flags given, by name; empty when none is."""
        for flag, value in (
            ("--harbor-task", self.task),
            ("--agent", self.agent),
            ("--agent-arg", self.agent_args),
        ):
            if value:
                return flag
        return ""


def harbor_bundle(folder: str, flags: HarborFlags) -> dict[str, Any]:
    """``--harness-task FOLDER`` of a Harbor launch as its metadata: the folder's
    files (named after it), the agent and its ``KEY=VALUE`` arguments."""
    from ..harbor import DEFAULT_AGENT, DatasetFolderError, harbor_metadata

    agent_args = dict(_task_arg(a, "--agent-arg") for a in flags.agent_args)
    try:
        return harbor_metadata(
            folder, agent=flags.agent or DEFAULT_AGENT, agent_args=agent_args, task=flags.task
        )
    except DatasetFolderError as exc:
        fail(f"--harness-task {exc}", EXIT_USAGE)


def harbor_pin(flags: HarborFlags) -> dict[str, Any]:
    """A pinned Harbor launch's metadata: the agent and its arguments, the subset
    brings the tasks."""
    agent_args = dict(_task_arg(a, "--agent-arg") for a in flags.agent_args)
    harness: dict[str, Any] = {"agent_args": agent_args}
    if flags.agent:
        harness["agent"] = flags.agent
    metadata: dict[str, Any] = {"harbor_harness": harness}
    if flags.task:
        metadata["harbor_task"] = flags.task
    return metadata


def _task_arg(text: str, flag: str = "--harness-arg") -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        fail(f"{flag} takes KEY=VALUE, not {text!r}", EXIT_USAGE)
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def inspect_bundle(task: str) -> dict[str, Any]:
    """``task`` (``path/file.py[@name]``) as the server takes it: the task named
    relative to the file's folder, and every file of that folder by relative path."""
    path, at, name = task.partition("@")
    file = Path(path)
    if not file.is_file():
        fail(f"--harness-task {path}: no such file", EXIT_USAGE)
    root = file.resolve().parent
    files: dict[str, str] = {}
    size = 0
    for found in sorted(root.rglob("*")):
        relative = found.relative_to(root)
        hidden = any(p.startswith(".") or p in BUNDLE_SKIP for p in relative.parts)
        if hidden or not found.is_file():
            continue
        if found.suffix in (".pyc", ".eval"):
            continue
        try:
            files[relative.as_posix()] = found.read_text()
        except UnicodeDecodeError:
            fail(f"{found} is not text: an Inspect task's files are sent as text", EXIT_USAGE)
        size += len(files[relative.as_posix()].encode())
        if len(files) > BUNDLE_MAX_FILES or size > BUNDLE_MAX_BYTES:
            fail(
                f"the folder of {file} holds more than {BUNDLE_MAX_FILES} files or "
                f"{BUNDLE_MAX_BYTES // 1024} KiB: put the task and its data in a folder "
                "of their own",
                EXIT_USAGE,
            )
    return {"task": file.name + (f"@{name}" if at else ""), "files": files}


def git_commit(cwd: Path) -> str:
    """The commit checked out at ``cwd`` (empty outside a git work tree)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _given(value: Any) -> bool:
    return value is not None and value is not False and value != [] and value != {}


def invocation_key(command: str, params: Mapping[str, Any], cwd: Path | None = None) -> str:
    """The idempotency key of a launch: sha256 of the invocation, cwd and git commit.

    ``params`` are the command's launch flags as parsed from argv, so spelling
    (``--request X`` or ``"X"``, flag order) does not matter and display-only flags
    (``--output``, ``--no-wait``, ``--gate``) are left out: adding ``--no-wait`` or
    ``--gate`` to a retry re-attaches to the same run.
    """
    where = Path.cwd() if cwd is None else cwd
    material = {
        "command": command,
        "params": {k: v for k, v in sorted(params.items()) if _given(v)},
        "cwd": os.fspath(where.resolve()),
        "commit": git_commit(where),
    }
    digest = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
    return f"cli-{digest}"
