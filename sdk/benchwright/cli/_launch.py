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
from typing import Any

from .._models import TaskSummary
from ._common import EXIT_USAGE, fail

__all__ = [
    "Gate",
    "GateVerdict",
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
    """How a finished run measured against its gate."""

    metric: str
    threshold: float
    value: float | None
    run_ok: bool

    @property
    def held(self) -> bool:
        """Whether the run ended ok with the metric at or above the threshold."""
        return self.run_ok and self.value is not None and self.value >= self.threshold

    def line(self) -> str:
        """``gate held: pass_rate 0.950 >= 0.900`` (or why it did not hold)."""
        shown = "none" if self.value is None else f"{self.value:.3f}"
        if not self.run_ok:
            return f"gate failed: the run ended in error ({self.metric} {shown})"
        if self.held:
            return f"gate held: {self.metric} {shown} >= {self.threshold:.3f}"
        return f"gate failed: {self.metric} {shown} < {self.threshold:.3f}"

    def document(self) -> dict[str, Any]:
        """The verdict as JSON-ready data."""
        return {
            "metric": self.metric,
            "threshold": self.threshold,
            "value": self.value,
            "held": self.held,
        }


@dataclass(frozen=True)
class Gate:
    """``pass_rate=0.90``: the run-wide aggregate must reach the threshold."""

    metric: str
    threshold: float

    def check(self, summary: TaskSummary, run_ok: bool) -> GateVerdict:
        """Measure a finished run's task summary."""
        value = getattr(summary, self.metric, None)
        return GateVerdict(
            self.metric, self.threshold, None if value is None else float(value), run_ok
        )


def parse_gate(value: str) -> Gate:
    """``METRIC=THRESHOLD``; ``pass_rate`` takes a fraction between 0 and 1."""
    metric, eq, number = value.partition("=")
    metric = metric.strip()
    try:
        threshold = float(number)
    except ValueError:
        threshold = -1.0
    if not eq or metric not in GATE_METRICS or not 0 <= threshold <= 1:
        fail(
            f"--gate takes {'|'.join(GATE_METRICS)}=FRACTION, e.g. pass_rate=0.90 (got {value!r})",
            code=EXIT_USAGE,
        )
    return Gate(metric, threshold)


def harness_metadata(harness: str | None, task: str | None) -> dict[str, Any]:
    """Where a harness reads its task: ``metadata.<harness>_harness.task``
    (``harbor`` calls it a dataset)."""
    if task is None:
        return {}
    if harness is None:
        fail("--harness-task needs --harness (inspect, lmeval, lighteval, harbor)", EXIT_USAGE)
    key = "dataset" if harness == "harbor" else "task"
    return {f"{harness}_harness": {key: task}}


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
