"""What every agent of a Harbor run shares: the Materialize's context, and the steps
that open and close an attempt in the run's log."""

from dataclasses import dataclass, field
from typing import Any

import httpx

from benchwright_orchestrator.agents.loop import AttemptRef
from benchwright_orchestrator.agents.ports import Trajectory
from benchwright_orchestrator.phases.context import PhaseContext
from benchwright_orchestrator.phases.trajectory import RunTrajectory
from benchwright_shared.agentic import AgenticTask, EnvironmentPlan
from benchwright_shared.contracts import EnvironmentBuild, ModelAttached
from benchwright_shared.contracts.agent_events import (
    AgentAttemptEnded,
    AgentAttemptStarted,
    AttemptEndReason,
    cap_text,
)

__all__ = [
    "AGENT_LOGS",
    "LOGS_DIR",
    "SOLUTION_DIR",
    "TESTS_DIR",
    "VERIFIER_LOGS",
    "HarborAttempts",
    "attempt_ids",
    "record_ended",
    "record_started",
    "sandbox_dirs",
]

# The places Harbor's scripts name, besides the environment's own.
LOGS_DIR, TESTS_DIR, SOLUTION_DIR = "/logs", "/tests", "/solution"
AGENT_LOGS, VERIFIER_LOGS = "/logs/agent", "/logs/verifier"


def sandbox_dirs(plan: EnvironmentPlan) -> list[str]:
    """The top-level directories a task's sandbox must present, writable: Harbor's own
    and every one the plan lays a file or directory under."""
    places = [plan.workdir, *plan.files, *plan.directories]
    tops = {"/" + p.strip("/").split("/", 1)[0] for p in places if p.strip("/")}
    return sorted(tops | {LOGS_DIR, TESTS_DIR, SOLUTION_DIR})


@dataclass
class HarborAttempts:
    """What every attempt of one Materialize shares."""

    ctx: PhaseContext
    model: ModelAttached
    tasks: list[AgenticTask]
    plans: dict[str, EnvironmentPlan]
    agent: str
    agent_args: dict[str, Any]
    client: httpx.AsyncClient
    # Each task's environment to build, on a backend that builds Dockerfiles (e2b).
    builds: dict[str, EnvironmentBuild] = field(default_factory=dict)
    trajectory: Trajectory = field(init=False)

    def __post_init__(self) -> None:
        self.trajectory = RunTrajectory(self.ctx.run, self.ctx.store, self.ctx.work.keep_text)


def attempt_ids(ref: AttemptRef) -> dict[str, Any]:
    """The fields that name an attempt in each of its events."""
    return {"task_id": ref.task_id, "index": ref.index, "trial": ref.trial, "attempt": ref.attempt}


async def record_started(
    harbor: HarborAttempts, task: AgenticTask, ref: AttemptRef, tools: list[str]
) -> None:
    shown, cut, chars = cap_text(task.instruction)
    await harbor.trajectory.record(
        AgentAttemptStarted(
            **attempt_ids(ref),
            agent=ref.agent,
            model=ref.model,
            instruction=shown,
            instruction_truncated=cut,
            instruction_chars=chars,
            tools=tools,
        )
    )


async def record_ended(
    harbor: HarborAttempts,
    ref: AttemptRef,
    reason: AttemptEndReason,
    ms: int,
    detail: str | None = None,
) -> None:
    await harbor.trajectory.record(
        AgentAttemptEnded(**attempt_ids(ref), reason=reason, turns=0, duration_ms=ms, detail=detail)
    )
