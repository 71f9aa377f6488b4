"""Request building and response parsing shared by the sync and async resources.

Each resource method turns its arguments into a :class:`~benchwright._http.Call`
here; the sync and async resources only send it (``http.send(call)``), so the two
clients build every request the same way. ``base`` holds what every resource
shares, ``runs`` the run calls, ``account`` secrets, host policy, tokens and login.
"""

from .account import AccountCalls, HostPolicyCalls, SecretCalls, TokenCalls
from .base import (
    Page,
    as_bytes,
    as_text,
    csv_param,
    follow_pages,
    follow_pages_async,
    key_header,
    new_idempotency_key,
    parse,
    parse_dict,
    parse_list,
    parser,
    path_id,
    plain,
    present,
    types_param,
)
from .runs import (
    RANGE_FILTERS,
    RUNS,
    RunCalls,
    StreamCursor,
    WaitClock,
    list_params,
    parse_sse_event,
    run_path,
)

__all__ = [
    "RANGE_FILTERS",
    "RUNS",
    "AccountCalls",
    "HostPolicyCalls",
    "Page",
    "RunCalls",
    "SecretCalls",
    "StreamCursor",
    "TokenCalls",
    "WaitClock",
    "as_bytes",
    "as_text",
    "csv_param",
    "follow_pages",
    "follow_pages_async",
    "key_header",
    "list_params",
    "new_idempotency_key",
    "parse",
    "parse_dict",
    "parse_list",
    "parse_sse_event",
    "parser",
    "path_id",
    "plain",
    "present",
    "run_path",
    "types_param",
]
