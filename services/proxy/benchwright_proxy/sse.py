"""Server-Sent Events as OpenAI streams them: framing, usage, and the error event.

A streamed chat completion is a series of ``data: {chunk}`` events ending with
``data: [DONE]``. The proxy asks every upstream for usage in the stream
(``stream_options.include_usage``), which adds one last chunk with ``usage``
and no ``choices``; :class:`UsageTap` reads it on the way through and keeps it
from a client that did not ask for it, so the proxy's request stays invisible.
"""

import json
import re
from typing import Any

DONE = b"data: [DONE]\n\n"
# Two line ends in a row close an event; "\r" alone is a line end only when no "\n" follows.
_EVENT_END = re.compile(rb"(?:\r\n|\r(?!\n)|\n){2}")


def event(chunk: dict[str, Any]) -> bytes:
    """One ``data:`` event carrying ``chunk`` as compact JSON."""
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


def error_event(status: int, message: str, kind: str = "upstream_error") -> bytes:
    """The event that ends a stream which failed after its first byte.

    OpenAI's client libraries raise an ``APIError`` with this message on an
    event whose data carries ``error``; the ``error`` event name tells other
    SSE readers apart from a chunk.
    """
    body = {"error": {"message": message, "type": kind, "code": status}}
    return b"event: error\ndata: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def with_usage_requested(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as a streaming request that also asks for usage in the last chunk."""
    options = body.get("stream_options")
    options = dict(options) if isinstance(options, dict) else {}
    options["include_usage"] = True
    return {**body, "stream": True, "stream_options": options}


def client_wants_usage(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and bool(options.get("include_usage"))


def _data(raw_event: bytes) -> bytes:
    lines = raw_event.splitlines()
    return b"\n".join(
        line[6:] if line.startswith(b"data: ") else line[5:]
        for line in lines
        if line.startswith(b"data:")
    )


class UsageTap:
    """Cuts upstream bytes into whole events, noting usage as it passes.

    ``feed`` returns the complete events received so far (bytes as they came,
    but for the usage-only chunk when the client did not ask for usage);
    an event split across reads waits for its end. ``usage`` is the last
    usage the upstream reported: empty when it reported none.
    """

    def __init__(self, *, forward_usage_chunk: bool) -> None:
        self.forward_usage_chunk = forward_usage_chunk
        self.usage: dict[str, Any] = {}
        # The model the upstream says answered, from the chunk carrying usage.
        self.model: str | None = None
        self._buffer = b""

    def feed(self, data: bytes) -> bytes:
        buffer = self._buffer + data if self._buffer else data
        # A trailing "\r" may be the first half of "\r\n": wait for the next read.
        searchable = len(buffer) - 1 if buffer.endswith(b"\r") else len(buffer)
        out: list[bytes] = []
        start = 0
        while match := _EVENT_END.search(buffer, start, searchable):
            out.append(self._pass(buffer[start : match.end()]))
            start = match.end()
        self._buffer = buffer[start:]
        return b"".join(out)

    def flush(self) -> bytes:
        """What is left when the upstream closed: an unterminated last event, passed on."""
        rest, self._buffer = self._buffer, b""
        return self._pass(rest) if rest.strip() else b""

    def _pass(self, raw_event: bytes) -> bytes:
        if b'"usage"' not in raw_event:
            return raw_event
        try:
            chunk = json.loads(_data(raw_event))
        except ValueError:
            return raw_event
        if not isinstance(chunk, dict):
            return raw_event
        usage = chunk.get("usage")
        if isinstance(usage, dict) and usage:
            self.usage = usage
            model = chunk.get("model")
            self.model = model if isinstance(model, str) else self.model
            if not self.forward_usage_chunk and not chunk.get("choices"):
                return b""  # the chunk we asked for on the proxy's behalf
        return raw_event
