"""What the injector asks of the proxy: who a key is, what a host may do, what to inject.

Every port is an async callable. The vault and the bindings store are blocking
SQLite: wrap their calls so they run off the event loop (the proxy's
``BlockingStore.run`` does, and so does :func:`in_thread` here).
"""

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import NamedTuple, Protocol


class RunIdentity(NamedTuple):
    """The run a proxy key belongs to, and the account that launched it."""

    run_id: str
    account: str


class InjectionRule(Protocol):
    """How a secret goes into a request (``SecretRule`` from the shared contracts fits)."""

    @property
    def inject_kind(self) -> str: ...

    @property
    def inject_target(self) -> str | None: ...


# ``authenticate(key)``: the run a proxy key opens, or None for a wrong, unknown or revoked key.
Authenticate = Callable[[str], Awaitable[tuple[str, str] | None]]
# ``decide(account, host, run_id)``: ``"allow"`` or ``"block"``.
Decide = Callable[[str, str, str], Awaitable[str]]
# ``injections(account, host, pinned)``: the (rule, value) pairs for a request to ``host``.
Injections = Callable[[str, str, dict[str, int]], Awaitable[Sequence[tuple[InjectionRule, str]]]]
# ``pin(account)``: each secret's current version, fixed for a run when it is first seen.
Pin = Callable[[str], Awaitable[dict[str, int]]]
# ``record_refusals(account, {(run_id, host): count})``: refusals since the last call.
RecordRefusals = Callable[[str, dict[tuple[str | None, str], int]], Awaitable[None]]


def in_thread[**P, T](fn: Callable[P, T]) -> Callable[P, Awaitable[T]]:
    """An async port from a blocking function: each call runs on a worker thread."""

    @functools.wraps(fn)
    async def call(*args: P.args, **kwargs: P.kwargs) -> T:
        return await asyncio.to_thread(fn, *args, **kwargs)

    return call
