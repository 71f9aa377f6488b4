"""The egress injector: the forward proxy every sandbox's HTTP(S) goes through.

It identifies the run by its egress key in ``Proxy-Authorization`` (never the model
key: see ``benchwright_proxy.domain``), applies the
account's host policy (403 and a counted refusal for a blocked host), injects the
account's secrets at the versions pinned when the run was first seen, and streams
responses through unbuffered. mitmproxy is imported when it starts, not here.
"""

from benchwright_proxy.injector.ports import (
    Authenticate,
    Decide,
    InjectionRule,
    Injections,
    Pin,
    RecordRefusals,
    RunIdentity,
    in_thread,
)
from benchwright_proxy.injector.server import EgressInjector, InjectorError

__all__ = [
    "Authenticate",
    "Decide",
    "EgressInjector",
    "InjectionRule",
    "Injections",
    "InjectorError",
    "Pin",
    "RecordRefusals",
    "RunIdentity",
    "in_thread",
]
