"""A webhook endpoint on loopback: records every POST, answers with scripted statuses."""

import asyncio
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    answered: int
    at: float


class WebhookReceiver:
    """``fail_next(500, 503)`` makes the next two POSTs fail; then it answers 200 again."""

    def __init__(self) -> None:
        self.received: list[Received] = []
        self._script: deque[int] = deque()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                with receiver._lock:
                    status = receiver._script.popleft() if receiver._script else 200
                    receiver.received.append(
                        Received(
                            path=self.path,
                            headers={k.lower(): v for k, v in self.headers.items()},
                            body=body,
                            answered=status,
                            at=time.time(),
                        )
                    )
                self.send_response(status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hooks/benchwright"

    def start(self) -> "WebhookReceiver":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def fail_next(self, *statuses: int) -> None:
        with self._lock:
            self._script.extend(statuses)

    def of_event(self, event: str) -> list[Received]:
        return [r for r in self.received if r.headers.get("x-benchwright-event") == event]

    async def wait_for(
        self, count: int, *, event: str | None = None, timeout: float = 30
    ) -> list[Received]:
        """Wait until ``count`` POSTs (of ``event``) arrived; returns them."""
        deadline = time.monotonic() + timeout
        while True:
            seen = self.of_event(event) if event else list(self.received)
            if len(seen) >= count:
                return seen
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(seen)} of {count} webhook POSTs arrived: {seen}")
            await asyncio.sleep(0.05)
