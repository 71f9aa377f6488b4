"""A run page's live updates: what changed in its outcome vector, and its status.

The stream reads the same read model the page was drawn from, so the heatmap and
the task table never disagree. It looks again every ``POLL_S``; when the run's log
position has not moved nothing is read past the run's row, and when it has, only
the cells that changed are sent (``[index, code]`` pairs), never the whole vector
again. It ends after the event that shows the run finished.

Which tasks are in flight is not in the log: the sandbox-manager says when a sweep
begins each one (``subjects.live_subject``, plain NATS), and ``started`` holds what
this page heard. A task heard started and not settled shows ``running``.
"""

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from benchwright_gateway import projections as views
from benchwright_gateway.domain import display_status
from benchwright_gateway.web.queries import PENDING, RUNNING, outcome_vector, summary_of
from benchwright_shared.projection import ViewCursor

POLL_S = 0.5
# Past this many changed cells one message carries the whole vector instead.
MAX_CELL_CHANGES = 2000

Read = Callable[[Callable[[ViewCursor], Any]], Awaitable[Any]]


def run_state(row: dict[str, Any]) -> dict[str, Any]:
    """What the page's header shows of a run and changes while it runs."""
    summary = summary_of(row)
    return {
        "status": row["status"],
        "display_status": display_status(
            row["status"],
            bool(row.get("halted")),
            row.get("halt_reason"),
            int(summary.get("infra_errored") or 0),
        ),
        "phase": row.get("phase"),
        "halt_reason": row.get("halt_reason"),
        "last_seq": int(row.get("last_seq") or 0),
    }


def changed_cells(before: str, after: str) -> list[list[Any]]:
    """``[index, code]`` for each cell of ``after`` that differs from ``before``."""
    return [[i, code] for i, code in enumerate(after) if i >= len(before) or before[i] != code]


def snapshot(run_id: str) -> Callable[[ViewCursor], tuple[dict[str, Any] | None, str]]:
    def read(cur: ViewCursor) -> tuple[dict[str, Any] | None, str]:
        row = views.get_run(cur, run_id)
        if row is None:
            return None, ""
        return row, outcome_vector(cur, run_id, row.get("selected_tasks"))[0]

    return read


def with_started(vector: str, started: set[int]) -> str:
    """``vector`` with each task heard started, and not yet in it, shown running."""
    cells = list(vector)
    for index in started:
        if index < len(cells) and cells[index] == PENDING:
            cells[index] = RUNNING
    return "".join(cells)


async def updates(
    read: Read,
    run_id: str,
    *,
    sent_vector: str | None = None,
    poll_s: float = POLL_S,
    started: set[int] | None = None,
) -> AsyncIterator[dict[str, str]]:
    """Server-sent events for one run page: ``state``, ``vector`` or ``cells``, ``end``.

    ``sent_vector`` is what the page was drawn with (the first message then carries
    only what changed since); without it the first message is the whole vector.
    ``started``: the tasks heard begun, filled by the caller as word comes."""
    started = started if started is not None else set()
    vector = sent_vector
    last_seq: int | None = None
    fresh = ""
    heard = 0
    while True:
        row = await read(lambda cur: views.get_run(cur, run_id))
        if row is None:
            yield {"event": "end", "data": json.dumps({"status": "deleted"})}
            return
        state = run_state(row)
        moved = state["last_seq"] != last_seq
        if moved:
            row, fresh = await read(snapshot(run_id))
            if row is None:
                continue
            state = run_state(row)
        if moved or len(started) != heard:
            heard = len(started)
            shown = with_started(fresh, started)
            if vector is None or len(shown) < len(vector):
                yield {"event": "vector", "data": shown}
            else:
                cells = changed_cells(vector, shown)
                if len(cells) > MAX_CELL_CHANGES:
                    yield {"event": "vector", "data": shown}
                elif cells:
                    yield {"event": "cells", "data": json.dumps(cells, separators=(",", ":"))}
            vector = shown
        if moved:
            last_seq = state["last_seq"]
            yield {"event": "state", "data": json.dumps(state)}
        if state["status"] != "running":
            yield {"event": "end", "data": json.dumps({"status": state["status"]})}
            return
        await asyncio.sleep(poll_s)
