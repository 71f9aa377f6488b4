"""``Idempotency-Key`` for operations that are not launches: a repeat with the same
body gets the first answer again (200), a repeat with another body a 409."""

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import Response

from benchwright_gateway.api.auth import Principal
from benchwright_gateway.context import GatewayContext
from benchwright_gateway.domain import body_fingerprint
from benchwright_gateway.operations import key_reused

# ``key_reused`` lives with the operations; routes still find it here.
__all__ = ["answer_once", "key_reused"]


async def answer_once(
    ctx: GatewayContext,
    caller: Principal,
    operation: str,
    key: str | None,
    body: dict[str, Any],
    response: Response,
    make: Callable[[], Awaitable[dict[str, Any]]],
) -> dict[str, Any]:
    """``make()``, at most once per ``key`` and ``operation`` for the caller's account.

    Two requests racing with one key may both act; both operations this serves
    (creating a secret by name, patching the host policy) converge when they do.
    """
    if not key:
        return await make()
    fingerprint = body_fingerprint(body)
    earlier = await ctx.call(ctx.app.find_answer, caller.account, operation, key)
    if earlier is None:
        answer = await make()
        earlier = await ctx.call(
            ctx.app.remember_answer, caller.account, operation, key, fingerprint, answer
        )
        if earlier.body_sha256 == fingerprint:
            return answer
    if earlier.body_sha256 != fingerprint:
        raise key_reused()
    response.status_code = 200
    first: dict[str, Any] = earlier.answer
    return first
