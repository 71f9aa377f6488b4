"""Adaptive concurrency toward one upstream: additive increase, multiplicative decrease.

An upstream that answers 429 is getting more calls than it serves. Each 429
halves how many calls the proxy lets through to it at once (never below one),
at most once per round: calls that were already in flight when the limit was
halved carry news of the old limit, so their 429s do not halve it again. Every
``limit`` calls that get through (a round's worth) raise the limit by one, up
to the configured ceiling. Calls over the limit wait in arrival order.
"""

import asyncio
import contextlib
import logging
from collections import deque

log = logging.getLogger(__name__)


class Permit:
    """One call's slot; released exactly once, however often ``release`` is called."""

    __slots__ = ("_limiter", "epoch", "released")

    def __init__(self, limiter: "AIMDLimiter", epoch: int) -> None:
        self._limiter = limiter
        self.epoch = epoch
        self.released = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self._limiter._release()


class AIMDLimiter:
    """How many calls may be in flight toward one upstream right now."""

    def __init__(self, ceiling: int, *, name: str = "upstream", floor: int = 1) -> None:
        if ceiling < floor or floor < 1:
            raise ValueError(f"need 1 <= floor <= ceiling, got {floor} and {ceiling}")
        self.name = name
        self.ceiling = ceiling
        self.floor = floor
        self.limit = ceiling
        self.in_flight = 0
        self._epoch = 0
        self._successes = 0
        self._waiters: deque[asyncio.Future[int]] = deque()

    @property
    def waiting(self) -> int:
        return sum(1 for w in self._waiters if not w.done())

    async def acquire(self) -> Permit:
        """A slot, at once when one is free, else after the calls queued before this one."""
        if self.in_flight < self.limit and not self._waiters:
            self.in_flight += 1
            return Permit(self, self._epoch)
        waiter: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            epoch = await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # handed a slot just as the caller gave up: pass it on
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            raise
        return Permit(self, epoch)

    def rate_limited(self, permit: Permit) -> None:
        """The upstream answered 429 to the call holding ``permit``: halve the limit."""
        if permit.epoch != self._epoch:
            return  # this round was already halved
        self._epoch += 1
        self._successes = 0
        before, self.limit = self.limit, max(self.floor, self.limit // 2)
        if before != self.limit:
            log.warning("%s is rate limiting: concurrency %d -> %d", self.name, before, self.limit)

    def succeeded(self) -> None:
        """A call got through: a round's worth of these raises the limit by one."""
        self._successes += 1
        if self._successes >= self.limit:
            self._successes = 0
            if self.limit < self.ceiling:
                self.limit += 1
                self._wake()

    def _release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.limit:
            waiter = self._waiters.popleft()
            if waiter.done():
                continue  # its caller gave up
            self.in_flight += 1
            waiter.set_result(self._epoch)
