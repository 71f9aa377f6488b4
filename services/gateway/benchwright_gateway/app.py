"""Assembles the gateway: tokens, idempotency, the runs projection and the HTTP API."""

import asyncio
import contextlib
import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI
from faststream.nats import NatsBroker, NatsRouter

from benchwright_gateway import web
from benchwright_gateway.api import (
    access,
    admin,
    artifacts,
    errors,
    estimate,
    launch,
    lookup,
    openapi,
    registry,
    runs,
)
from benchwright_gateway.api import billing as billing_api
from benchwright_gateway.api import build as build_api
from benchwright_gateway.api import compare as compare_api
from benchwright_gateway.api import export as export_api
from benchwright_gateway.api import labels as labels_api
from benchwright_gateway.api import registry_impls as registry_impls_api
from benchwright_gateway.api import registry_reads as registry_reads_api
from benchwright_gateway.api import secrets as secrets_api
from benchwright_gateway.api import settings as settings_api
from benchwright_gateway.api import webhooks as webhooks_api
from benchwright_gateway.api.auth import Principal
from benchwright_gateway.api.guard import BodyGuard, Contained
from benchwright_gateway.application import GatewayApplication
from benchwright_gateway.context import GatewayContext
from benchwright_gateway.domain import ALL_SCOPES
from benchwright_gateway.projections import RunsProjection
from benchwright_gateway.webhooks.delivery import Webhooks
from benchwright_shared.api.base import Health
from benchwright_shared.projection_runner import RUN_LOG_SOURCE, ProjectionHost
from benchwright_shared.service import HTTP_KEEP_ALIVE_S, listening
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore, eventsourcing_env

ADMIN_USERNAME = "admin"
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
        self.webhooks = Webhooks(
            self.settings, self.router, self.ctx, lambda row: lookup.show(self.ctx, row)
        )
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
        openapi.install(http)

        async def verify(token: str) -> Principal | None:
            found = await self.blocking.run(self.app.verify, token)
            return Principal(found.account, found.scopes, found.kind) if found else None

        # Module-level routers read these through ``api.deps``.
        http.state.ctx = self.ctx
        http.state.verify = verify
        http.state.webhooks = self.webhooks
        http.state.views = self.views
        http.include_router(access.router)
        http.include_router(secrets_api.router)
        http.include_router(billing_api.router)
        http.include_router(artifacts.router)
        http.include_router(settings_api.router)
        http.include_router(launch.router)
        http.include_router(estimate.router)
        http.include_router(runs.router)
        http.include_router(compare_api.router)
        http.include_router(labels_api.router)
        http.include_router(export_api.router)
        http.include_router(webhooks_api.router)
        http.include_router(admin.router)
        http.include_router(registry.router)
        http.include_router(registry_impls_api.router)
        http.include_router(build_api.router)
        http.include_router(registry_reads_api.router)
        web.install(http, self.ctx, verify)

        @http.get("/healthz", response_model=Health)
        async def healthz() -> Health:
            return Health(status="ok")

        # Outermost last: a crash is contained after the body guard has had its say.
        http.add_middleware(
            BodyGuard,
            max_bytes=self.settings.max_request_bytes,
            max_upload_bytes=self.settings.max_upload_bytes,
        )
        http.add_middleware(Contained)
        return http

    def ensure_admin_token(self) -> Path:
        """Create the admin login and its first token; save both where the CLI and SDK look.

        Only on first start: the file holds the only copy of the password and the
        token. The login opens sessions, which mint further tokens.
        """
        path = self.settings.data_dir / CREDENTIALS_FILE
        saved: dict[str, Any] = {}
        if path.exists():
            saved = json.loads(path.read_text() or "{}")
            if self.app.token_account(saved.get("token", "")):
                if saved.get("base_url") != self.settings.gateway_url or "login" not in saved:
                    saved["base_url"] = self.settings.gateway_url
                    saved.setdefault("login", self._admin_login())
                    _write_private(path, json.dumps(saved, indent=2))
                return path
        token = self.app.mint_token(
            self.settings.default_account, list(ALL_SCOPES), "admin (benchwright up)"
        )
        login = saved.get("login") or self._admin_login()
        document = {"base_url": self.settings.gateway_url, "token": token, "login": login}
        _write_private(path, json.dumps(document, indent=2))
        return path

    def _admin_login(self) -> dict[str, str]:
        """The deployment's admin login, created once with a random password."""
        if self.app.find_login(ADMIN_USERNAME) is not None:
            return {"username": ADMIN_USERNAME, "password": ""}  # set before; not recoverable
        password = secrets.token_urlsafe(18)
        self.app.create_login(
            ADMIN_USERNAME, password, account=self.settings.default_account, admin=True
        )
        return {"username": ADMIN_USERNAME, "password": password}

    async def sign_in_link(self) -> str:
        """A one-time link that signs a browser in as the deployment's admin (minutes)."""
        token = await self.blocking.run(self.app.issue_sign_in_link, ADMIN_USERNAME)
        return f"{self.settings.gateway_url}/sign-in/link/{token}"

    async def start(self, broker: NatsBroker) -> None:
        self.ctx.broker = broker
        self.views.broker = broker
        await self.webhooks.start()

    async def serve(self) -> None:
        """Open the API, once every subscriber of the process runs (ServiceHost calls it)."""
        config = uvicorn.Config(
            self.http,
            host=self.settings.gateway_host,
            port=self.settings.gateway_port,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_keep_alive=HTTP_KEEP_ALIVE_S,
        )
        self._server = uvicorn.Server(config)
        self._serve_task = asyncio.create_task(
            listening(self._server.serve(), config.host, config.port), name="gateway-http"
        )
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
        await self.webhooks.stop()
        # The views' close waits for the shared store thread; the app closes after it.
        self.views.close()
        self.app.close()


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` readable by the owner only, all at once: a reader that sees the
    file sees it whole (it is written aside, then renamed into place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(staging, path)


def build(settings: Settings) -> GatewayService:
    return GatewayService(settings)
