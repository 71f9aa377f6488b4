"""The run store port over the eventsourcing application (writes on the store's thread)."""

from dataclasses import dataclass

from eventsourcing.persistence import RecordConflictError

from benchwright_orchestrator.application import RunsApplication
from benchwright_orchestrator.domain import Run
from benchwright_orchestrator.ports import RecordedTrial, RunSuperseded
from benchwright_shared.relay import Relay
from benchwright_shared.store import BlockingStore


@dataclass
class StoredRuns:
    app: RunsApplication
    store: BlockingStore
    relay: Relay

    async def save(self, run: Run) -> None:
        try:
            await self.store.run(self.app.save, run)
        except RecordConflictError:
            # Another writer extended the log meanwhile: another copy took this run over.
            raise RunSuperseded(run.run_id) from None
        self.relay.wake()

    async def copy_cell(self, run: Run, source_id: str, phase: str, types: tuple[str, ...]) -> bool:
        copied: bool = await self.store.run(self.app.copy_cell, run, source_id, phase, types)
        return copied

    async def inherit_scorer(self, run: Run) -> None:
        await self.store.run(self.app.inherit_scorer, run)

    async def recorded_outputs(self, run: Run) -> dict[tuple[int, int], RecordedTrial]:
        found: dict[tuple[int, int], RecordedTrial] = await self.store.run(
            self.app.recorded_outputs, run
        )
        return found
