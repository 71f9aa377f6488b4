"""Entry points for ``benchwright up`` and ``benchwright serve``."""

import asyncio
import logging
import os
import signal
import socket
from pathlib import Path

from rich.console import Console

from benchwright_runtime.health import HealthServer
from benchwright_runtime.host import SERVICES, ServiceHost
from benchwright_runtime.nats_server import EmbeddedNats, free_port
from benchwright_shared.process import freeze_startup_heap, limit_malloc_arenas
from benchwright_shared.settings import Settings

console = Console(stderr=True)


def _settings(data_dir: Path | None, port: int | None, proxy_port: int | None = None) -> Settings:
    overrides: dict[str, object] = {}
    if data_dir is not None:
        overrides["data_dir"] = data_dir.expanduser().resolve()
    if port is not None:
        overrides["gateway_port"] = port
    if proxy_port is not None:
        overrides["proxy_port"] = proxy_port
    settings = Settings(**overrides)  # type: ignore[arg-type]
    if proxy_port is None and "BW_PROXY_PORT" not in os.environ and _taken(settings.proxy_port):
        # A second platform on this machine: its model proxy takes any free port (the
        # sandboxes learn the address when a run attaches), and the banner says which.
        settings = settings.model_copy(update={"proxy_port": free_port()})
    return settings


def _taken(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


async def _until_signalled(stop: asyncio.Event | None = None) -> None:
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()


async def run_embedded(
    settings: Settings,
    *,
    ready_file: Path | None = None,
    stop: asyncio.Event | None = None,
    quiet: bool = False,
) -> None:
    """Everything in one process: a private nats-server, SQLite stores, all services.

    Runs until SIGINT/SIGTERM, or until ``stop`` is set when one is given.
    """
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    nats: EmbeddedNats | None = None
    if not settings.nats_url:
        nats = EmbeddedNats(settings.data_dir)
        await nats.start()
        settings = settings.model_copy(update={"nats_url": nats.url})
    host = ServiceHost(settings, list(SERVICES), label="embedded")
    try:
        await host.start()
        freeze_startup_heap()
        creds = host.service("gateway").credentials_path  # type: ignore[attr-defined]
        if not quiet:
            console.print(f"[bold green]Benchwright is up[/] at {settings.gateway_url}")
            console.print(f"  model proxy: http://{settings.proxy_host}:{settings.proxy_port}")
            console.print(f"  data:  {settings.data_dir}")
            console.print(f"  token: saved to {creds}")
            # One use, minutes long: the admin's browser session, without a password.
            link = await host.service("gateway").sign_in_link()  # type: ignore[attr-defined]
            console.print(f"  sign in: {link}", soft_wrap=True)
        if ready_file:
            await asyncio.to_thread(ready_file.write_text, settings.gateway_url)
        await _until_signalled(stop)
        if not quiet:
            console.print("shutting down…")
    finally:
        await host.stop()
        if nats:
            nats.stop()


def up(
    data_dir: Path | None = None, port: int | None = None, proxy_port: int | None = None
) -> None:
    """``benchwright up``: the embedded platform, until Ctrl-C or SIGTERM."""
    logging.basicConfig(level=os.environ.get("BW_LOG_LEVEL", "WARNING"))
    limit_malloc_arenas()
    ready = os.environ.get("BW_READY_FILE")
    settings = _settings(data_dir, port, proxy_port)
    asyncio.run(run_embedded(settings, ready_file=Path(ready) if ready else None))


async def run_one(settings: Settings, service: str) -> None:
    if not settings.nats_url:
        raise SystemExit("serve needs BW_NATS_URL (and BW_DATABASE_URL for production)")
    host = ServiceHost(settings, [service], label=service)
    health = None
    if settings.health_port:
        health = HealthServer(settings.health_port, ready=host.ready)
        await health.start()
    try:
        await host.start()
        freeze_startup_heap()
        console.print(f"[bold green]{service}[/] serving on {settings.nats_url}")
        await _until_signalled()
    finally:
        await host.stop()
        if health is not None:
            await health.stop()


def serve(service: str) -> None:
    """``benchwright serve <service>``: one service, external NATS and database."""
    if service not in SERVICES:
        raise SystemExit(f"unknown service {service!r}; known: {', '.join(SERVICES)}")
    logging.basicConfig(level=os.environ.get("BW_LOG_LEVEL", "WARNING"))
    limit_malloc_arenas()
    asyncio.run(run_one(Settings(), service))
