"""Assembles the orchestrator: store, relay, handlers. No work at import time."""

import asyncio
from dataclasses import dataclass, field

from faststream.nats import NatsBroker, NatsRouter

from benchwright_orchestrator import handlers
from benchwright_orchestrator.application import RunsApplication, translate_notification
from benchwright_orchestrator.runner import Orchestrator
from benchwright_orchestrator.traces import RunTraces
from benchwright_shared import subjects
from benchwright_shared.bus import jetstream
from benchwright_shared.liveness import Membership, new_copy_id
from benchwright_shared.relay import Relay
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore, eventsourcing_env
from benchwright_shared.telemetry import start_tracing


@dataclass
class OrchestratorService:
    settings: Settings
    name: str = "orchestrator"
    router: NatsRouter = field(default_factory=NatsRouter)

    def __post_init__(self) -> None:
        self.store = BlockingStore(self.name)
        self.app = RunsApplication(env=eventsourcing_env(self.settings, self.name))
        # None unless an OTLP endpoint is configured: then every saved run is traced.
        self.tracing = start_tracing(self.name, self.settings.tracing)
        if self.tracing is not None:
            self.app.observe = RunTraces(self.tracing).observe
        self.relay = Relay(
            service=self.name,
            app=self.app,
            store=self.store,
            translate=translate_notification,
            stream=subjects.RUNS_STREAM,
            ordered=True,
        )

        self.membership = Membership(
            self.name,
            new_copy_id(self.name),
            ttl_s=self.settings.liveness_ttl_s,
            replicas=self.settings.nats_replicas,
        )
        self.orchestrator = Orchestrator(
            self.settings, self.app, self.store, self.relay, membership=self.membership
        )
        handlers.register(self.router, self.orchestrator, max_deliver=self.settings.max_deliver)

    async def start(self, broker: NatsBroker) -> None:
        await self.membership.start(jetstream(broker))
        await self.relay.start(jetstream(broker))
        await self.orchestrator.start(broker)

    async def stop(self) -> None:
        await self.orchestrator.stop()
        await self.membership.stop()
        await self.relay.stop()
        # On the store's thread: after any call a cancelled relay or handler left there.
        await self.store.run(self.app.close)
        self.store.close()
        if self.tracing is not None:
            await asyncio.to_thread(self.tracing.shutdown)  # exports what is left


def build(settings: Settings) -> OrchestratorService:
    return OrchestratorService(settings)
