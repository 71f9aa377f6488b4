"""Assembles the proxy: bindings store, model endpoint, vault, egress injector, handlers."""

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from faststream.nats import NatsBroker, NatsRouter

from benchwright_proxy import handlers
from benchwright_proxy.application import ProxyApplication
from benchwright_proxy.credentials import RunCredentials
from benchwright_proxy.injector import EgressInjector, InjectorError
from benchwright_proxy.injector.wiring import ServicePorts
from benchwright_proxy.service import ProxyRuntime
from benchwright_proxy.settings import ProxySettings
from benchwright_proxy.traces import CallTraces
from benchwright_proxy.vault import handlers as vault_handlers
from benchwright_proxy.vault.application import VaultApplication
from benchwright_proxy.vault.crypto import VaultSealer
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore, eventsourcing_env
from benchwright_shared.telemetry import start_tracing

log = logging.getLogger(__name__)


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
        # None unless an OTLP endpoint is configured: then a span per model call.
        self.tracing = start_tracing(self.name, self.settings.tracing)
        if self.tracing is not None:
            self.runtime.call_traces = CallTraces(self.tracing)
        # The vault keeps its own store (and key) beside the bindings.
        self.vault_store = BlockingStore(f"{self.name}-vault")
        sealer = VaultSealer.from_config(
            self.settings.vault_key, self.settings.service_dir(self.name)
        )
        self.vault = VaultApplication(
            sealer, env=eventsourcing_env(self.settings, self.name, part="vault")
        )
        self.runtime.derive = sealer.derive
        vault_handlers.register(self.router, self.vault, self.vault_store)
        self.runtime.credentials = RunCredentials(self.vault, self.vault_store)
        self.injector = self._injector() if self.settings.injector_enabled else None
        self._injector_task: asyncio.Task[None] | None = None

    def _injector(self) -> EgressInjector:
        ports = ServicePorts(self.runtime.authenticate_egress, self.vault, self.vault_store)
        return EgressInjector(
            confdir=self.settings.injector_ca_dir
            or self.settings.service_dir(self.name) / "injector",
            authenticate=ports.authenticate,
            decide=ports.decide,
            injections=ports.injections,
            pin=ports.pin,
            record_refusals=ports.record_refusals,
            listen_host=self.settings.injector_host,
            listen_port=self.settings.injector_port,
            upstream_ca=self.settings.injector_upstream_ca,
            allow_public_clients=self.settings.injector_host not in ("127.0.0.1", "::1"),
            allow_internal=self.settings.injector_allow_internal,
        )

    async def start(self, broker: NatsBroker) -> None:
        await self.runtime.start(broker)
        # The injector (mitmproxy's import, a CA on first start: about half a second)
        # starts behind the service: only an attach needs it, and waits for it.
        self._injector_task = asyncio.create_task(self._start_injector(), name="proxy-injector")

    async def _start_injector(self) -> None:
        try:
            if self.injector is not None:
                try:
                    await self.injector.start()
                except InjectorError:
                    # Sandboxes then get no egress at all: closed, never open.
                    log.exception("the egress injector did not start; sandboxes have no network")
                    self.injector = None
            self.runtime.injector = self.injector
        finally:
            self.runtime.injector_settled.set()

    async def stop(self) -> None:
        if self._injector_task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._injector_task
        # The injector's last refusals go to the vault: stop it before the vault closes.
        if self.injector is not None:
            await self.injector.stop()
        await self.runtime.stop()
        # Each on its store's thread: after any call still running there.
        await self.store.run(self.app.close)
        self.store.close()
        await self.vault_store.run(self.vault.close)
        self.vault_store.close()
        if self.tracing is not None:
            await asyncio.to_thread(self.tracing.shutdown)  # exports what is left


def build(settings: Settings) -> ProxyService:
    return ProxyService(settings)
