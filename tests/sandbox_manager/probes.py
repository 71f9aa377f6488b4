"""Helpers for sandbox tests: a TCP listener on the host, host processes, probe scripts."""

import asyncio
import os
import time
import uuid
from pathlib import Path


class Listener:
    """A TCP service on the host's loopback that answers every connection with ``reply``."""

    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        self.port = 0
        self.connections = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> "Listener":
        self._server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server
        self._server.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        await reader.readline()
        writer.write(self.reply)
        await writer.drain()
        writer.close()


def host_processes(marker: str) -> list[str]:
    """PIDs on this host whose command line contains ``marker``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline:
            found.append(pid)
    return found


async def gone(marker: str, within_s: float = 3.0) -> bool:
    """Whether every host process with ``marker`` is gone (killed ones take a moment)."""
    deadline = time.monotonic() + within_s
    while host_processes(marker):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


def marker() -> str:
    """A sleep duration no other process on this machine has on its command line."""
    return f"{300 + uuid.uuid4().int % 100_000 / 1000:.3f}"


NETWORK_PROBE = """
import json, os, socket, sys, urllib.parse
report = {}
def talk(host, port):
    try:
        with socket.create_connection((host, port), timeout=3) as s:
            s.sendall(b"hello\\n")
            return s.recv(100).decode()
    except OSError as exc:
        return f"error: {type(exc).__name__}"
model = urllib.parse.urlsplit(os.environ["BW_MODEL_PROXY_URL"])
report["model"] = talk(model.hostname, model.port)
egress = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
report["egress"] = talk(egress.hostname, egress.port)
report["other_host_port"] = talk("127.0.0.1", int(sys.argv[1]))
report["model_port_on_another_address"] = talk("127.0.0.2", int(sys.argv[2]))
report["external"] = talk("1.1.1.1", 443)
report["private"] = talk("10.0.0.1", 80)
try:
    socket.getaddrinfo("api.openai.com", 443)
    report["dns"] = "resolved"
except OSError as exc:
    report["dns"] = f"error: {type(exc).__name__}"
report["interfaces"] = [name for _, name in socket.if_nameindex()]
print(json.dumps(report))
"""

HOST_VIEW = """
import json, os, sys
found = {}
for path in sys.argv[1:]:
    try:
        found[path] = sorted(os.listdir(path)) if os.path.isdir(path) else open(path).read()
    except OSError as exc:
        found[path] = f"error: {type(exc).__name__}"
print(json.dumps(found))
"""
