"""Helpers for the egress injector's tests: echo upstreams on loopback, TLS material, a platform.

No tests here; ``test_injector*.py`` import from it.
"""

import asyncio
import base64
import contextlib
import datetime
import ipaddress
import ssl
import threading
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from benchwright_proxy.application import ProxyApplication
from benchwright_proxy.injector import EgressInjector
from benchwright_proxy.injector.wiring import ServicePorts
from benchwright_proxy.vault.application import VaultApplication
from benchwright_proxy.vault.crypto import VaultSealer
from benchwright_shared.contracts import SutRef
from benchwright_shared.contracts.vault import HostRule, PutSecret, SecretRule, UpdateHostPolicy
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore, eventsourcing_env

STREAM_CHUNKS = 4
STREAM_GAP_S = 0.25


class Upstream:
    """An echo server on 127.0.0.1 in its own thread: ``/echo`` returns the request's
    headers and query; ``/stream`` sends chunks with pauses between them."""

    def __init__(self, certfile: Path | None = None, keyfile: Path | None = None) -> None:
        self.certfile, self.keyfile = certfile, keyfile
        self.seen: list[list[tuple[str, str]]] = []
        self.chunk_sent_at: list[float] = []
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.app = Starlette(routes=[Route("/echo", self._echo), Route("/stream", self._stream)])

    @property
    def scheme(self) -> str:
        return "https" if self.certfile else "http"

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    async def _echo(self, request: Request) -> Response:
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.scope["headers"]]
        self.seen.append(headers)
        return JSONResponse({"headers": headers, "query": list(request.query_params.multi_items())})

    async def _stream(self, request: Request) -> Response:
        self.seen.append([])
        self.chunk_sent_at.clear()

        async def chunks() -> AsyncIterator[bytes]:
            for i in range(STREAM_CHUNKS):
                if i:
                    await asyncio.sleep(STREAM_GAP_S)
                self.chunk_sent_at.append(time.monotonic())
                yield f"data: chunk {i}\n\n".encode()

        return StreamingResponse(chunks(), media_type="text/event-stream")

    def start(self) -> "Upstream":
        config = uvicorn.Config(
            self.app,
            host="127.0.0.1",
            port=0,
            log_level="warning",
            access_log=False,
            lifespan="off",
            ssl_certfile=str(self.certfile) if self.certfile else None,
            ssl_keyfile=str(self.keyfile) if self.keyfile else None,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        while not self._server.started:
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        if self._server:
            self._server.should_exit = True
        if self._thread:
            self._thread.join(10)


def make_tls(directory: Path) -> tuple[Path, Path, Path]:
    """A private CA and a certificate it signed for 127.0.0.1 and localhost: (ca, cert, key)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "benchwright test upstream CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    ca_path, cert_path, key_path = (directory / n for n in ("ca.pem", "cert.pem", "key.pem"))
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca_path, cert_path, key_path


class Platform:
    """The proxy's real stores (run bindings, vault) and the injector's ports over them."""

    def __init__(self, data_dir: Path) -> None:
        settings = Settings(data_dir=data_dir, nats_url=None, database_url=None)
        self.bindings = ProxyApplication(env=eventsourcing_env(settings, "proxy"))
        self.bindings_store = BlockingStore("test-proxy")
        self.vault = VaultApplication(
            VaultSealer.from_config(None, settings.service_dir("proxy")),
            env=eventsourcing_env(settings, "proxy", part="vault"),
        )
        self.vault_store = BlockingStore("test-vault")
        self.ports = ServicePorts(self._check_key, self.vault, self.vault_store)
        self.recorded: list[tuple[str, dict[tuple[str | None, str], int]]] = []
        # Each run's model key: it opens the model API, never the injector.
        self.model_keys: dict[str, str] = {}
        self.pins: list[str] = []

    async def _check_key(self, key: str) -> Any:
        return await self.bindings_store.run(self.bindings.authenticate_egress, key)

    def run(self, account: str = "acct") -> tuple[str, str]:
        """A new run bound for ``account``: (run_id, its egress key)."""
        run_id = str(uuid.uuid4())
        sut = SutRef(model="fake", provider="openai_compatible", api_base="http://model.invalid:9")
        binding, self.model_keys[run_id] = self.bindings.attach(run_id, account, sut)
        return run_id, binding.egress_key

    def put(self, name: str, value: str, rule: SecretRule, account: str = "acct") -> None:
        self.vault.put(PutSecret(account=account, name=name, value=value, rules=[rule]))

    def block(self, pattern: str, account: str = "acct") -> None:
        rule = HostRule.model_validate({"pattern": pattern, "action": "block"})
        self.vault.update_host_policy(UpdateHostPolicy(account=account, upsert=[rule]))

    def injector(self, confdir: Path, **options: Any) -> EgressInjector:
        async def pin(account: str) -> dict[str, int]:
            self.pins.append(account)
            return await self.ports.pin(account)

        async def record(account: str, refusals: dict[tuple[str | None, str], int]) -> None:
            self.recorded.append((account, refusals))
            await self.ports.record_refusals(account, refusals)

        options.setdefault("allow_internal", True)  # the upstreams here are on loopback
        return EgressInjector(
            confdir=confdir,
            authenticate=self.ports.authenticate,
            decide=self.ports.decide,
            injections=self.ports.injections,
            pin=pin,
            record_refusals=record,
            **options,
        )

    def close(self) -> None:
        self.bindings_store.close()
        self.vault_store.close()
        self.bindings.close()
        self.vault.close()


def client(injector: EgressInjector, key: str | None, **options: Any) -> httpx.AsyncClient:
    """A client using the injector as its proxy (with ``key`` as the password), trusting its CA."""
    proxy = injector.proxy_url(key) if key is not None else injector.url
    verify = ssl.create_default_context(cafile=str(injector.ca_cert_path))
    return httpx.AsyncClient(proxy=proxy, verify=verify, trust_env=False, timeout=10, **options)


@contextlib.asynccontextmanager
async def running(injector: EgressInjector) -> AsyncIterator[EgressInjector]:
    await injector.start()
    try:
        yield injector
    finally:
        await injector.stop()


async def fronted_get(injector: EgressInjector, key: str, port: int, sni: str) -> int:
    """GET /echo from 127.0.0.1:``port`` through a CONNECT tunnel whose TLS names ``sni``.

    httpx always sends the URL's host as the server name; this is the domain-fronting
    shape it cannot make. Returns the status code.
    """
    reader, writer = await asyncio.open_connection("127.0.0.1", injector.port)
    try:
        token = base64.b64encode(f"run:{key}".encode()).decode()
        writer.write(
            f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Proxy-Authorization: Basic {token}\r\n\r\n".encode()
        )
        assert b" 200 " in await reader.readuntil(b"\r\n\r\n")
        trust = ssl.create_default_context(cafile=str(injector.ca_cert_path))
        await writer.start_tls(trust, server_hostname=sni)
        writer.write(
            f"GET /echo HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
        )
        status_line = await reader.readline()
        return int(status_line.split()[1])
    finally:
        writer.close()


def timed_gets(url: str, n: int, **options: object) -> list[float]:
    """Seconds per GET over one keep-alive connection (after one warm-up request)."""
    with httpx.Client(trust_env=False, timeout=10, **options) as c:  # type: ignore[arg-type]
        c.get(url).raise_for_status()
        times = []
        for _ in range(n):
            started = time.perf_counter()
            c.get(url).raise_for_status()
            times.append(time.perf_counter() - started)
    return times
