"""The agent loop's ``Trajectory`` port over the run's log.

Each step is recorded on the ``Run`` (whose ``Agents`` part decides whether the step
is allowed) and saved through the run store before the loop goes on, so the log
holds the attempt up to the step the loop last took, whatever happens next. A step
recorded with ``save=False`` (a model turn, before its tool results) waits for the
next save, one commit a turn instead of two; the dashboard shows the transcript
live, so a step left waiting (a long tool call) is saved on its own after
``UNSAVED_AT_MOST_S``.
"""

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from benchwright_orchestrator.domain import AgentRunEvent, Run
from benchwright_orchestrator.ports import RunStore

__all__ = ["UNSAVED_AT_MOST_S", "RunTrajectory"]

log = logging.getLogger(__name__)

# How long a step recorded without saving may wait for the next save.
UNSAVED_AT_MOST_S = 1.0


@dataclass
class RunTrajectory:
    """Where one run's agents record their attempts (and the verifier its verdict)."""

    run: Run
    store: RunStore
    # Puts a text in the run's artifacts bucket; its object name (``Workspace.keep_text``).
    keep_text: Callable[[str], Awaitable[str]] | None = None
    unsaved_at_most_s: float = UNSAVED_AT_MOST_S
    _late_save: asyncio.TimerHandle | None = field(default=None, init=False, repr=False)
    _saving: set[asyncio.Task[None]] = field(default_factory=set, init=False, repr=False)

    async def keep(self, text: str) -> str | None:
        return await self.keep_text(text) if self.keep_text is not None else None

    async def record(self, event: AgentRunEvent, *, save: bool = True) -> None:
        """Record ``event`` (saved now with ``save``, else with the next save); an older
        attempt's is dropped (``Agents``), a step the attempt does not allow raises
        ``AgentAttemptRefusedError``."""
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
        if save:
            self._cancel_late_save()
            await self.store.save(self.run)
        elif self._late_save is None:
            self._late_save = asyncio.get_running_loop().call_later(
                self.unsaved_at_most_s, self._save_late
            )

    def _cancel_late_save(self) -> None:
        if self._late_save is not None:
            self._late_save.cancel()
            self._late_save = None

    def _save_late(self) -> None:
        self._late_save = None
        task = asyncio.create_task(self._save_waiting(), name=f"trajectory-{self.run.run_id}")
        self._saving.add(task)
        task.add_done_callback(self._saving.discard)

    async def _save_waiting(self) -> None:
        try:
            await self.store.save(self.run)
        except Exception as exc:  # the next save of the run meets it again and raises
            log.warning("run %s: saving waiting agent steps failed (%s)", self.run.run_id, exc)
