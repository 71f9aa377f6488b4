"""The only way out of an isolated sandbox: forwarders to the addresses a command names.

A sandbox has a network namespace of its own, with nothing in it but loopback.
For each address the command is told about (the run's model proxy in
``BW_MODEL_PROXY_URL``, an egress proxy in ``HTTP(S)_PROXY``), two forwarders
make one path out:

* inside, ``runtime/sandbox_init.py`` listens on ``127.0.0.1:<port>`` and relays
  each connection to a unix socket mounted read-only at ``/run/bw/net/``;
* outside, ``HostForwarders`` serves that unix socket and connects to the real
  TCP address.

The command's URLs are rewritten to the inside end (host names resolve to
127.0.0.1 through the sandbox's own ``/etc/hosts``). Nothing else has a route.
"""

import asyncio
import contextlib
import ipaddress
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import SplitResult, urlsplit, urlunsplit

log = logging.getLogger(__name__)

MODEL_URL = "BW_MODEL_PROXY_URL"
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
NO_PROXY_VARS = ("NO_PROXY", "no_proxy")
LOOPBACK = "127.0.0.1"
# Inside ports for targets whose own port is privileged or already taken.
SPARE_PORTS_FROM = 20_000
CONNECT_TIMEOUT_S = 10.0
# A target that refuses connections (the model proxy restarting, say) is tried again
# for this long before the sandbox's connection is dropped: a short outage goes unseen
# by every client in the sandbox, whatever library it uses.
CONNECT_RETRY_S = 30.0
CHUNK = 1 << 16


@dataclass(frozen=True)
class Target:
    """A TCP address on the host's side."""

    host: str
    port: int


@dataclass(frozen=True)
class Forward:
    """One way out: ``127.0.0.1:port`` inside the sandbox leads to ``target``."""

    target: Target
    port: int


@dataclass
class NetworkPlan:
    """The command's environment pointed at the forwarders, and what they need."""

    env: dict[str, str]
    forwards: list[Forward] = field(default_factory=list)
    # Host names that resolve to 127.0.0.1 inside the sandbox.
    names: set[str] = field(default_factory=set)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class _Planner:
    def __init__(self) -> None:
        self.forwards: dict[Target, Forward] = {}
        self.names: set[str] = set()

    def _inside_port(self, port: int) -> int:
        taken = {f.port for f in self.forwards.values()}
        if port >= 1024 and port not in taken:
            return port
        spare = SPARE_PORTS_FROM
        while spare in taken:
            spare += 1
        return spare

    def route(self, url: str) -> str:
        """``url`` rewritten to its forwarder; a value that is no http(s) URL stays as is."""
        try:
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return url
        host = parts.hostname
        if parts.scheme not in ("http", "https") or not host:
            return url
        target = Target(host, port)
        forward = self.forwards.get(target)
        if forward is None:
            forward = self.forwards[target] = Forward(target, self._inside_port(port))
        if _is_ip(host):
            inside_host = LOOPBACK
        else:
            inside_host = host
            self.names.add(host)
        return _with_netloc(parts, inside_host, forward.port)


def _with_netloc(parts: SplitResult, host: str, port: int) -> str:
    userinfo, at, _ = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{userinfo}{at}{host}:{port}"))


def plan_network(env: Mapping[str, str], egress_proxy_url: str | None) -> NetworkPlan:
    """Where the command's URLs lead inside the sandbox.

    ``egress_proxy_url`` becomes ``HTTP(S)_PROXY`` unless the command names its
    own proxy; the model proxy is then kept off it through ``NO_PROXY``.
    """
    out = dict(env)
    if egress_proxy_url and not any(out.get(var) for var in PROXY_VARS):
        out.update(dict.fromkeys(PROXY_VARS, egress_proxy_url))
    planner = _Planner()
    if out.get(MODEL_URL):
        out[MODEL_URL] = planner.route(out[MODEL_URL])
    proxied = False
    for var in PROXY_VARS:
        if out.get(var):
            out[var] = planner.route(out[var])
            proxied = True
    if proxied:
        direct = ["localhost", LOOPBACK]
        if out.get(MODEL_URL):
            model_host = urlsplit(out[MODEL_URL]).hostname
            if model_host and model_host not in direct:
                direct.append(model_host)
        given = [h for var in NO_PROXY_VARS for h in out.get(var, "").split(",") if h]
        value = ",".join(dict.fromkeys([*given, *direct]))
        out.update(dict.fromkeys(NO_PROXY_VARS, value))
    return NetworkPlan(env=out, forwards=list(planner.forwards.values()), names=planner.names)


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        writer.close()


async def _connect(target: Target) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Connect to ``target``, trying again while it refuses, for up to ``CONNECT_RETRY_S``."""
    deadline = asyncio.get_running_loop().time() + CONNECT_RETRY_S
    pause = 0.1
    while True:
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(target.host, target.port), CONNECT_TIMEOUT_S
            )
        except ConnectionRefusedError:
            if asyncio.get_running_loop().time() + pause > deadline:
                raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, 1.0)


@dataclass
class _SandboxNet:
    sockets: dict[Target, str] = field(default_factory=dict)
    servers: list[asyncio.Server] = field(default_factory=list)
    connections: set[asyncio.Task[None]] = field(default_factory=set)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class HostForwarders:
    """The host's end: a unix socket per (sandbox, target), relaying to the target."""

    def __init__(self) -> None:
        self._nets: dict[str, _SandboxNet] = {}

    async def socket_for(self, sandbox_id: str, net_dir: Path, target: Target) -> str:
        """The file name (in ``net_dir``) of the socket that leads to ``target``."""
        net = self._nets.setdefault(sandbox_id, _SandboxNet())
        async with net.lock:
            name = net.sockets.get(target)
            if name is not None and (net_dir / name).exists():
                return name
            name = f"{len(net.servers)}.sock"
            path = net_dir / name
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

            async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                # Cut by ``drop``: end quietly (asyncio's stream server logs a cancelled
                # handler as an error on Python 3.12.1).
                with contextlib.suppress(asyncio.CancelledError):
                    await self._relay(net, target, reader, writer)

            server = await asyncio.start_unix_server(handle, path=str(path))
            # The sandbox's uid may not be ours (a root service runs sandboxes as others).
            os.chmod(path, 0o666)
            net.servers.append(server)
            net.sockets[target] = name
            return name

    async def _relay(
        self,
        net: _SandboxNet,
        target: Target,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        net.connections.add(task)
        up_writer = None
        try:
            up_reader, up_writer = await _connect(target)
            await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
        except (OSError, TimeoutError) as exc:
            log.info("sandbox forwarder to %s:%s: %s", target.host, target.port, exc)
        finally:
            net.connections.discard(task)
            for w in (writer, up_writer):
                if w is not None:
                    w.close()

    async def drop(self, sandbox_id: str) -> None:
        """Stop the sandbox's forwarders and cut their connections."""
        net = self._nets.pop(sandbox_id, None)
        if net is None:
            return
        for server in net.servers:
            server.close()
        for task in list(net.connections):
            task.cancel()
        await asyncio.gather(*net.connections, return_exceptions=True)

    async def close(self) -> None:
        for sandbox_id in list(self._nets):
            await self.drop(sandbox_id)
