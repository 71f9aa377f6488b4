"""Hosting services on one broker: the shared core of both runners."""

import asyncio
import importlib
import logging
from collections.abc import Awaitable, Callable, Sequence

from faststream.nats import NatsBroker

from benchwright_shared.bus import build_broker, declare_buckets, declare_streams, jetstream
from benchwright_shared.service import Service
from benchwright_shared.settings import Settings
from benchwright_shared.store import setup_lock

log = logging.getLogger(__name__)

# How long a starting process waits for JetStream to answer.
STARTUP_PATIENCE_S = 120.0

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
        # Copies starting at once take turns at creating their tables.
        with setup_lock(settings):
            self.services = [build_service(n, settings) for n in names]
        self.broker: NatsBroker = build_broker(settings, name=label)
        for service in self.services:
            self.broker.include_router(service.router)
        self._started: list[Service] = []

    def ready(self) -> bool:
        """Every service of the process started, and the process is connected to NATS."""
        connection = getattr(self, "_connection", None)
        return (
            getattr(self, "_consuming", False)
            and connection is not None
            and connection.is_connected
        )

    def service(self, name: str) -> Service:
        return next(s for s in self.services if s.name == name)

    async def start(self) -> None:
        await self.broker.connect()
        self._connection = self.broker.connection
        js = jetstream(self.broker)

        async def declare() -> None:
            await declare_streams(js, replicas=self.settings.nats_replicas)
            await declare_buckets(js, replicas=self.settings.nats_replicas)

        # A cluster that lost a node answers again once its streams and consumers elect
        # leaders; starting subscribers again is safe (each makes its subscription once).
        await _patiently("declaring streams", declare)

        # Services first, then their subscribers: a command waiting in a durable
        # consumer is delivered the moment its subscriber starts, and must find the
        # service ready for it (its leases, its broker, its backends).
        # They start side by side: each mostly waits (on NATS, a thread, a port), and
        # none needs another started (they only talk through subscribers, which start
        # after all of them).
        async def start(service: Service) -> None:
            await service.start(self.broker)
            self._started.append(service)

        results = await asyncio.gather(*(start(s) for s in self.services), return_exceptions=True)
        for failure in results:
            if isinstance(failure, BaseException):
                raise failure
        await _patiently("starting consumers", self.broker.start)
        self._consuming = True
        # Last, the doors: an API that answers only once everything behind it does.
        for service in self.services:
            serve = getattr(service, "serve", None)
            if serve is not None:
                await serve()

    async def stop(self) -> None:
        for service in reversed(self._started):
            try:
                await service.stop()
            except Exception:
                log.exception("stopping %s failed", service.name)
        self._started.clear()
        try:
            await asyncio.wait_for(self.broker.stop(), 10)
        except Exception as exc:  # NATS away already: nothing to drain, nothing lost
            log.warning("stopping the broker: %s; closing its connection", exc or type(exc))
        finally:
            # Whatever happened above, no subscription of this host may stay live:
            # it would go on taking commands meant for whoever starts next.
            connection = getattr(self, "_connection", None)
            if connection is not None and not connection.is_closed:
                try:
                    await connection.close()
                except Exception as exc:
                    log.warning("closing the NATS connection: %s", exc or type(exc))


async def _patiently(what: str, step: Callable[[], Awaitable[None]]) -> None:
    """``step()``, tried again while JetStream is not answering, for ``STARTUP_PATIENCE_S``."""
    deadline = asyncio.get_running_loop().time() + STARTUP_PATIENCE_S
    while True:
        try:
            await step()
            return
        except Exception as exc:
            if asyncio.get_running_loop().time() > deadline:
                raise
            log.warning("%s failed (%s); retrying", what, exc)
            await asyncio.sleep(1.0)
