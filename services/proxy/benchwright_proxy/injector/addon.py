"""The mitmproxy addon: who is asking, may they reach this host, which secrets go with it.

Which secrets apply is decided on ``flow.request.host`` alone: mitmproxy
connects to that host (the CONNECT target inside a tunnel, the request URL
otherwise), so it is where a secret would really go. Neither the client's Host
header nor ``pretty_host`` (which reads it) can point a rule elsewhere.

Two more checks keep a secret where it belongs. A request that would carry a
secret must name the same host in its Host header (HTTP/2: ``:authority``) and
TLS server name as its destination: on a shared CDN edge those, not the address,
pick the site, so a mismatch could hand the secret to another tenant (domain
fronting); it is answered 421. Host policy is applied to each of those names.
And no connection is made to an internal address (see ``guard``).

The hooks fail closed: mitmproxy logs and swallows an exception raised by an
addon and then forwards the flow as it is, so each hook catches everything
itself and answers 502 instead of letting the request through untreated.
"""

import asyncio
import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from mitmproxy import connection, http
from mitmproxy.net.http.url import parse_authority
from mitmproxy.proxy.server_hooks import ServerConnectionHookData

from benchwright_proxy.injector.guard import InternalGuard
from benchwright_proxy.injector.ports import Authenticate, Decide, Injections, Pin, RunIdentity
from benchwright_proxy.injector.refusals import RefusalBatcher
from benchwright_proxy.injector.rules import (
    InjectionRuleError,
    normalize_host,
    place,
    proxy_key,
    refusal_body,
)

log = logging.getLogger(__name__)

PROXY_AUTH = "Proxy-Authorization"
REALM = "benchwright"
# Set on flows the injector answered itself (407, 403, 421, 502): nothing to stream.
ANSWERED = "benchwright_answered"
# How long a refused internal connection waits to be torn down with its client.
DROP_WAIT_S = 5.0

# ``drop(client_id, server)``: close the server socket and the client's connection.
Drop = Callable[[str, connection.Server], None]


@dataclass(frozen=True)
class _Connection:
    who: RunIdentity
    key: str
    # Authenticated by CONNECT: every request inside the tunnel is this run's.
    tunnel: bool


