"""Assembles the proxy: bindings store, model endpoint, handlers."""

from dataclasses import dataclass, field

from faststream.nats import NatsBroker, NatsRouter

from benchwright_proxy import handlers
from benchwright_proxy.application import ProxyApplication
from benchwright_proxy.service import ProxyRuntime
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore, eventsourcing_env


@dataclass
class ProxyService:
    settings: Settings
    name: str = "proxy"
    router: NatsRouter = field(default_factory=NatsRouter)

    def __post_init__(self) -> None:
        self.store = BlockingStore(self.name)
        self.app = ProxyApplication(env=eventsourcing_env(self.settings, self.name))
        self.runtime = ProxyRuntime(self.settings, self.app, self.store)
        handlers.register(self.router, self.runtime, max_deliver=self.settings.max_deliver)

    async def start(self, broker: NatsBroker) -> None:
        await self.runtime.start(broker)

    async def stop(self) -> None:
        await self.runtime.stop()
        self.app.close()
        self.store.close()


def build(settings: Settings) -> ProxyService:
    return ProxyService(settings)
