"""What every service hands to a runner.

A service is a FastStream router of plain handlers plus start/stop hooks for
what runs beside them (relays, HTTP servers). Runners (embedded: all services
on one broker; ``serve``: one) build the broker and call these; nothing inside
a service knows which runner it is under.
"""

from collections.abc import Awaitable
from typing import Protocol

from faststream.nats import NatsBroker, NatsRouter

# How long an HTTP server of ours keeps an idle connection open. Clients reuse idle
# connections for up to their own expiry (httpx and the OpenAI SDK: 5 s); a server
# that closes sooner or at the same moment races them, and the request sent on the
# closing connection fails with a read error. Ours outlasts them.
HTTP_KEEP_ALIVE_S = 75


async def listening(serve: Awaitable[None], host: str, port: int) -> None:
    """Await an HTTP server's ``serve()``. uvicorn ends a start that cannot listen (the
    port is taken) with ``sys.exit``: a ``SystemExit`` raised inside the event loop,
    which takes the whole process with it, every other service of an embedded run
    too. It becomes an ``OSError`` naming the address, which the runner can report."""
    try:
        await serve
    except SystemExit as exc:
        raise OSError(f"could not listen on {host}:{port} (uvicorn exited {exc.code})") from None


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
