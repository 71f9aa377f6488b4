"""What every service hands to a runner.

A service is a FastStream router of plain handlers plus start/stop hooks for
what runs beside them (relays, HTTP servers). Runners (embedded: all services
on one broker; ``serve``: one) build the broker and call these; nothing inside
a service knows which runner it is under.
"""

from typing import Protocol

from faststream.nats import NatsBroker, NatsRouter

# How long an HTTP server of ours keeps an idle connection open. Clients reuse idle
# connections for up to their own expiry (httpx and the OpenAI SDK: 5 s); a server
# that closes sooner or at the same moment races them, and the request sent on the
# closing connection fails with a read error. Ours outlasts them.
HTTP_KEEP_ALIVE_S = 75


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
