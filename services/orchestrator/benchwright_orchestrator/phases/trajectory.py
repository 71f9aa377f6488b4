"""The agent loop's ``Trajectory`` port over the run's log.

Each step is recorded on the ``Run`` (whose ``Agents`` part decides whether the step
is allowed) and saved through the run store before the loop goes on, so the log
holds the attempt up to the step the loop last took, whatever happens next.
"""

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from benchwright_orchestrator.domain import AgentRunEvent, Run
from benchwright_orchestrator.ports import RunStore

__all__ = ["RunTrajectory"]

log = logging.getLogger(__name__)


@dataclass
class RunTrajectory:
    """Where one run's agents record their attempts (and the verifier its verdict)."""

    run: Run
    store: RunStore
    # Puts a text in the run's artifacts bucket; its object name (``Workspace.keep_text``).
    keep_text: Callable[[str], Awaitable[str]] | None = None

    async def keep(self, text: str) -> str | None:
        return await self.keep_text(text) if self.keep_text is not None else None

    async def record(self, event: AgentRunEvent) -> None:
        """Record and save ``event``; an older attempt's is dropped (``Agents``), a step
        the attempt does not allow raises ``AgentAttemptRefusedError``."""
        if not self.run.record_agent_event(event):
            log.info(
                "run %s task %s trial %s: dropped %s of superseded attempt %s",
                self.run.run_id,
                event.index,
                event.trial,
                type(event).__name__,
                event.attempt,
            )
            return
        await self.store.save(self.run)
