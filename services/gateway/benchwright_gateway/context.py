"""What the HTTP layer needs from the rest of the gateway."""

from dataclasses import dataclass
from typing import Any, TypeVar

from faststream.nats import NatsBroker

from benchwright_gateway.application import GatewayApplication
from benchwright_shared.projection import ProjectionStore
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore

T = TypeVar("T")


@dataclass
class GatewayContext:
    settings: Settings
    app: GatewayApplication
    views: ProjectionStore
    blocking: BlockingStore
    broker: NatsBroker | None = None

    def bus(self) -> NatsBroker:
        if self.broker is None:
            raise RuntimeError("the gateway's broker is not connected yet")
        return self.broker

    async def read(self, fn: Any, *args: Any) -> Any:
        return await self.blocking.run(self.views.read, lambda cur: fn(cur, *args))

    async def call(self, fn: Any, *args: Any) -> Any:
        return await self.blocking.run(fn, *args)
