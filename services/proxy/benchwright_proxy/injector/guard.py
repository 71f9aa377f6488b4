"""Where the injector never connects: the platform's own loopback and private networks.

The injector runs beside NATS, the gateway and the model endpoint; a sandbox
whose only way out is the injector must not reach them through it, whatever
the account's host policy says (a fresh account allows every host). An
address counts as internal when it is not globally routable: loopback,
RFC 1918, link-local (cloud metadata at 169.254.169.254), CGNAT, and the like.
The check is made on the address actually connected to, so a name that
resolves differently the second time (DNS rebinding) gains nothing.
"""

import ipaddress
from collections.abc import Collection


def is_internal(ip: str) -> bool:
    """True for an address that is not globally routable (or that does not parse)."""
    try:
        address = ipaddress.ip_address(ip.split("%", 1)[0])
    except ValueError:
        return True
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return not address.is_global


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


class InternalGuard:
    """Refuses internal destinations except the (ip, port) pairs the platform names."""

    def __init__(self, allow_all: bool = False, allow: Collection[tuple[str, int]] = ()) -> None:
        self.allow_all = allow_all
        self.allow = frozenset((ipaddress.ip_address(ip).compressed, port) for ip, port in allow)

    def permits(self, ip: str, port: int) -> bool:
        """May the injector talk to ``ip:port`` (an address it is connected to)?"""
        if self.allow_all or not is_internal(ip):
            return True
        try:
            key = (ipaddress.ip_address(ip.split("%", 1)[0]).compressed, port)
        except ValueError:
            return False
        return key in self.allow

    def refuses_name(self, host: str, port: int) -> bool:
        """Known internal before any DNS: an internal IP literal or a ``localhost`` name."""
        name = host.lower().rstrip(".")
        if _is_ip(name):
            return not self.permits(name, port)
        if name == "localhost" or name.endswith(".localhost"):
            return not (self.permits("127.0.0.1", port) or self.permits("::1", port))
        return False
