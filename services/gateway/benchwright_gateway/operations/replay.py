"""Replays: rerun a run's tasks with its scorer, a slice of them or all, on the
parent's rows or on the newer snapshot of its rolling subset."""

import json
from typing import Any

from benchwright_gateway.operations.runs import owned_run
from benchwright_gateway.operations.snapshots import current_snapshot, row_indices
from benchwright_gateway.ports import LaunchPorts, Registry, RunRow, RunViews
from benchwright_gateway.requests import ReplayIn
from benchwright_shared.contracts import LaunchRun
from benchwright_shared.refusal import Refused

# Unknown task ids a refusal names before it counts the rest.
NAMED_UNKNOWN = 5


async def replay_command(
    ports: LaunchPorts, account: str, replay: ReplayIn, common: dict[str, Any]
) -> LaunchRun:
    """The command for a replay of the caller's run ``replay.from_run``, once it has
    a scorer on record (its Atomize is done); ``common`` holds the launch's fields."""
    parent = await owned_run(ports, account, replay.from_run, field="replay.from_run")
    if not (parent.get("impl_id") or _harbor_set_up(parent)):
        raise Refused(
            409,
            "nothing to replay yet",
            f"run {replay.from_run} has no scorer on record yet; wait for its Atomize",
            field="replay.from_run",
            code="replay_source_not_ready",
        )
    snapshot = await current_snapshot(ports, account, parent.get("subset_id"))
    indices = await slice_indices(
        ports, ports, replay.from_run, replay.task_ids, replay.only_failed, snapshot
    )
    return LaunchRun(
        mode="replay",
        parent_run_id=replay.from_run,
        # None: the parent's snapshot, inherited with the rest of its dataset.
        subset_id=snapshot,
        replay={"indices": indices, "task_ids": replay.task_ids, "only_failed": replay.only_failed},
        **common,
    )


def _harbor_set_up(parent: RunRow) -> bool:
    """A Harbor run has no scorer on record (each task's tests score it): it can be
    replayed once its Setup recorded the tasks, and the replay runs its harness."""
    metadata = json.loads(parent.get("metadata") or "{}")
    # Setup records the tasks, then its artifact: a run still in it is not ready.
    return (
        "harbor_harness" in metadata
        and parent.get("selected_tasks") is not None
        and parent.get("phase") != "setup"
    )


async def slice_indices(
    views: RunViews,
    registry: Registry,
    run_id: str,
    task_ids: list[str] | None,
    only_failed: bool,
    snapshot: str | None,
) -> list[int] | None:
    """The row indices a replay slice names, checked against the parent's tasks, or,
    on a newer ``snapshot`` of its rolling subset, against that snapshot's rows;
    ``only_failed`` keeps the rows the parent did not pass. None: every row."""
    if task_ids is None and not only_failed:
        return None
    outcomes = await views.latest_outcomes(run_id)
    by_task = {task_id: index for index, (task_id, _) in outcomes.items()}
    chosen = set(outcomes)
    if task_ids is not None:
        missing = {t for t in task_ids if t not in by_task}
        if missing and snapshot:
            # Appends never renumber rows: the parent's indices hold on the new snapshot.
            by_task.update(await row_indices(registry, snapshot, missing))
        unknown = [t for t in task_ids if t not in by_task]
        if unknown:
            more = len(unknown) - NAMED_UNKNOWN
            raise Refused(
                400,
                "unknown task ids",
                (f"subset {snapshot}" if snapshot else f"run {run_id}")
                + f" has no tasks {', '.join(unknown[:NAMED_UNKNOWN])}"
                + (f" (and {more} more)" if more > 0 else ""),
                field="replay.task_ids",
                code="invalid_argument",
            )
        chosen = {by_task[t] for t in task_ids}
    if only_failed:
        chosen = {i for i in chosen if i in outcomes and outcomes[i][1] != "pass"}
    return sorted(chosen)
