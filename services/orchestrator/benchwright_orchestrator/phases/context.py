"""What every phase works with: the run, its workspace, the Driver, the settings."""

from dataclasses import dataclass

from benchwright_orchestrator.domain import Run
from benchwright_orchestrator.driver.base import Driver
from benchwright_orchestrator.ports import RunStore, Workspace
from benchwright_orchestrator.tools import PipelineTools
from benchwright_shared.settings import Settings


@dataclass
class PhaseContext:
    """One run's phases share this; a phase reads what earlier ones recorded on ``run``."""

    run: Run
    work: Workspace
    driver: Driver
    settings: Settings
    store: RunStore
    # The per-trial wall clock in the sandbox (the narrowest ceiling that applies).
    task_timeout_s: float

    async def save(self) -> None:
        await self.store.save(self.run)

    def tools(self, phase: str) -> PipelineTools:
        return PipelineTools(self.run, self.work, phase, self.save)
