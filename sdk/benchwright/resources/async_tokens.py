"""``AsyncBenchwright().tokens``: the async twin of :mod:`benchwright.resources.tokens`."""

from __future__ import annotations

import builtins
from collections.abc import Iterable

from .._async_http import AsyncHTTP
from .._models import AttrDict
from ._common import TokenCalls

__all__ = ["AsyncTokens"]


class AsyncTokens:
    """Mint, list and revoke tokens; only a session (``await AsyncBenchwright.login(...)``)
    may. Each method behaves as its namesake on
    :class:`~benchwright.resources.tokens.Tokens`."""

    def __init__(self, http: AsyncHTTP) -> None:
        self._http = http

    async def create(self, scopes: Iterable[str], label: str = "") -> AttrDict:
        """A new token with ``scopes``; its ``.token`` is shown this once."""
        return await self._http.send(TokenCalls.create(scopes, label))

    async def list(self) -> builtins.list[AttrDict]:
        """The account's tokens (ids, labels, scopes; never the tokens themselves)."""
        return await self._http.send(TokenCalls.list())

    async def revoke(self, token_id: str) -> AttrDict:
        """Revoke a token at once."""
        return await self._http.send(TokenCalls.revoke(token_id))
