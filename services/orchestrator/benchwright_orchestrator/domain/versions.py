"""Migrations of stored ``Run`` snapshots to the current class version.

eventsourcing calls ``Run.upcast_v<n>_v<n+1>`` on a snapshot's state when it was
taken by an older class (no ``class_version`` in it: version 1). Events are not
touched: replayed from the log, ``RunLaunched`` sets every attribute afresh.

Version 1 was one flat state that grew attribute by attribute, read back with
``getattr(self, "_x", default)`` wherever an older snapshot could lack ``_x``.
Version 2 has every attribute from launch on and keeps the run's trials,
artifacts and sandboxes in parts. Version 3 keeps its lifecycle (status, halt)
and its phases' progress (plan, invocations, restarts) in parts too. Version 4 adds
the agents' attempts (``Agents``), empty for a run stored before agents ran. A
version 1 snapshot goes through each upcaster in turn. ``tests/orchestrator/snapshots/``
holds real version 1, 2 and 3 snapshots that this module must keep loading.
"""

from typing import Any

from benchwright_orchestrator.domain.agents import Agents
from benchwright_orchestrator.domain.artifacts import Artifacts
from benchwright_orchestrator.domain.lifecycle import Lifecycle
from benchwright_orchestrator.domain.progress import PhaseProgress
from benchwright_orchestrator.domain.sandboxes import Sandboxes
from benchwright_orchestrator.domain.sweep import TrialSweep
from benchwright_shared.scoring import DEFAULT_TRIALS

__all__ = ["upcast_run_v1_v2", "upcast_run_v2_v3", "upcast_run_v3_v4"]

# Attributes a version 1 snapshot may lack (each was added after runs were stored),
# with the value a run launched before it had in effect.
_V1_LATE_ATTRIBUTES: dict[str, Any] = {
    "cache": None,
    "harness": None,
    "telemetry": None,
    "judges": None,
    "metadata": {},
    "request": None,
    "driver": None,
    "limits": {},
    "parent_run_id": None,
    "replay": None,
    "fork": None,
    "compute": None,
    "backend": "local",
    "scope": {"kind": "all"},
    "guidance": [],
    "phase_models": {},
    "restarts": 0,
    "started_phases": [],
    "deleted": False,
    "halted": False,
    "halt_reason": None,
    "current_phase": None,
    "completed_phases": [],
}


def upcast_run_v1_v2(state: dict[str, Any]) -> None:
    """Give a version 1 snapshot's state every version 2 attribute, in place."""
    for name, default in _V1_LATE_ATTRIBUTES.items():
        if name not in state:
            state[name] = type(default)(default) if isinstance(default, dict | list) else default
    state["visibility"] = state.pop("_visibility", "private")
    state.pop("results_recorded", None)  # counted, never read
    state["artifacts"] = Artifacts(
        record=state.pop("artifacts", []),
        dataset=state.pop("dataset", {}),
        analysis=state.pop("analysis", None),
        selection=state.pop("selection", None),
        selected_tasks=state.pop("selected_tasks", None),
        scorer=state.pop("scorer", None),
        snapshots=state.pop("snapshots", {}),
        model_config_sha256=state.pop("model_config_sha256", None),
        phase_fingerprints=state.pop("phase_fingerprints", {}),
        harness_logs=[list(log) for log in state.pop("harness_logs", [])],
    )
    state["sweep"] = TrialSweep(
        trials=state.pop("trials", None) or dict(DEFAULT_TRIALS),
        # Version 1 kept no sweep number: the sweep was the latest Materialize's.
        invocation=int(state.get("invocations", {}).get("materialize", 0)),
        trial_results={
            index: {trial: _with_error_type(result) for trial, result in trials.items()}
            for index, trials in state.pop("trial_results", {}).items()
        },
        aggregated=state.pop("aggregated", {}),
        detail=state.pop("_aggregated_detail", {}),
        infra=state.pop("_infra_errored", {}),
    )
    state["sandboxes"] = Sandboxes(
        open=state.pop("open_sandboxes", {}), owners=state.pop("_sandbox_owners", {})
    )


def upcast_run_v2_v3(state: dict[str, Any]) -> None:
    """Move a version 2 snapshot's flat lifecycle and phase attributes into the
    version 3 parts, in place (version 2 has every one of them)."""
    state["lifecycle"] = Lifecycle(
        status=state.pop("status"),
        halted=state.pop("halted"),
        halt_reason=state.pop("halt_reason"),
    )
    state["progress"] = PhaseProgress(
        plan=state.pop("plan"),
        current_phase=state.pop("current_phase"),
        started_phases=state.pop("started_phases"),
        completed_phases=state.pop("completed_phases"),
        invocations=state.pop("invocations"),
        restarts=state.pop("restarts"),
    )


def upcast_run_v3_v4(state: dict[str, Any]) -> None:
    """Give a version 3 snapshot's state the agents' part, in place: empty, since no
    agent ran before version 4 recorded it."""
    state["agents"] = Agents()


def _with_error_type(result: list[Any]) -> list[Any]:
    """A trial result as version 2 keeps it: ``error_type`` fourth (older: absent)."""
    return result if len(result) > 3 else [*result, None]
