"""The egress injector: a mitmproxy forward proxy that sandboxes use as HTTP(S)_PROXY.

It runs on the proxy service's event loop. ``start()`` drives mitmproxy's
lifecycle itself (servers up, ``running``; at stop, servers down, ``done``)
instead of awaiting ``Master.run()``, because ``run()`` swaps the whole loop's
task factory (to eager tasks) and exception handler for as long as it runs, and
this loop is shared with NATS, the model endpoint and, embedded, every service.

mitmproxy keeps its master in module globals (``mitmproxy.ctx``), so one
injector runs per process at a time.
"""

import asyncio
import contextlib
import importlib
import logging
import os
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar
from urllib.parse import quote

import certifi

from benchwright_proxy.injector.guard import InternalGuard
from benchwright_proxy.injector.ports import (
    Authenticate,
    Decide,
    Injections,
    Pin,
    RecordRefusals,
)
from benchwright_proxy.injector.refusals import RefusalBatcher

if TYPE_CHECKING:
    from mitmproxy import connection
    from mitmproxy.addons.proxyserver import Proxyserver
    from mitmproxy.master import Master

    from benchwright_proxy.injector.addon import EgressAddon

log = logging.getLogger(__name__)

# mitmproxy's names inside the confdir: the CA certificate alone (for sandboxes to
# trust) and the CA with its private key (``mitmproxy-ca.pem``, ``mitmproxy-ca.p12``)
# which never leave it.
CA_BASENAME = "mitmproxy"
CA_CERT_FILE = f"{CA_BASENAME}-ca-cert.pem"
UPSTREAM_BUNDLE = "upstream-trust.pem"
# How long stop() waits for open connections to wind down after cancelling them.
STOP_GRACE_S = 2.0


class InjectorError(Exception):
    """The injector could not start (a port in use, a bad confdir) or is misused."""


