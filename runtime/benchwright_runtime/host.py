"""Hosting services on one broker: the shared core of both runners."""

import asyncio
import importlib
import logging
from collections.abc import Sequence

from faststream.nats import NatsBroker

from benchwright_shared.bus import build_broker, declare_streams, jetstream
from benchwright_shared.service import Service
from benchwright_shared.settings import Settings

log = logging.getLogger(__name__)

# Service name -> module whose ``build(settings)`` assembles it.
SERVICES: dict[str, str] = {
    "registry": "benchwright_registry.app",
    "billing": "benchwright_billing.app",
    "proxy": "benchwright_proxy.app",
    "sandbox-manager": "benchwright_sandbox_manager.app",
    "orchestrator": "benchwright_orchestrator.app",
    "gateway": "benchwright_gateway.app",
}


def build_service(name: str, settings: Settings) -> Service:
    if name not in SERVICES:
        raise KeyError(f"unknown service {name!r}; known: {', '.join(SERVICES)}")
    module = importlib.import_module(SERVICES[name])
    service: Service = module.build(settings)
    return service


class ServiceHost:
    """Runs some services on one broker in this process."""

    def __init__(self, settings: Settings, names: Sequence[str], *, label: str) -> None:
        self.settings = settings
        self.services = [build_service(n, settings) for n in names]
        self.broker: NatsBroker = build_broker(settings, name=label)
        for service in self.services:
            self.broker.include_router(service.router)
        self._started: list[Service] = []

    def service(self, name: str) -> Service:
        return next(s for s in self.services if s.name == name)

    async def start(self) -> None:
        await self.broker.connect()
        self._connection = self.broker.connection
        await declare_streams(jetstream(self.broker), replicas=self.settings.nats_replicas)
        await self.broker.start()
        for service in self.services:
            await service.start(self.broker)
            self._started.append(service)

    async def stop(self) -> None:
        for service in reversed(self._started):
            try:
                await service.stop()
            except Exception:
                log.exception("stopping %s failed", service.name)
        self._started.clear()
        try:
            await asyncio.wait_for(self.broker.stop(), 10)
        except Exception:
            log.exception("stopping the broker failed; closing its connection")
        finally:
            # Whatever happened above, no subscription of this host may stay live:
            # it would go on taking commands meant for whoever starts next.
            connection = getattr(self, "_connection", None)
            if connection is not None and not connection.is_closed:
                await connection.close()
