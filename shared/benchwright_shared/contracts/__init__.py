"""Integration contracts: every message that crosses a service boundary.

Commands are imperative (``LaunchRun``), events past tense (``SandboxCreated``),
queries are questions (``ResolveBenchmark``). Each class names the subject it
travels on. Contracts change only by adding optional fields; a breaking change
is a new class on a new ``.v2`` subject.
"""

from benchwright_shared.contracts.base import Contract, Problem
from benchwright_shared.contracts.commands import (
    AttachModel,
    CreateSandbox,
    DetachModel,
    HaltRun,
    KillSandbox,
    LaunchRun,
    RunTasks,
    SandboxFile,
    TaskSpec,
)
from benchwright_shared.contracts.events import (
    ModelAttached,
    ModelUsageRecorded,
    SandboxCommandFailed,
    SandboxCreated,
    SandboxKilled,
    SandboxTaskResults,
    SandboxTasksFinished,
    TaskOutcome,
)
from benchwright_shared.contracts.queries import (
    BenchmarkResolution,
    GetImpl,
    GetRunCost,
    GetRunEvents,
    GetSubsetRows,
    ImplCode,
    RebuildProjection,
    RebuildResult,
    ResolveBenchmark,
    RunCost,
    RunEventsPage,
    SubsetRows,
)
from benchwright_shared.contracts.run_events import RUN_EVENT_TYPES, RunEvent, SutRef

__all__ = [
    "RUN_EVENT_TYPES",
    "AttachModel",
    "BenchmarkResolution",
    "Contract",
    "CreateSandbox",
    "DetachModel",
    "GetImpl",
    "GetRunCost",
    "GetRunEvents",
    "GetSubsetRows",
    "HaltRun",
    "ImplCode",
    "KillSandbox",
    "LaunchRun",
    "ModelAttached",
    "ModelUsageRecorded",
    "Problem",
    "RebuildProjection",
    "RebuildResult",
    "ResolveBenchmark",
    "RunCost",
    "RunEvent",
    "RunEventsPage",
    "RunTasks",
    "SandboxCommandFailed",
    "SandboxCreated",
    "SandboxFile",
    "SandboxKilled",
    "SandboxTaskResults",
    "SandboxTasksFinished",
    "SubsetRows",
    "SutRef",
    "TaskOutcome",
    "TaskSpec",
]
