"""Integration contracts: every message that crosses a service boundary.

Commands are imperative (``LaunchRun``), events past tense (``SandboxCreated``),
queries are questions (``ResolveBenchmark``). Each class names the subject it
travels on. Contracts change only by adding optional fields; a breaking change
is a new class on a new ``.v2`` subject.
"""

import importlib
from typing import TYPE_CHECKING, Any

# The names below load on first use: a reader of one module (the SDK reads the
# registry's views) does not pay for building every contract.
if TYPE_CHECKING:
    from benchwright_shared.contracts.agent_events import (
        AGENT_EVENT_TYPES,
        TEXT_CAP,
        AgentAttemptEnded,
        AgentAttemptStarted,
        AgentModelTurn,
        AgentToolCall,
        AgentToolResult,
        AttemptEndReason,
        VerifierFinished,
        cap_text,
    )
    from benchwright_shared.contracts.base import Contract, Problem
    from benchwright_shared.contracts.commands import (
        COMPUTE_CHOICES,
        AttachModel,
        Compute,
        CreateSandbox,
        DeleteRun,
        DetachModel,
        Egress,
        EnvironmentBuild,
        ExecInSandbox,
        HaltRun,
        KillSandbox,
        LabelTask,
        LaunchRun,
        ResolveRunHalt,
        RunTasks,
        SandboxFile,
        SnapshotSandbox,
        TaskSpec,
        UpdateRun,
        Visibility,
    )
    from benchwright_shared.contracts.events import (
        DriverUsageRecorded,
        ExportedFile,
        ModelAttached,
        ModelUsageRecorded,
        SandboxCommandFailed,
        SandboxCreated,
        SandboxExecFinished,
        SandboxKilled,
        SandboxSnapshotted,
        SandboxSweepProgress,
        SandboxTaskResults,
        SandboxTasksFinished,
        TaskOutcome,
    )
    from benchwright_shared.contracts.queries import (
        BenchmarkResolution,
        CatalogBenchmarkEntry,
        CatalogListing,
        CatalogSubsetEntry,
        GetImpl,
        GetRunCost,
        GetRunEvents,
        GetSubsetRows,
        ImplCode,
        ListCatalog,
        ListParked,
        ParkedMessage,
        ParkedMessages,
        RebuildProjection,
        RebuildResult,
        ResolveBenchmark,
        RunCost,
        RunEventsPage,
        SubsetRows,
    )
    from benchwright_shared.contracts.run_events import RUN_EVENT_TYPES, RunEvent, SutRef

# Where ``__getattr__`` looks for a name, in this order.
_SOURCES = ("agent_events", "base", "commands", "events", "queries", "run_events")

if not TYPE_CHECKING:  # mypy reads the imports above, and so still checks every name

    def __getattr__(name: str) -> Any:
        if name in __all__:
            for source in _SOURCES:
                found = vars(importlib.import_module(f"{__name__}.{source}")).get(name)
                if found is not None:
                    globals()[name] = found
                    return found
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AGENT_EVENT_TYPES",
    "COMPUTE_CHOICES",
    "RUN_EVENT_TYPES",
    "TEXT_CAP",
    "AgentAttemptEnded",
    "AgentAttemptStarted",
    "AgentModelTurn",
    "AgentToolCall",
    "AgentToolResult",
    "AttachModel",
    "AttemptEndReason",
    "BenchmarkResolution",
    "CatalogBenchmarkEntry",
    "CatalogListing",
    "CatalogSubsetEntry",
    "Compute",
    "Contract",
    "CreateSandbox",
    "DeleteRun",
    "DetachModel",
    "DriverUsageRecorded",
    "Egress",
    "EnvironmentBuild",
    "ExecInSandbox",
    "ExportedFile",
    "GetImpl",
    "GetRunCost",
    "GetRunEvents",
    "GetSubsetRows",
    "HaltRun",
    "ImplCode",
    "KillSandbox",
    "LabelTask",
    "LaunchRun",
    "ListCatalog",
    "ListParked",
    "ModelAttached",
    "ModelUsageRecorded",
    "ParkedMessage",
    "ParkedMessages",
    "Problem",
    "RebuildProjection",
    "RebuildResult",
    "ResolveBenchmark",
    "ResolveRunHalt",
    "RunCost",
    "RunEvent",
    "RunEventsPage",
    "RunTasks",
    "SandboxCommandFailed",
    "SandboxCreated",
    "SandboxExecFinished",
    "SandboxFile",
    "SandboxKilled",
    "SandboxSnapshotted",
    "SandboxSweepProgress",
    "SandboxTaskResults",
    "SandboxTasksFinished",
    "SnapshotSandbox",
    "SubsetRows",
    "SutRef",
    "TaskOutcome",
    "TaskSpec",
    "UpdateRun",
    "VerifierFinished",
    "Visibility",
    "cap_text",
]