class EgressInjector:
    """An HTTP(S) forward proxy applying each run's host policy and secret rules.

    Sandboxes reach it as ``http://run:<proxy key>@host:port`` (see
    :meth:`proxy_url`) and trust :attr:`ca_cert_path` for HTTPS. All ports are
    async callables (see :mod:`benchwright_proxy.injector.ports`).
    """

    _running: ClassVar["EgressInjector | None"] = None

    def __init__(
        self,
        *,
        confdir: Path,
        authenticate: Authenticate,
        decide: Decide,
        injections: Injections,
        pin: Pin,
        record_refusals: RecordRefusals,
        listen_host: str = "127.0.0.1",
        listen_port: int = 0,
        upstream_ca: Path | None = None,
        refusal_interval: float = 0.5,
        allow_public_clients: bool = False,
        internal_allow: Collection[tuple[str, int]] = (),
        allow_internal: bool = False,
    ) -> None:
        self.confdir = Path(confdir)
        self.listen_host = listen_host
        self.listen_port = listen_port
        # An extra CA to trust upstream, beside the public ones (certifi's bundle).
        self.upstream_ca = upstream_ca
        # mitmproxy refuses clients from public addresses unless told otherwise; a
        # remote sandbox (e2b) that reaches the injector over the internet needs this.
        self.allow_public_clients = allow_public_clients
        # Internal addresses (loopback, private, link-local) are refused except these
        # (ip, port) pairs, e.g. the model endpoint; ``allow_internal`` lifts it (tests, dev).
        self.guard = InternalGuard(allow_all=allow_internal, allow=internal_allow)
        self.refusals = RefusalBatcher(record_refusals, interval=refusal_interval)
        self._ports = (authenticate, decide, injections, pin)
        self._master: Master | None = None
        self._addon: EgressAddon | None = None
        self._port: int | None = None

    # -- what sandboxes are given ---------------------------------------------------------
    @property
    def ca_cert_path(self) -> Path:
        """The CA certificate (no key) for sandboxes: SSL_CERT_FILE, REQUESTS_CA_BUNDLE.

        Mount this file, never the directory: ``mitmproxy-ca.pem`` beside it holds the key.
        """
        return self.confdir / CA_CERT_FILE

    @property
    def port(self) -> int:
        if self._port is None:
            raise InjectorError("the injector is not started")
        return self._port

    @property
    def url(self) -> str:
        """``http://host:port`` of the listening proxy (without credentials)."""
        return f"http://{_url_host(self.listen_host)}:{self.port}"

    def proxy_url(self, key: str, host: str | None = None) -> str:
        """The HTTP(S)_PROXY value for a run: its proxy key as the password.

        ``host`` is the address the sandbox reaches the injector at, when that is not
        the listening address (a namespace forwarder, a public name).
        """
        where = _url_host(host or self.listen_host)
        return f"http://run:{quote(key, safe='')}@{where}:{self.port}"

    # -- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        """Make the CA if there is none, listen, and begin flushing refusals."""
        if EgressInjector._running is not None:
            raise InjectorError("an egress injector is already running in this process")
        EgressInjector._running = self
        try:
            await self._start()
        except BaseException:
            await self._teardown()
            raise

    async def stop(self) -> None:
        """Stop listening, close open connections, write the last refusals."""
        if EgressInjector._running is self:
            await self._teardown()

    def forget_run(self, run_id: str) -> None:
        """A run ended: drop its pinned versions and cut its open connections off (407)."""
        if self._addon is not None:
            self._addon.forget_run(run_id)

    async def _start(self) -> None:
        # mitmproxy's import (~0.5 s) and the CA's RSA key generation stay off the loop.
        bundle = await asyncio.to_thread(self._prepare)
        from mitmproxy import options
        from mitmproxy.addons import block, core, disable_h2c, next_layer, proxyserver, tlsconfig
        from mitmproxy.master import Master

        from benchwright_proxy.injector.addon import EgressAddon

        authenticate, decide, injections, pin = self._ports
        self._addon = EgressAddon(
            authenticate=authenticate,
            decide=decide,
            injections=injections,
            pin=pin,
            refusals=self.refusals,
            guard=self.guard,
            drop=self._drop,
        )
        opts = options.Options(
            listen_host=self.listen_host,
            listen_port=self.listen_port,
            confdir=str(self.confdir),
            mode=["regular"],
            ssl_insecure=False,
        )
        # mitmproxy says "client connect", "server disconnect", "Streaming response from
        # ..." at INFO for every connection and request; keep that out of the service's
        # log unless someone asked for the ``mitmproxy`` logger's level explicitly.
        chatter = logging.getLogger("mitmproxy")
        if chatter.level == logging.NOTSET:
            chatter.setLevel(logging.WARNING)
        master = Master(opts, event_loop=asyncio.get_running_loop())
        self._master = master
        _quiet_legacy_log_events(master)
        # Only what a forward proxy needs: no script loader, no flow saving, no
        # onboarding app, no replay, no mitmproxy proxyauth (the addon does its own).
        master.addons.add(  # type: ignore[no-untyped-call]
            core.Core(),
            block.Block(),
            disable_h2c.DisableH2C(),
            proxyserver.Proxyserver(),  # type: ignore[no-untyped-call]
            next_layer.NextLayer(),
            tlsconfig.TlsConfig(),
            self._addon,
        )
        opts.update(  # type: ignore[no-untyped-call]
            block_global=not self.allow_public_clients,
            ssl_verify_upstream_trusted_ca=str(bundle) if bundle else None,
        )
        server = self._proxyserver()
        if not await server.setup_servers():
            reasons = "; ".join(str(s.last_exception) for s in server.servers if s.last_exception)
            raise InjectorError(f"the egress injector could not listen: {reasons or 'unknown'}")
        await master.running()
        addrs = server.listen_addrs()
        if not addrs:
            raise InjectorError("the egress injector is not listening")
        self._port = int(addrs[0][1])
        self.refusals.start()
        log.info("egress injector listening on %s", self.url)

    def _prepare(self) -> Path | None:
        """Import mitmproxy, make the CA once (key 0600 in a 0700 dir), build the upstream trust."""
        importlib.import_module("mitmproxy.master")
        importlib.import_module("mitmproxy.addons")
        from mitmproxy import certs

        self.confdir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.confdir, 0o700)
        certs.CertStore.from_store(self.confdir, CA_BASENAME, key_size=2048)
        if self.upstream_ca is None:
            return None
        bundle = self.confdir / UPSTREAM_BUNDLE
        public = Path(certifi.where()).read_bytes()
        bundle.write_bytes(public.rstrip(b"\n") + b"\n" + self.upstream_ca.read_bytes())
        return bundle

    def _drop(self, client_id: str, server: "connection.Server") -> None:
        """Close ``server``'s socket and the whole client connection it was opened for."""
        if self._master is None:
            return
        handler = _proxyserver(self._master).connections.get(client_id)
        if handler is None:
            return
        io = handler.transports.get(server)
        if io is not None and io.writer is not None:
            io.writer.close()
        handler.close_connection(handler.client)

    def _proxyserver(self) -> "Proxyserver":
        assert self._master is not None
        return _proxyserver(self._master)

    async def _teardown(self) -> None:
        try:
            master, self._master = self._master, None
            if master is not None:
                server = _proxyserver(master)
                if server is not None:
                    await server.servers.update([])
                    await _close_connections(server)
                await master.done()
            if self._addon is not None:
                for run_id in self._addon.pinned_runs():
                    self._addon.forget_run(run_id)
            await self.refusals.stop()
        finally:
            self._port = None
            if EgressInjector._running is self:
                EgressInjector._running = None


def _proxyserver(master: "Master") -> "Proxyserver":
    server: Proxyserver = master.addons.get("proxyserver")  # type: ignore[no-untyped-call]
    return server


async def _close_connections(server: "Proxyserver") -> None:
    """Cancel each client connection's handler; mitmproxy then closes its server side."""
    handlers = []
    for handler in list(server.connections.values()):
        io = handler.transports.get(handler.client)
        if io is not None and io.handler is not None:
            io.handler.cancel("egress injector stopping")
            handlers.append(io.handler)
    if handlers:
        await asyncio.wait(handlers, timeout=STOP_GRACE_S)
    # Each connection then runs its disconnect hooks and deregisters itself; mitmproxy
    # exposes no task to await for that, so give it a bounded moment.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STOP_GRACE_S
    while server.connections and loop.time() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.005)
    if server.connections:
        log.warning("%d egress connection(s) still open at stop", len(server.connections))


def _quiet_legacy_log_events(master: "Master") -> None:
    # mitmproxy's Master puts a handler on the root logger that re-posts every log
    # record of the process to the loop as a deprecated ``add_log`` event; nothing
    # here listens to it, and in one process with every service it is pure cost.
    legacy = getattr(master, "_legacy_log_events", None)
    if legacy is not None:
        with contextlib.suppress(Exception):
            legacy.uninstall()


def _url_host(host: str) -> str:
    if host in ("", "0.0.0.0", "::"):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host
