"""The platform as an operator runs it: every service its own process, killable.

``Deployment`` starts ``benchwright serve <service>`` processes (any number of
copies each) against NATS and PostgreSQL, each copy with its own data
directory so that nothing is shared but the bus and the database, and kills
(SIGKILL) or restarts any of them. ``PrivateNats`` is a nats-server from the
wheel that can itself be killed and started again on the same port and store.
"""

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from benchwright_runtime.nats_server import find_binary
from tests.conftest import free_port

BENCHWRIGHT = str(Path(sys.executable).parent / "benchwright")
SERVICES = ["registry", "billing", "proxy", "sandbox-manager", "orchestrator", "gateway"]


class PrivateNats:
    """One nats-server with JetStream whose process a test may kill."""

    def __init__(self, root: Path, port: int | None = None) -> None:
        self.root = root
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        config = self.root / "nats-server.conf"
        config.write_text(
            f'listen: "127.0.0.1:{self.port}"\n'
            "max_payload: 8MB\n"
            f'jetstream {{ store_dir: "{self.root / "store"}" }}\n'
        )
        log = (self.root / "nats-server.log").open("ab")
        self.proc = subprocess.Popen([find_binary(), "-c", str(config)], stdout=log, stderr=log)

    async def ready(self, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
                writer.close()
                return
            await asyncio.sleep(0.05)
        raise TimeoutError("nats-server did not start")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class NatsCluster:
    """Three (or more) nats-servers with JetStream, clustered by routes on loopback."""

    def __init__(self, root: Path, size: int = 3) -> None:
        self.root = root
        self.ports = [free_port() for _ in range(size)]
        self.routes = [free_port() for _ in range(size)]
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * size

    @property
    def url(self) -> str:
        return ",".join(f"nats://127.0.0.1:{p}" for p in self.ports)

    def start(self, node: int | None = None) -> None:
        for i in range(len(self.ports)) if node is None else [node]:
            home = self.root / f"n{i}"
            home.mkdir(parents=True, exist_ok=True)
            routes = ", ".join(f"nats-route://127.0.0.1:{r}" for r in self.routes)
            (home / "nats.conf").write_text(
                f'server_name: "n{i}"\n'
                f'listen: "127.0.0.1:{self.ports[i]}"\n'
                "max_payload: 8MB\n"
                f'jetstream {{ store_dir: "{home / "store"}" }}\n'
                f'cluster {{ name: "bw", listen: "127.0.0.1:{self.routes[i]}", '
                f"routes: [{routes}] }}\n"
            )
            log = (home / "nats.log").open("ab")
            self.procs[i] = subprocess.Popen(
                [find_binary(), "-c", str(home / "nats.conf")], stdout=log, stderr=log
            )

    async def ready(self, timeout: float = 60) -> None:
        """Every node answers and JetStream has a leader (a stream can be made)."""
        import nats

        deadline = time.monotonic() + timeout
        while True:
            try:
                nc = await nats.connect(servers=self.url.split(","), connect_timeout=2)
                try:
                    js = nc.jetstream(timeout=2)
                    await js.account_info()
                    return
                finally:
                    await nc.close()
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)

    def kill(self, node: int) -> None:
        proc = self.procs[node]
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)

    def stop(self) -> None:
        for proc in self.procs:
            if proc is not None and proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            if proc is not None:
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()


class Balancer:
    """A TCP load balancer on loopback: what production puts in front of the proxy copies.

    Each connection goes to the next backend that accepts it (round robin); a
    backend that refuses is skipped, so one copy's death costs no connection
    that starts after it.
    """

    def __init__(self, backends: list[int]) -> None:
        self.backends = backends
        self.port = 0
        self._server: asyncio.Server | None = None
        self._next = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> "Balancer":
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream = None
        for _ in range(len(self.backends) * 20):
            port = self.backends[self._next % len(self.backends)]
            self._next += 1
            try:
                upstream = await asyncio.open_connection("127.0.0.1", port)
                break
            except OSError:
                await asyncio.sleep(0.05)
        if upstream is None:
            writer.close()
            return
        up_reader, up_writer = upstream

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(Exception):
                dst.close()

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()


@dataclass
class Copy:
    service: str
    index: int
    data_dir: Path
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0


