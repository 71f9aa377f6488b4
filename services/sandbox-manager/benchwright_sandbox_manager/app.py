"""Assembles the sandbox-manager: store, relay, backends, handlers."""

from dataclasses import dataclass, field

from faststream.nats import NatsBroker, NatsRouter

from benchwright_sandbox_manager import handlers
from benchwright_sandbox_manager.application import SandboxesApplication, translate_notification
from benchwright_sandbox_manager.manager import SandboxManager
from benchwright_shared import subjects
from benchwright_shared.bus import jetstream
from benchwright_shared.liveness import Membership, new_copy_id
from benchwright_shared.relay import Relay
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore, eventsourcing_env


@dataclass
class SandboxManagerService:
    settings: Settings
    name: str = "sandbox-manager"
    router: NatsRouter = field(default_factory=NatsRouter)

    def __post_init__(self) -> None:
        self.store = BlockingStore(self.name)
        self.app = SandboxesApplication(env=eventsourcing_env(self.settings, self.name))
        self.relay = Relay(
            service=self.name,
            app=self.app,
            store=self.store,
            translate=translate_notification,
            stream=subjects.EVENTS_STREAM,
        )
        self.membership = Membership(
            self.name,
            new_copy_id(self.name),
            ttl_s=self.settings.liveness_ttl_s,
            replicas=self.settings.nats_replicas,
        )
        self.manager = SandboxManager(
            self.settings, self.app, self.store, self.relay, self.membership
        )
        handlers.register(self.router, self.manager, max_deliver=self.settings.max_deliver)

    async def start(self, broker: NatsBroker) -> None:
        self.manager.broker = broker
        await self.membership.start(jetstream(broker))
        await self.manager.start()
        await self.relay.start(jetstream(broker))

    async def stop(self) -> None:
        await self.manager.stop()
        await self.membership.stop()
        await self.relay.stop()
        # A cancelled caller's store call may still be running on the store thread:
        # closing the database under it crashes SQLite, so close it on that thread.
        await self.store.run(self.app.close)
        self.store.close()


def build(settings: Settings) -> SandboxManagerService:
    return SandboxManagerService(settings)
