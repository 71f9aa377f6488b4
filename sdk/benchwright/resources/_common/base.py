"""What every resource's requests share: parsing answers, quoting ids, keys, params."""

from __future__ import annotations

import uuid
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from functools import partial
from typing import Any, Protocol
from urllib.parse import quote

from pydantic import BaseModel, ValidationError

from benchwright_shared.api.account import BlockedHostList

from ..._errors import APIResponseError
from ..._models import AttrDict, BlockedHost

__all__ = [
    "Page",
    "as_bytes",
    "as_text",
    "csv_param",
    "follow_pages",
    "follow_pages_async",
    "key_header",
    "new_idempotency_key",
    "parse",
    "parse_dict",
    "parse_list",
    "parser",
    "path_id",
    "plain",
    "present",
    "types_param",
]


def parse[M: BaseModel](model: type[M], data: Any) -> M:
    """Validate a response body, reporting a mismatch as :class:`APIResponseError`."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise APIResponseError(
            f"unexpected {model.__name__} from the server: {exc.errors()[0]['msg']}"
            f" at {'.'.join(map(str, exc.errors()[0]['loc']))}"
        ) from exc


def parse_dict(data: Any) -> AttrDict:
    """A plain JSON object with attribute access."""
    if not isinstance(data, dict):
        raise APIResponseError(f"expected a JSON object from the server, got {type(data).__name__}")
    return AttrDict(data)


def parse_list(data: Any) -> list[AttrDict]:
    """The ``data`` rows of a ``{"object": "list", "data": [...]}`` answer."""
    rows = data.get("data") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise APIResponseError("expected a list object with a data array from the server")
    return [parse_dict(row) for row in rows]


def blocked_host_rows(data: Any) -> list[BlockedHost]:
    """The rows of a ``BlockedHostList`` answer."""
    return parse(BlockedHostList, data).data


def parser[M: BaseModel](model: type[M]) -> Callable[[Any], M]:
    """``parse`` bound to ``model``: a :class:`Call`'s ``parse``."""
    return partial(parse, model)


def path_id(value: str) -> str:
    """Quote an id for use as one path segment, so ``/`` or ``?`` cannot escape it."""
    return quote(value, safe="")


def new_idempotency_key() -> str:
    """A fresh key for a launch whose caller did not supply one."""
    return str(uuid.uuid4())


def key_header(idempotency_key: str | None, *, fresh: bool = False) -> dict[str, str] | None:
    """The ``Idempotency-Key`` header: the caller's key, else (with ``fresh``) a new one.

    A key always travels as this header, never as a body field, and the transport
    sends the same key on every retry of the request.
    """
    key = idempotency_key or (new_idempotency_key() if fresh else None)
    return {"Idempotency-Key": key} if key else None


def csv_param(values: str | Iterable[str] | None) -> str | None:
    """A list-valued query parameter, as the API takes it: one comma-separated value."""
    if values is None or isinstance(values, str):
        return values
    return ",".join(values) or None


# The event-type filter of ``runs.events``; an older name of :func:`csv_param`.
types_param = csv_param


def plain(value: Any) -> Any:
    """A mapping as a plain ``dict`` (so it serialises); anything else as it is."""
    return dict(value) if isinstance(value, Mapping) else value


def present(**fields: Any) -> dict[str, Any]:
    """The fields that are set (not ``None``), mappings made plain."""
    return {k: plain(v) for k, v in fields.items() if v is not None}


def as_bytes(data: Any) -> bytes:
    """A raw answer's bytes."""
    return bytes(data or b"")


def as_text(data: Any) -> str:
    """A raw answer as text (UTF-8)."""
    return as_bytes(data).decode()


class Page[Item](Protocol):
    """One page of a cursor-paged listing."""

    @property
    def data(self) -> Sequence[Item]: ...

    @property
    def next_page_token(self) -> str | None: ...


def follow_pages[Item](fetch: Callable[[str | None], Page[Item]]) -> Iterator[Item]:
    """Every item of a paged listing: ``fetch(token)`` gets one page, from ``None`` on."""
    token: str | None = None
    while True:
        page = fetch(token)
        yield from page.data
        token = page.next_page_token
        if not token:
            return


async def follow_pages_async[Item](
    fetch: Callable[[str | None], Awaitable[Page[Item]]],
) -> AsyncIterator[Item]:
    """The async twin of :func:`follow_pages`."""
    token: str | None = None
    while True:
        page = await fetch(token)
        for item in page.data:
            yield item
        token = page.next_page_token
        if not token:
            return
