"""Cutting an upstream's bytes into events, reading usage on the way."""

import json

from benchwright_proxy.sse import UsageTap, error_event, event, with_usage_requested

CHUNK = event({"choices": [{"index": 0, "delta": {"content": "hi"}}]})
USAGE = event({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}})
DONE = b"data: [DONE]\n\n"


def test_events_pass_whole_however_the_bytes_were_cut() -> None:
    stream = CHUNK + CHUNK + USAGE + DONE
    for size in (1, 2, 7, len(stream)):
        tap = UsageTap(forward_usage_chunk=True)
        out = b"".join(tap.feed(stream[i : i + size]) for i in range(0, len(stream), size))
        assert out + tap.flush() == stream
        assert tap.usage == {"prompt_tokens": 3, "completion_tokens": 1}


def test_the_usage_chunk_the_client_did_not_ask_for_is_kept_from_it() -> None:
    tap = UsageTap(forward_usage_chunk=False)
    assert tap.feed(CHUNK + USAGE + DONE) == CHUNK + DONE
    assert tap.usage["prompt_tokens"] == 3
    # Usage riding on a chunk with choices stays: the client needs the choices.
    both = event({"choices": [{"index": 0, "delta": {}}], "usage": {"prompt_tokens": 9}})
    assert tap.feed(both) == both and tap.usage == {"prompt_tokens": 9}


def test_crlf_framing_and_multi_line_data() -> None:
    tap = UsageTap(forward_usage_chunk=True)
    raw = b'data: {"choices": [],\r\ndata: "usage": {"completion_tokens": 4}}\r\n\r'
    assert tap.feed(raw) == b""  # the last "\r" may be half of "\r\n"
    assert tap.feed(b"\n") == raw + b"\n"
    assert tap.usage == {"completion_tokens": 4}


def test_null_usage_and_unparsable_events_pass_untouched() -> None:
    tap = UsageTap(forward_usage_chunk=False)
    nulls = event({"choices": [], "usage": None})
    odd = b'data: {"usage": not json\n\n'
    assert tap.feed(nulls + odd) == nulls + odd and tap.usage == {}
    assert tap.feed(b"data: tail without end") == b""
    assert tap.flush() == b"data: tail without end"


def test_the_request_asks_for_usage_and_keeps_the_clients_options() -> None:
    body = {"stream": True, "stream_options": {"other": 1}}
    assert with_usage_requested(body)["stream_options"] == {"other": 1, "include_usage": True}
    assert body["stream_options"] == {"other": 1}


def test_the_error_event_is_what_openai_clients_raise_on() -> None:
    raw = error_event(502, "upstream stream broke")
    assert raw.startswith(b"event: error\ndata: ") and raw.endswith(b"\n\n")
    assert json.loads(raw.split(b"data: ", 1)[1])["error"]["message"] == "upstream stream broke"
