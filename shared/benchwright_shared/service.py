"""What every service hands to a runner.

A service is a FastStream router of plain handlers plus start/stop hooks for
what runs beside them (relays, HTTP servers). Runners (embedded: all services
on one broker; ``serve``: one) build the broker and call these; nothing inside
a service knows which runner it is under.
"""

from typing import Protocol

from faststream.nats import NatsBroker, NatsRouter


class Service(Protocol):
    name: str
    router: NatsRouter

    async def start(self, broker: NatsBroker) -> None:
        """Called once the broker is connected, before the subscribers start.

        A service may also have ``async def serve(self)``: called last, once every
        subscriber of the process runs, to open what outsiders reach (an HTTP API).
        """

    async def stop(self) -> None:
        """Release what ``start`` acquired; called before the broker stops."""
