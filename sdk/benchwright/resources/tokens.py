"""``bw.tokens`` and ``bw.me()``: personal access tokens, minted by a session."""

from __future__ import annotations

from collections.abc import Iterable

from .._http import SyncHTTP
from .._models import AttrDict
from ._common import parse_dict, path_id

__all__ = ["Tokens"]


class Tokens:
    """Mint, list and revoke tokens. The client must hold a session (:meth:`Benchwright.login`):
    a token cannot mint tokens."""

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http

    def create(self, scopes: Iterable[str], label: str = "") -> AttrDict:
        """A new token with ``scopes``; ``.token`` is its only showing."""
        body = {"scopes": list(scopes), "label": label}
        return parse_dict(self._http.request("POST", "/v1/tokens", json=body))

    def list(self) -> list[AttrDict]:
        """The account's tokens (ids, labels, scopes; never the tokens themselves)."""
        return [parse_dict(t) for t in self._http.request("GET", "/v1/tokens")["data"]]

    def revoke(self, token_id: str) -> AttrDict:
        """Revoke a token at once."""
        return parse_dict(self._http.request("DELETE", f"/v1/tokens/{path_id(token_id)}"))