class EgressAddon:
    def __init__(
        self,
        *,
        authenticate: Authenticate,
        decide: Decide,
        injections: Injections,
        pin: Pin,
        refusals: RefusalBatcher,
        guard: InternalGuard,
        drop: Drop,
    ) -> None:
        self._authenticate = authenticate
        self._decide = decide
        self._injections = injections
        self._pin = pin
        self._refusals = refusals
        self._guard = guard
        self._drop = drop
        # By client connection id; dropped when the client disconnects.
        self._connections: dict[str, _Connection] = {}
        # Each run's pinned secret versions, fetched once (concurrent first requests share it).
        self._pins: dict[str, asyncio.Task[dict[str, int]]] = {}

    # -- mitmproxy hooks ------------------------------------------------------------------
    async def http_connect(self, flow: http.HTTPFlow) -> None:
        """A CONNECT: authenticate the connection and refuse a blocked host before any tunnel."""
        try:
            key = proxy_key(flow.request.headers.get(PROXY_AUTH))
            who = await self._identify(key)
            if who is None or key is None:
                self._answer(flow, _auth_required())
                return
            self._connections[flow.client_conn.id] = _Connection(who, key, tunnel=True)
            host = normalize_host(flow.request.host)
            if await self._decide(who.account, host, who.run_id) != "allow":
                self._refuse(flow, who, host)
        except Exception as exc:
            self._fail(flow, exc)

    async def requestheaders(self, flow: http.HTTPFlow) -> None:
        """A request's headers: identify its run, apply host policy, inject the run's secrets."""
        try:
            who = await self._request_identity(flow)
            if PROXY_AUTH in flow.request.headers:
                del flow.request.headers[PROXY_AUTH]
            if who is None:
                self._answer(flow, _auth_required())
                return
            host = normalize_host(flow.request.host)
            named = _named_hosts(flow)
            for each in dict.fromkeys([host, *named]):
                if await self._decide(who.account, each, who.run_id) != "allow":
                    self._refuse(flow, who, each)
                    return
            pinned = await self._pinned(who)
            injections = await self._injections(who.account, host, pinned)
            if injections and any(n != host for n in named):
                self._answer(flow, _misdirected(host))
                return
            for rule, value in injections:
                where, name, text = place(rule, value)
                if where == "header":
                    flow.request.headers[name] = text
                else:
                    flow.request.query[name] = text
            # The body goes upstream as it arrives, not after it has all been read.
            flow.request.stream = True
        except InjectionRuleError as exc:
            log.warning("secret rule for %s not applied: %s", flow.request.host, exc)
            self._answer(flow, _text(502, f"Benchwright egress: a secret rule is invalid: {exc}\n"))
        except Exception as exc:
            self._fail(flow, exc)

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        """Stream every upstream response: a streamed completion must not wait for its end."""
        if flow.response is not None and not flow.metadata.get(ANSWERED):
            flow.response.stream = True

    def client_disconnected(self, client: connection.Client) -> None:
        self._connections.pop(client.id, None)

    def server_connect(self, data: ServerConnectionHookData) -> None:
        """Before connecting: refuse an internal IP literal or ``localhost`` outright."""
        if data.server.address is None:
            return
        host, port = data.server.address[0], data.server.address[1]
        if self._guard.refuses_name(host, port):
            log.warning("refused a connection to internal address %s:%s", host, port)
            data.server.error = (
                f"Benchwright egress: {host} is internal; sandboxes may not reach it"
            )

    async def server_connected(self, data: ServerConnectionHookData) -> None:
        """Connected, nothing sent yet: if the peer is internal after all, drop it all."""
        peer = data.server.peername
        if peer is None or self._guard.permits(peer[0], peer[1]):
            return
        address = data.server.address
        log.warning("dropped a connection to %s: it resolved to an internal address", address)
        self._drop(data.client.id, data.server)
        # The client's teardown cancels this task before the layers hear of the connection.
        await asyncio.sleep(DROP_WAIT_S)
        raise asyncio.CancelledError

    # -- runs -----------------------------------------------------------------------------
    def forget_run(self, run_id: str) -> None:
        """Drop a finished run: its pin, and its open connections' identity (they get 407)."""
        task = self._pins.pop(run_id, None)
        if task is not None and not task.done():
            task.cancel()
        for conn_id in [c for c, v in self._connections.items() if v.who.run_id == run_id]:
            del self._connections[conn_id]

    def pinned_runs(self) -> list[str]:
        return list(self._pins)

    async def _identify(self, key: str | None) -> RunIdentity | None:
        if key is None:
            return None
        found = await self._authenticate(key)
        if found is None:
            return None
        who = RunIdentity(*found)
        self._pin_task(who)  # pinned when first seen, not when first injected
        return who

    async def _request_identity(self, flow: http.HTTPFlow) -> RunIdentity | None:
        known = self._connections.get(flow.client_conn.id)
        if known is not None and known.tunnel:
            # Inside a tunnel the CONNECT decided; a Proxy-Authorization here is just stripped.
            return known.who
        header = flow.request.headers.get_all(PROXY_AUTH)
        if not header:
            return known.who if known is not None else None
        key = proxy_key(header[0]) if len(header) == 1 else None
        if known is not None and key == known.key:
            return known.who
        who = await self._identify(key)
        if who is not None and key is not None and known is None:
            self._connections[flow.client_conn.id] = _Connection(who, key, tunnel=False)
        return who

    def _pin_task(self, who: RunIdentity) -> asyncio.Task[dict[str, int]]:
        task = self._pins.get(who.run_id)
        if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):
            task = asyncio.create_task(self._fetch_pin(who.account), name=f"pin {who.run_id}")
            self._pins[who.run_id] = task
        return task

    async def _fetch_pin(self, account: str) -> dict[str, int]:
        return await self._pin(account)

    async def _pinned(self, who: RunIdentity) -> dict[str, int]:
        return await asyncio.shield(self._pin_task(who))

    # -- answers --------------------------------------------------------------------------
    def _refuse(self, flow: http.HTTPFlow, who: RunIdentity, host: str) -> None:
        self._refusals.add(who.account, who.run_id, host)
        response = _text(403, refusal_body(host))
        response.headers["X-Benchwright-Refused"] = "host-policy"
        self._answer(flow, response)

    def _fail(self, flow: http.HTTPFlow, exc: Exception) -> None:
        # The type and the frames, never the message: it could quote a header or a value.
        frames = "".join(traceback.format_tb(exc.__traceback__))
        log.error(
            "egress injector failed on a request to %s (%s); answered 502\n%s",
            flow.request.host,
            type(exc).__name__,
            frames,
        )
        self._answer(flow, _text(502, "Benchwright egress: the request was not forwarded.\n"))

    @staticmethod
    def _answer(flow: http.HTTPFlow, response: http.Response) -> None:
        flow.metadata[ANSWERED] = True
        flow.request.stream = False
        flow.response = response


def _text(status: int, body: str) -> http.Response:
    return http.Response.make(status, body, {"Content-Type": "text/plain; charset=utf-8"})


def _named_hosts(flow: http.HTTPFlow) -> list[str]:
    """The hosts a request names besides its destination: Host/:authority, TLS server name."""
    names = []
    if authority := flow.request.host_header:
        try:
            names.append(normalize_host(parse_authority(authority, check=True)[0]))
        except ValueError:
            names.append(normalize_host(authority))
    if sni := flow.client_conn.sni:
        names.append(normalize_host(sni))
    return names


def _misdirected(host: str) -> http.Response:
    return _text(
        421,
        f"Benchwright egress: this request carries a secret for {host}, but its Host header "
        f"or TLS server name names another host; it was not sent.\n",
    )


def _auth_required() -> http.Response:
    response = _text(407, "Benchwright egress: proxy authentication with the run's key required.\n")
    response.headers["Proxy-Authenticate"] = f'Basic realm="{REALM}"'
    return response
