"""Calls the proxy answered lately, by call id: a repeat is served, not made again.

The scorer runtime names every model call (``X-Benchwright-Call-Id``: task,
trial and the call's place in the task) and makes it again when the answer was
lost on the way (a connection cut, a proxy restarting behind a load balancer). A
repeat of a call this copy already answered, with the same body, gets the same
answer from here: the model is not asked twice and the call is metered once. A
repeat of a call still running waits for it. Only answered calls (200) are kept,
for ``TTL_S``, at most ``MAX_BYTES`` of them; a proxy that restarted remembers
nothing, and nothing was metered for calls it never finished.
"""

import asyncio
import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from fastapi.responses import Response

TTL_S = 1800.0
MAX_BYTES = 64 * 1024 * 1024

Key = tuple[str, str, str]  # run id, call id, sha256 of the body


def call_key(run_id: str, call_id: str, body: bytes) -> Key:
    return (run_id, call_id, hashlib.sha256(body).hexdigest())


class RecentCalls:
    def __init__(self, *, ttl_s: float = TTL_S, max_bytes: int = MAX_BYTES) -> None:
        self.ttl_s = ttl_s
        self.max_bytes = max_bytes
        # key -> (when, body, media type, headers): a repeat gets the same cost stamp.
        self._answered: OrderedDict[Key, tuple[float, bytes, str, dict[str, str]]] = OrderedDict()
        self._bytes = 0
        self._running: dict[Key, asyncio.Future[Response]] = {}
        self.served_again = 0

    async def once(self, key: Key, make: Callable[[], Awaitable[Response]]) -> Response:
        """``make()``'s answer for ``key``: made once, served again to repeats."""
        self._expire()
        kept = self._answered.get(key)
        if kept is not None:
            self.served_again += 1
            return Response(kept[1], media_type=kept[2], headers=kept[3])
        running = self._running.get(key)
        if running is not None:
            self.served_again += 1
            response = await asyncio.shield(running)
            return Response(
                bytes(response.body),
                status_code=response.status_code,
                media_type=response.media_type,
                headers=stamp_of(response),
            )
        future: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        self._running[key] = future
        try:
            response = await make()
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning when nobody waits
            raise
        finally:
            self._running.pop(key, None)
        future.set_result(response)
        if response.status_code == 200:
            self._keep(
                key,
                bytes(response.body),
                response.media_type or "application/json",
                stamp_of(response),
            )
        return response

    def _keep(self, key: Key, body: bytes, media_type: str, headers: dict[str, str]) -> None:
        self._answered[key] = (time.monotonic(), body, media_type, headers)
        self._bytes += len(body)
        while self._bytes > self.max_bytes and self._answered:
            _, (_, old, _, _) = self._answered.popitem(last=False)
            self._bytes -= len(old)

    def _expire(self) -> None:
        horizon = time.monotonic() - self.ttl_s
        while self._answered:
            _key, (at, body, _, _) = next(iter(self._answered.items()))
            if at >= horizon:
                return
            self._answered.popitem(last=False)
            self._bytes -= len(body)


def stamp_of(response: Response) -> dict[str, str]:
    """The answer's cost stamp (``x-benchwright-*`` headers), to serve again with it."""
    return {k: v for k, v in response.headers.items() if k.startswith("x-benchwright-")}
