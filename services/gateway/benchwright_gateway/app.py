"""Assembles the gateway: tokens, idempotency, the runs projection and the HTTP API."""

import asyncio
import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn
from fastapi import FastAPI
from faststream.nats import NatsBroker, NatsRouter

from benchwright_gateway.api import admin, errors, launch, runs
from benchwright_gateway.api.auth import Principal, principal_dependency
from benchwright_gateway.api.context import GatewayContext
from benchwright_gateway.application import GatewayApplication
from benchwright_gateway.domain import ALL_SCOPES
from benchwright_gateway.projections import RunsProjection
from benchwright_shared.projection_runner import RUN_LOG_SOURCE, ProjectionHost
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore, eventsourcing_env

CREDENTIALS_FILE = "credentials.json"


@dataclass
class GatewayService:
    settings: Settings
    name: str = "gateway"
    router: NatsRouter = field(default_factory=NatsRouter)

    def __post_init__(self) -> None:
        self.blocking = BlockingStore(self.name)
        self.app = GatewayApplication(env=eventsourcing_env(self.settings, self.name))
        self.views = ProjectionHost(
            self.settings,
            self.name,
            self.router,
            {"runs": (RunsProjection(), RUN_LOG_SOURCE)},
            blocking=self.blocking,
        )
        self.ctx = GatewayContext(self.settings, self.app, self.views.store, self.blocking)
        self.http = self.build_http()
        self._server: uvicorn.Server | None = None
        self._serve_task: asyncio.Task[None] | None = None

    def build_http(self) -> FastAPI:
        http = FastAPI(
            title="Benchwright API",
            version="1",
            description="Run LLM benchmarks honestly: reproducible, comparable, costed.",
        )
        errors.install(http)

        async def verify(token: str) -> Principal | None:
            found = await self.blocking.run(self.app.verify, token)
            return Principal(found.account, tuple(found.scopes)) if found else None

        principal = principal_dependency(verify)
        http.include_router(launch.build_router(self.ctx, principal))
        http.include_router(runs.build_router(self.ctx, principal))
        http.include_router(admin.build_router(self.ctx, principal, self.views.rebuild))

        @http.get("/healthz")
        async def healthz() -> dict[str, str]:
            return {"status": "ok"}

        return http

    def ensure_admin_token(self) -> Path:
        """Mint the first admin token and save it where the CLI and SDK look.

        Only on first start: the file holds the only copy of the token.
        """
        path = self.settings.data_dir / CREDENTIALS_FILE
        if path.exists():
            saved = json.loads(path.read_text())
            if self.app.verify(saved.get("token", "")):
                if saved.get("base_url") != self.settings.gateway_url:
                    saved["base_url"] = self.settings.gateway_url
                    _write_private(path, json.dumps(saved, indent=2))
                return path
        token = self.app.mint_token(
            self.settings.default_account, list(ALL_SCOPES), "admin (benchwright up)"
        )
        _write_private(
            path, json.dumps({"base_url": self.settings.gateway_url, "token": token}, indent=2)
        )
        return path

    async def start(self, broker: NatsBroker) -> None:
        self.ctx.broker = broker
        self.views.broker = broker
        config = uvicorn.Config(
            self.http,
            host=self.settings.gateway_host,
            port=self.settings.gateway_port,
            log_level="warning",
            access_log=False,
            lifespan="off",
        )
        self._server = uvicorn.Server(config)
        self._serve_task = asyncio.create_task(self._server.serve(), name="gateway-http")
        while not self._server.started:
            if self._serve_task.done():
                self._serve_task.result()
            await asyncio.sleep(0.01)
        # Every deployment needs a first credential; it is written once, 0600, and
        # only once the API listens, so the file's presence means "ready to use".
        self.credentials_path = await self.blocking.run(self.ensure_admin_token)

    async def stop(self) -> None:
        if self._server:
            self._server.should_exit = True
        if self._serve_task:
            with contextlib.suppress(asyncio.CancelledError):
                await self._serve_task
        self.app.close()
        self.views.close()


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def build(settings: Settings) -> GatewayService:
    return GatewayService(settings)
