"""What reaches the API at all: a bounded body, JSON the platform can keep, no crash
that takes the connection with it.

Two ASGI middlewares, outermost first:

* ``Contained``: an exception that escapes the app becomes a 500 problem document
  and goes no further. (Starlette's own error middleware answers and then raises
  again, and uvicorn closes the connection, so a client's next request on a
  keep-alive connection fails too.)
* ``BodyGuard``: a body over ``max_bytes`` is refused with 413 before it is read
  to the end, and a JSON body is parsed strictly and walked once before any
  route sees it. Refused, each with 400 and the JSON path at fault: ``NaN`` /
  ``Infinity`` and numbers that overflow a float (``1e999``), integers outside
  64 bits, nesting deeper than ``MAX_DEPTH``, lone UTF-16 surrogates (they
  cannot be encoded for the bus) and NUL characters (PostgreSQL cannot store
  them). A route then parses the same bytes again, knowing they are safe.
"""

import json
import logging
import math
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from benchwright_gateway.api.errors import PROBLEM_JSON
from benchwright_shared.refusal import Refused

log = logging.getLogger(__name__)

type Scope = MutableMapping[str, Any]
type Message = MutableMapping[str, Any]
type Receive = Callable[[], Awaitable[Message]]
type Send = Callable[[Message], Awaitable[None]]
type ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Default largest request body (BW_MAX_REQUEST_BYTES): well below a production
# nats-server's 1 MB message limit, which a request's command crosses whole.
MAX_REQUEST_BYTES = 512 * 1024
# Task uploads (BW_MAX_UPLOAD_BYTES) go to the object store in chunks, not whole.
MAX_UPLOAD_BYTES = 32 * 1024 * 1024
# A refused body up to this size is read to its end, so the client gets the answer.
DRAIN_BYTES = 64 * 1024 * 1024
UPLOAD_PATHS = re.compile(r"^/v1/(benchmarks/[^/]+/subsets|subsets/[^/]+/tasks)/?$")
# JSON nested deeper than this is refused (a launch's metadata is a few levels).
MAX_DEPTH = 32
INT64 = 2**63
# The largest position (offset, sequence) a query may name: what every JSON client
# can hold exactly, and far inside the stores' 64-bit integers.
MAX_POSITION = 2**53 - 1


class Refusal(Refused):
    """A refusal the guard answers itself: it runs before the app and its handlers."""

    def __init__(self, status: int, title: str, detail: str, field: str, code: str) -> None:
        super().__init__(status, title, detail, field=field or None, code=code)
        # Whether the whole body was read before the refusal (413 only).
        self.body_ended = False


async def send_problem(send: Send, refusal: Refusal, headers: list[tuple[bytes, bytes]]) -> None:
    document = {
        "type": "about:blank",
        "title": refusal.title,
        "status": refusal.status,
        "detail": refusal.detail,
        "field": refusal.field,
        "code": refusal.code,
    }
    body = json.dumps({k: v for k, v in document.items() if v not in ("", None)}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": refusal.status,
            "headers": [
                (b"content-type", PROBLEM_JSON.encode()),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class Contained:
    """A 500 that leaves the connection open (see the module's docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking)
        except Exception:
            log.exception("unhandled error in %s %s", scope.get("method"), scope.get("path"))
            if not started:
                refusal = Refusal(500, "internal error", "an internal error", "", "internal")
                await send_problem(send, refusal, [])


class BodyGuard:
    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int = MAX_REQUEST_BYTES,
        max_upload_bytes: int = MAX_UPLOAD_BYTES,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_upload_bytes = max_upload_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        limit = self.max_upload_bytes if UPLOAD_PATHS.match(scope["path"]) else self.max_bytes
        try:
            declared = int(headers.get(b"content-length", b"0") or 0)
        except ValueError:
            declared = 0
        try:
            if declared > limit:
                raise _too_large(declared, limit)
            body = await self._read(receive, limit)
            if _is_json(headers.get(b"content-type", b"")) and body.strip():
                check_json(body)
        except Refusal as refusal:
            close: list[tuple[bytes, bytes]] = []
            if (
                refusal.status == 413
                and not refusal.body_ended
                and not await _drain(receive, DRAIN_BYTES)
            ):
                # Past what is worth reading to the end: answer, and close.
                close = [(b"connection", b"close")]
            await send_problem(send, refusal, close)
            return
        await self.app(scope, _replay(body), send)

    async def _read(self, receive: Receive, limit: int) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            more = message.get("more_body", False)
            if size > limit:
                refusal = _too_large(size, limit)
                refusal.body_ended = not more
                raise refusal
            chunks.append(chunk)
            if not more:
                break
        return b"".join(chunks)


def _too_large(size: int, limit: int) -> Refusal:
    return Refusal(
        413,
        "request body too large",
        f"the body has {size} bytes or more; at most {limit} are accepted here",
        "body",
        "payload_too_large",
    )


async def _drain(receive: Receive, most: int) -> bool:
    """Read and drop the rest of a refused body, up to ``most`` bytes: a client still
    sending when the answer comes sees a reset connection, not the answer. True
    when the body ended within ``most``."""
    size = 0
    while size <= most:
        message = await receive()
        if message["type"] == "http.disconnect":
            return False
        size += len(message.get("body", b""))
        if not message.get("more_body", False):
            return True
    return False


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


def _is_json(content_type: bytes) -> bool:
    kind = content_type.split(b";", 1)[0].strip().lower()
    return kind == b"application/json" or kind.endswith(b"+json")


def _bad(field: str, detail: str) -> Refusal:
    detail = f"{field or 'body'}: {detail}"
    return Refusal(400, "invalid request", detail, field, "invalid_argument")


def check_json(body: bytes) -> None:
    """Raise ``Refusal`` when ``body`` is JSON the platform must not take."""
    try:
        # Leniently, as a route would: NaN, Infinity and 1e999 come out as floats
        # that are not finite, and the walk names where they are.
        document = json.loads(body)
    except RecursionError:
        raise _bad("", f"nested deeper than {MAX_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError):
        return  # not JSON at all: the route's own parse answers 400
    # Iteratively: a recursive walk is what a deep document is meant to break.
    todo: list[tuple[Any, str, int]] = [(document, "", 0)]
    while todo:
        value, path, depth = todo.pop()
        if depth > MAX_DEPTH:
            raise _bad(path, f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            for key, item in value.items():
                where = f"{path}.{key}" if path else str(key)
                _check_text(key, where)
                todo.append((item, where, depth + 1))
        elif isinstance(value, list):
            todo.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value))
        elif isinstance(value, str):
            _check_text(value, path)
        elif isinstance(value, float) and not math.isfinite(value):
            raise _bad(path, "not a finite number (NaN, Infinity and overflows are refused)")
        elif isinstance(value, int) and not isinstance(value, bool) and not -INT64 <= value < INT64:
            raise _bad(path, "integer out of range (64 bits)")


def _check_text(text: str, path: str) -> None:
    if "\x00" in text:
        raise _bad(path, "contains U+0000 (NUL), which cannot be stored")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _bad(path, "contains a lone UTF-16 surrogate (not valid Unicode)") from None
