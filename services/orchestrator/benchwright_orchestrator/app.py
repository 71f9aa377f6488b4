"""Assembles the orchestrator: store, relay, handlers. No work at import time."""

import logging
from dataclasses import dataclass, field

from faststream.nats import NatsBroker, NatsRouter

from benchwright_orchestrator import handlers
from benchwright_orchestrator.application import RunsApplication, translate_notification
from benchwright_orchestrator.runner import Orchestrator
from benchwright_shared import subjects
from benchwright_shared.bus import ask, jetstream
from benchwright_shared.contracts.registry_reads import FindPhaseCell, PhaseCell
from benchwright_shared.relay import Relay
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore, eventsourcing_env

log = logging.getLogger(__name__)
# A phase-cache lookup that takes longer than this is a miss: the phase does its work.
CELL_LOOKUP_TIMEOUT_S = 5.0


@dataclass
class OrchestratorService:
    settings: Settings
    name: str = "orchestrator"
    router: NatsRouter = field(default_factory=NatsRouter)

    def __post_init__(self) -> None:
        self.store = BlockingStore(self.name)
        self.app = RunsApplication(env=eventsourcing_env(self.settings, self.name))
        self.relay = Relay(
            service=self.name,
            app=self.app,
            store=self.store,
            translate=translate_notification,
            stream=subjects.RUNS_STREAM,
        )

        async def lookup(phase: str, fingerprint: str, account: str) -> str | None:
            """Ask the registry's phase-cache index (decision 0012); no answer is a miss."""
            broker = self.orchestrator.broker
            if broker is None:
                return None
            try:
                cell = await ask(
                    broker,
                    FindPhaseCell(account=account, phase=phase, fingerprint=fingerprint),
                    PhaseCell,
                    timeout=CELL_LOOKUP_TIMEOUT_S,
                )
            except Exception:
                log.warning("phase cache: no answer from the registry", exc_info=True)
                return None
            if cell.problem is not None:
                log.warning("phase cache: %s", cell.problem.detail or cell.problem.title)
                return None
            return cell.run_id

        self.orchestrator = Orchestrator(
            self.settings, self.app, self.store, self.relay, find_cell=lookup
        )
        handlers.register(self.router, self.orchestrator, max_deliver=self.settings.max_deliver)

    async def start(self, broker: NatsBroker) -> None:
        await self.relay.start(jetstream(broker))
        await self.orchestrator.start(broker)

    async def stop(self) -> None:
        await self.orchestrator.stop()
        await self.relay.stop()
        self.app.close()
        self.store.close()


def build(settings: Settings) -> OrchestratorService:
    return OrchestratorService(settings)
