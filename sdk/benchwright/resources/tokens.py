"""``bw.tokens``: personal access tokens, minted by a session (see ``Benchwright.login``)."""

from __future__ import annotations

import builtins
from collections.abc import Iterable

from .._http import SyncHTTP
from .._models import AttrDict
from ._common import TokenCalls

__all__ = ["Tokens"]


class Tokens:
    """Mint, list and revoke tokens; reach it as ``Benchwright.login(...).tokens``.

    Only a session (a client made by :meth:`~benchwright.Benchwright.login`) may use
    these: a token cannot mint tokens, so a leaked one cannot breed more of itself
    (a token answers :class:`~benchwright.PermissionDeniedError`,
    code ``session_required``).
    """

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http

    def create(self, scopes: Iterable[str], label: str = "") -> AttrDict:
        """A new token with ``scopes`` (e.g. ``runs:read``, ``runs:write``); its
        ``.token`` is shown this once, store it then."""
        return self._http.send(TokenCalls.create(scopes, label))

    def list(self) -> builtins.list[AttrDict]:
        """The account's tokens (ids, labels, scopes; never the tokens themselves)."""
        return self._http.send(TokenCalls.list())

    def revoke(self, token_id: str) -> AttrDict:
        """Revoke a token at once."""
        return self._http.send(TokenCalls.revoke(token_id))