@dataclass
class Deployment:
    root: Path
    nats_url: str
    database_url: str
    env: dict[str, str] = field(default_factory=dict)
    copies: dict[tuple[str, int], Copy] = field(default_factory=dict)
    gateway_ports: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Fixed per copy, so that a restarted copy answers where it did before.
        self.proxy_ports = [free_port() for _ in range(4)]
        self.injector_ports = [free_port() for _ in range(4)]

    @property
    def proxy_port(self) -> int:
        return self.proxy_ports[0]

    def _env(self, copy: Copy) -> dict[str, str]:
        env = {
            **os.environ,
            "BW_NATS_URL": self.nats_url,
            "BW_DATABASE_URL": self.database_url,
            "BW_DATA_DIR": str(copy.data_dir),
            "BW_PROXY_PORT": str(self.proxy_ports[copy.index]),
            "BW_INJECTOR_PORT": str(self.injector_ports[copy.index]),
            "BW_TASK_CONCURRENCY": "4",
            **self.env,
        }
        if copy.service == "gateway":
            while len(self.gateway_ports) <= copy.index:
                self.gateway_ports.append(free_port())
            env["BW_GATEWAY_PORT"] = str(self.gateway_ports[copy.index])
        return env

    def start(self, service: str, index: int = 0) -> Copy:
        copy = self.copies.get((service, index))
        if copy is None:
            name = service if index == 0 else f"{service}-{index}"
            copy = Copy(service, index, self.root / name, self.root / f"{name}.log")
            self.copies[(service, index)] = copy
        assert copy.proc is None or copy.proc.poll() is not None, f"{service} is running"
        copy.starts += 1
        with copy.log.open("ab") as log:
            log.write(f"\n==== start {copy.starts} ====\n".encode())
        copy.proc = subprocess.Popen(
            [BENCHWRIGHT, "serve", service],
            env=self._env(copy),
            stdout=copy.log.open("ab"),
            stderr=subprocess.STDOUT,
        )
        return copy

    def start_all(self, services: list[str] = SERVICES, copies: int = 1) -> None:
        for service in services:
            for index in range(copies):
                self.start(service, index)

    def kill(self, service: str, index: int = 0) -> None:
        """SIGKILL: no chance to clean up, as when a machine or a container dies."""
        copy = self.copies[(service, index)]
        assert copy.proc is not None
        copy.proc.send_signal(signal.SIGKILL)
        copy.proc.wait(10)

    def alive(self, service: str, index: int = 0) -> bool:
        copy = self.copies.get((service, index))
        return bool(copy and copy.proc and copy.proc.poll() is None)

    def stop_all(self) -> None:
        procs = [c.proc for c in self.copies.values() if c.proc and c.proc.poll() is None]
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()

    def logs(self) -> dict[str, str]:
        return {
            f"{c.service}#{c.index}": c.log.read_text(errors="replace")
            for c in self.copies.values()
            if c.log.exists()
        }

    async def credentials(self, timeout: float = 90) -> dict[str, Any]:
        path = self.root / "gateway" / "credentials.json"
        deadline = time.monotonic() + timeout
        while not await asyncio.to_thread(path.exists):
            for copy in self.copies.values():
                if copy.proc and copy.proc.poll() is not None:
                    raise RuntimeError(f"{copy.service} exited: {copy.log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError("the gateway never wrote its credentials")
            await asyncio.sleep(0.1)
        creds: dict[str, Any] = json.loads(path.read_text())
        return creds

    @contextlib.asynccontextmanager
    async def client(self) -> AsyncIterator["PatientClient"]:
        creds = await self.credentials()
        urls = [f"http://127.0.0.1:{port}" for port in self.gateway_ports] or [creds["base_url"]]
        client = PatientClient(urls, creds["token"])
        try:
            yield client
        finally:
            await client.aclose()


class PatientClient:
    """An API client that rides out a gateway restart: it retries until one answers.

    With several gateway copies it moves to the next one when a copy does not answer.
    """

    def __init__(self, urls: list[str], token: str) -> None:
        self.urls = urls
        self.clients = [
            httpx.AsyncClient(
                base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30
            )
            for url in urls
        ]
        self._next = 0

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()

    async def request(
        self, method: str, url: str, *, patience: float = 90, **kwargs: Any
    ) -> httpx.Response:
        deadline = time.monotonic() + patience
        while True:
            client = self.clients[self._next % len(self.clients)]
            try:
                response = await client.request(method, url, **kwargs)
                if response.status_code not in (502, 503, 504):
                    return response
            except httpx.TransportError:
                pass
            self._next += 1
            if time.monotonic() > deadline:
                raise TimeoutError(f"{method} {url}: no gateway answered")
            await asyncio.sleep(0.2)

    async def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return await self.request("GET", url, **kwargs)

    async def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return await self.request("POST", url, **kwargs)

    async def events(self, run_id: str) -> list[dict[str, Any]]:
        """The whole log of a run."""
        found: list[dict[str, Any]] = []
        after: int | None = None
        deadline = time.monotonic() + 30
        while True:
            params: dict[str, Any] = {"limit": 1000}
            if after is not None:
                params["after_seq"] = after
            response = await self.get(f"/v1/runs/{run_id}/events", params=params)
            if response.status_code == 404 and not found and time.monotonic() < deadline:
                # Just launched: the read model has not caught up yet (reads lag writes).
                await asyncio.sleep(0.2)
                continue
            assert response.status_code == 200, response.text
            page = response.json()
            found.extend(page["data"])
            if not page.get("has_more") or not page["data"]:
                return found
            after = page["data"][-1]["seq"]

    async def terminal(self, run_id: str, timeout: float = 240) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            response = await self.get(f"/v1/runs/{run_id}")
            if response.status_code == 200 and response.json()["status"] != "running":
                body: dict[str, Any] = response.json()
                return body
            await asyncio.sleep(0.3)
        raise TimeoutError(f"run {run_id} still running after {timeout}s")
