"""Assembles the proxy: bindings store, model endpoint, handlers."""

from dataclasses import dataclass, field

from faststream.nats import NatsBroker, NatsRouter

from benchwright_proxy import handlers
from benchwright_proxy.application import ProxyApplication
from benchwright_proxy.service import ProxyRuntime
from benchwright_proxy.settings import ProxySettings
from benchwright_proxy.vault import handlers as vault_handlers
from benchwright_proxy.vault.application import VaultApplication
from benchwright_proxy.vault.crypto import Sealer
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore, eventsourcing_env


@dataclass
class ProxyService:
    settings: Settings
    name: str = "proxy"
    router: NatsRouter = field(default_factory=NatsRouter)
    proxy_settings: ProxySettings = field(default_factory=ProxySettings)

    def __post_init__(self) -> None:
        self.store = BlockingStore(self.name)
        self.app = ProxyApplication(env=eventsourcing_env(self.settings, self.name))
        self.runtime = ProxyRuntime(self.settings, self.app, self.store, self.proxy_settings)
        handlers.register(self.router, self.runtime, max_deliver=self.settings.max_deliver)
        # The vault keeps its own store (and key) beside the bindings.
        self.vault_store = BlockingStore(f"{self.name}-vault")
        self.vault = VaultApplication(
            Sealer.from_config(self.settings.vault_key, self.settings.service_dir(self.name)),
            env=eventsourcing_env(self.settings, self.name, part="vault"),
        )
        vault_handlers.register(self.router, self.vault, self.vault_store)

    async def start(self, broker: NatsBroker) -> None:
        await self.runtime.start(broker)

    async def stop(self) -> None:
        await self.runtime.stop()
        self.app.close()
        self.store.close()
        self.vault.close()
        self.vault_store.close()


def build(settings: Settings) -> ProxyService:
    return ProxyService(settings)
