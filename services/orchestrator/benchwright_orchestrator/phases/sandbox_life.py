"""Starting and killing a run's short-lived sandboxes so that a halt leaves none behind.

Every phase that makes a sandbox for one piece of work (a fanout task, a Harbor
attempt, a product's probe) starts and kills it here: a halt that cancels the work
while the sandbox starts still kills it once it is up, and one that comes while it
is killed still waits for the kill's record (interrupted, the kill would happen but
its reply would be lost, and the run would list the sandbox as open: a second kill
gets no reply).
"""

import asyncio
import contextlib
from collections.abc import Awaitable

from benchwright_orchestrator.ports import Workspace

__all__ = ["CREATE_GRACE_S", "create_held", "kill_held"]

# A sandbox asked for while a halt came: how long we wait for it, to kill it.
CREATE_GRACE_S = 30.0


async def create_held(work: Workspace, starting: Awaitable[str]) -> str:
    """The id ``starting`` (a ``Workspace.create_*`` call) gives; cancelled meanwhile,
    the sandbox is killed once it is up, and the cancel goes on."""
    future = asyncio.ensure_future(starting)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await kill_held(work, await asyncio.wait_for(future, CREATE_GRACE_S))
        raise


async def kill_held(work: Workspace, sandbox_id: str, reason: str = "task_finished") -> None:
    """Kill a sandbox and record it; a cancel arriving meanwhile waits for the record."""
    killing = asyncio.ensure_future(work.kill_sandbox(sandbox_id, reason=reason))
    try:
        await asyncio.shield(killing)
    except asyncio.CancelledError:
        await killing
        raise
