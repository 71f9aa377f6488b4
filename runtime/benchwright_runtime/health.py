"""A process's health for an orchestrator of containers (Kubernetes probes, compose checks).

``GET /healthz`` answers 200 while the process's event loop answers at all (an
outage of NATS or PostgreSQL is not cured by a restart, so liveness ignores
them); ``GET /readyz`` answers 200 once every service in the process started and
while it is connected to NATS. Plain HTTP on ``BW_HEALTH_PORT``; nothing else.
"""

import asyncio
import contextlib
from collections.abc import Callable

Check = Callable[[], bool]


class HealthServer:
    def __init__(
        self, port: int, *, ready: Check, live: Check = lambda: True, host: str = "0.0.0.0"
    ) -> None:
        self.port = port
        self.host = host
        self.live = live
        self.ready = ready
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 5)
            parts = request.decode(errors="replace").split()
            path = parts[1] if len(parts) > 1 else ""
            check = {"/healthz": self.live, "/readyz": self.ready}.get(path)
            if check is None:
                status, body = "404 Not Found", b"not found\n"
            elif check():
                status, body = "200 OK", b"ok\n"
            else:
                status, body = "503 Service Unavailable", b"not yet\n"
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()
