"""Every route of the gateway, checked for its credential, its scope and its owner.

The table below names what each route needs. A route the gateway serves without
an entry here fails the suite (and so does an entry for a route that is gone):
a new endpoint cannot ship without saying which scope guards it.

For every route: no credential answers 401; a credential that lacks what the
route needs answers 403 problem+json naming it; a credential with only that gets
past the check. For every route that addresses an owned resource, another
account's credential (a plain account's, and the deployment admin's) answers
404 exactly as it does for an id that never existed: the same status, headers
and bytes, the id aside.

One embedded platform serves the whole module. Account A (alice) owns a finished
pinned run against a fake model, a secret, the host rule that secret added, and
an access token; account B (bob) owns nothing.
"""

import asyncio
import itertools
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fastapi.routing
import httpx
import pytest
from fastapi import FastAPI
from starlette.routing import Mount

from benchwright_gateway.app import GatewayService
from benchwright_gateway.domain import ALL_SCOPES
from benchwright_gateway.web.routing import PageRoute
from benchwright_shared.settings import Settings
from tests.conftest import Platform, platform_settings
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = [pytest.mark.slow, pytest.mark.connected]

# What a route needs, besides a scope name.
PUBLIC = "public"  # no credential at all
AUTHENTICATED = "authenticated"  # any valid credential, whatever its scopes
SESSION = "session-only"  # an account's session; never a PAT, whatever its scopes
ADMIN_SESSION = "admin-session"  # an admin's session; never a PAT, not even an admin one
ADMIN = "admin"  # the admin scope (an admin PAT or an admin session)

PASSWORD = "a long enough password"
NON_ADMIN_SCOPES = tuple(s for s in ALL_SCOPES if s != ADMIN)


@dataclass(frozen=True)
class Entry:
    """One route: what it needs, and a request that reaches it.

    ``path`` and ``body`` name A's resources with ``{run}``, ``{task}``,
    ``{secret}``, ``{token}`` and ``{pattern}``; ``{fresh}`` is a new name each time.
    ``owned``: the request addresses one of A's resources, so another account's
    credential must see it as missing. ``destructive``: sent with A's own
    credential, it would delete or spawn something, so the probes that may get
    through aim it at a missing resource instead.
    """

    need: str
    path: str
    body: dict[str, Any] | None = None
    owned: bool = False
    destructive: bool = False


# The smallest Harbor dataset the registry stores: one task.
HARBOR_TASK = {
    "probe/task.toml": 'schema_version = "1.1"\n',
    "probe/instruction.md": "Do nothing.\n",
    "probe/environment/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\n",
    "probe/tests/test.sh": "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
}

MATRIX: dict[tuple[str, str], Entry] = {
    # FastAPI's own pages and the health check.
    ("GET", "/openapi.json"): Entry(PUBLIC, "/openapi.json"),
    ("GET", "/docs"): Entry(PUBLIC, "/docs"),
    ("GET", "/docs/oauth2-redirect"): Entry(PUBLIC, "/docs/oauth2-redirect"),
    ("GET", "/redoc"): Entry(PUBLIC, "/redoc"),
    ("GET", "/healthz"): Entry(PUBLIC, "/healthz"),
    # Logins, sessions, tokens, accounts.
    ("POST", "/v1/sessions"): Entry(
        PUBLIC, "/v1/sessions", {"username": "alice", "password": PASSWORD}
    ),
    ("POST", "/v1/tokens"): Entry(
        SESSION, "/v1/tokens", {"label": "probe", "scopes": ["runs:read"]}
    ),
    ("GET", "/v1/tokens"): Entry(SESSION, "/v1/tokens"),
    ("DELETE", "/v1/tokens/{token_id}"): Entry(
        SESSION, "/v1/tokens/{token}", owned=True, destructive=True
    ),
    ("POST", "/v1/accounts"): Entry(
        ADMIN_SESSION, "/v1/accounts", {"username": "{fresh}", "password": PASSWORD}
    ),
    ("GET", "/v1/me"): Entry(AUTHENTICATED, "/v1/me"),
    # Secrets, host policy, blocked hosts.
    ("POST", "/v1/secrets"): Entry(
        "secrets:write", "/v1/secrets", {"name": "{fresh}", "value": "probe-value-0123456789"}
    ),
    ("GET", "/v1/secrets"): Entry("secrets:read", "/v1/secrets"),
    ("GET", "/v1/secrets/{name}"): Entry("secrets:read", "/v1/secrets/{secret}", owned=True),
    ("PATCH", "/v1/secrets/{name}"): Entry(
        "secrets:write", "/v1/secrets/{secret}", {"description": "probed"}, owned=True
    ),
    ("DELETE", "/v1/secrets/{name}"): Entry(
        "secrets:write", "/v1/secrets/{secret}", owned=True, destructive=True
    ),
    ("GET", "/v1/host-policy"): Entry("secrets:read", "/v1/host-policy"),
    ("PATCH", "/v1/host-policy"): Entry(
        "secrets:write", "/v1/host-policy", {"remove": ["{pattern}"]}, owned=True, destructive=True
    ),
    ("GET", "/v1/blocked-hosts"): Entry("secrets:read", "/v1/blocked-hosts"),
    ("GET", "/v1/runs/{run_id}/blocked-hosts"): Entry(
        "runs:read", "/v1/runs/{run}/blocked-hosts", owned=True
    ),
    # Account settings.
    ("GET", "/v1/settings"): Entry("settings:read", "/v1/settings"),
    ("GET", "/v1/settings/schema"): Entry("settings:read", "/v1/settings/schema"),
    ("GET", "/v1/settings/{key}"): Entry("settings:read", "/v1/settings/default_compute"),
    ("PUT", "/v1/settings/{key}"): Entry(
        "settings:write", "/v1/settings/default_compute", {"value": "default"}
    ),
    ("DELETE", "/v1/settings/{key}"): Entry("settings:write", "/v1/settings/default_compute"),
    # Billing.
    ("GET", "/v1/billing/balance"): Entry("billing:read", "/v1/billing/balance"),
    ("PATCH", "/v1/billing/controls"): Entry(
        "billing:write", "/v1/billing/controls", {"alert_enabled": False}
    ),
    ("POST", "/v1/billing/topups"): Entry(
        "billing:write", "/v1/billing/topups", {"amount_cents": 100}
    ),
    ("GET", "/v1/billing/topups/{topup_id}"): Entry(
        "billing:read", "/v1/billing/topups/{topup}", owned=True
    ),
    ("GET", "/v1/billing/transactions"): Entry("billing:read", "/v1/billing/transactions"),
    ("GET", "/v1/billing/alerts"): Entry("billing:read", "/v1/billing/alerts"),
    ("GET", "/v1/billing/usage_trend"): Entry("billing:read", "/v1/billing/usage_trend"),
    ("GET", "/v1/billing/export"): Entry("billing:read", "/v1/billing/export"),
    # Runs: read.
    ("GET", "/v1/runs"): Entry("runs:read", "/v1/runs"),
    ("GET", "/v1/runs/{run_id}"): Entry("runs:read", "/v1/runs/{run}", owned=True),
    ("GET", "/v1/runs/{run_id}/tasks"): Entry("runs:read", "/v1/runs/{run}/tasks", owned=True),
    ("GET", "/v1/runs/{run_id}/tasks/{row_id}/payload"): Entry(
        "runs:read", "/v1/runs/{run}/tasks/{task}/payload", owned=True
    ),
    ("GET", "/v1/runs/{run_id}/events"): Entry("runs:read", "/v1/runs/{run}/events", owned=True),
    ("GET", "/v1/runs/{run_id}/fingerprint"): Entry(
        "runs:read", "/v1/runs/{run}/fingerprint", owned=True
    ),
    ("GET", "/v1/runs/{run_id}/stream"): Entry("runs:read", "/v1/runs/{run}/stream", owned=True),
    ("GET", "/v1/runs/{run_id}/export"): Entry("runs:read", "/v1/runs/{run}/export", owned=True),
    ("GET", "/v1/runs/{run_id}/compare"): Entry(
        "runs:read", "/v1/runs/{run}/compare?with={run}", owned=True
    ),
    ("GET", "/v1/runs/{run_id}/narrate"): Entry("runs:read", "/v1/runs/{run}/narrate", owned=True),
    ("GET", "/v1/runs/{run_id}/labels"): Entry("runs:read", "/v1/runs/{run}/labels", owned=True),
    ("GET", "/v1/runs/{run_id}/agreement"): Entry(
        "runs:read", "/v1/runs/{run}/agreement", owned=True
    ),
    # Grading a task by hand: a scope of its own, so a reviewer's token launches nothing.
    ("POST", "/v1/runs/{run_id}/labels"): Entry(
        "runs:label", "/v1/runs/{run}/labels", {"task": 0, "grade": "pass"}, owned=True
    ),
    # Artifacts and the report.
    ("GET", "/v1/runs/{run_id}/artifacts"): Entry(
        "artifacts:read", "/v1/runs/{run}/artifacts", owned=True
    ),
    ("GET", "/v1/runs/{run_id}/artifacts/{art_id}"): Entry(
        "artifacts:read", "/v1/runs/{run}/artifacts/art_0", owned=True
    ),
    ("GET", "/v1/runs/{run_id}/artifacts/{art_id}/content"): Entry(
        "artifacts:read", "/v1/runs/{run}/artifacts/art_0/content", owned=True
    ),
    ("GET", "/v1/runs/{run_id}/tool-outputs/{seq}"): Entry(
        "artifacts:read", "/v1/runs/{run}/tool-outputs/0", owned=True
    ),
    ("GET", "/v1/runs/{run_id}/report"): Entry(
        "artifacts:read", "/v1/runs/{run}/report", owned=True
    ),
    # Runs: write.
    ("POST", "/v1/runs"): Entry(
        "runs:write", "/v1/runs", {"replay": {"from_run": "{run}"}}, owned=True, destructive=True
    ),
    # Reads only: an estimate launches nothing.
    ("POST", "/v1/runs/estimate"): Entry(
        "runs:read", "/v1/runs/estimate", {"replay": {"from_run": "{run}"}}, owned=True
    ),
    ("POST", "/v1/runs/{run_id}/fork"): Entry(
        "runs:write",
        "/v1/runs/{run}/fork",
        {"description": "probe", "from_phase": "materialize"},
        owned=True,
        destructive=True,
    ),
    ("POST", "/v1/runs/{run_id}/rescore"): Entry(
        "runs:write",
        "/v1/runs/{run}/rescore",
        {"impl": "probe"},
        owned=True,
        destructive=True,
    ),
    ("POST", "/v1/runs/{run_id}/halt"): Entry("runs:write", "/v1/runs/{run}/halt", owned=True),
    ("POST", "/v1/runs/{run_id}/resume"): Entry("runs:write", "/v1/runs/{run}/resume", owned=True),
    ("PATCH", "/v1/runs/{run_id}"): Entry(
        "runs:write", "/v1/runs/{run}", {"review_resolution": "go on"}, owned=True
    ),
    ("DELETE", "/v1/runs/{run_id}"): Entry(
        "runs:write", "/v1/runs/{run}", owned=True, destructive=True
    ),
    # Webhooks.
    ("POST", "/v1/webhooks"): Entry(
        "webhooks:write",
        "/v1/webhooks",
        {"url": "https://hooks.matrix-a.invalid/{fresh}", "events": ["run.finished"]},
    ),
    ("GET", "/v1/webhooks"): Entry("webhooks:read", "/v1/webhooks"),
    ("GET", "/v1/webhooks/{webhook_id}"): Entry(
        "webhooks:read", "/v1/webhooks/{webhook}", owned=True
    ),
    ("PATCH", "/v1/webhooks/{webhook_id}"): Entry(
        "webhooks:write", "/v1/webhooks/{webhook}", {"description": "probed"}, owned=True
    ),
    ("DELETE", "/v1/webhooks/{webhook_id}"): Entry(
        "webhooks:write", "/v1/webhooks/{webhook}", owned=True, destructive=True
    ),
    ("POST", "/v1/webhooks/{webhook_id}/rotate_secret"): Entry(
        "webhooks:write", "/v1/webhooks/{webhook}/rotate_secret", owned=True
    ),
    ("POST", "/v1/webhooks/{webhook_id}/test"): Entry(
        "webhooks:write", "/v1/webhooks/{webhook}/test", owned=True, destructive=True
    ),
    ("GET", "/v1/webhooks/{webhook_id}/deliveries"): Entry(
        "webhooks:read", "/v1/webhooks/{webhook}/deliveries", owned=True
    ),
    ("POST", "/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry"): Entry(
        "webhooks:write",
        "/v1/webhooks/{webhook}/deliveries/{delivery}/retry",
        owned=True,
        destructive=True,
    ),
    # Operators.
    ("POST", "/v1/admin/projections/{name}/rebuild"): Entry(
        ADMIN, "/v1/admin/projections/runs/rebuild"
    ),
    ("GET", "/v1/admin/projections/{name}/parked"): Entry(
        ADMIN, "/v1/admin/projections/runs/parked"
    ),
    # The registry: benchmarks, subsets, impls.
    ("POST", "/v1/benchmarks"): Entry("registry:publish", "/v1/benchmarks", {"name": "{fresh}"}),
    ("GET", "/v1/benchmarks"): Entry("registry:read", "/v1/benchmarks"),
    ("GET", "/v1/benchmarks/{benchmark_id}"): Entry(
        "registry:read", "/v1/benchmarks/{bm}", owned=True
    ),
    ("PATCH", "/v1/benchmarks/{benchmark_id}"): Entry(
        "registry:publish", "/v1/benchmarks/{bm}", {"description": "probed"}, owned=True
    ),
    ("DELETE", "/v1/benchmarks/{benchmark_id}"): Entry(
        "registry:publish", "/v1/benchmarks/{bm}", owned=True, destructive=True
    ),
    ("POST", "/v1/benchmarks/{benchmark_id}/subsets"): Entry(
        "registry:publish",
        "/v1/benchmarks/{bm}/subsets",
        {"slug": "{fresh}", "tasks": [{"task_id": "t1"}]},
        owned=True,
    ),
    ("POST", "/v1/benchmarks/{benchmark_id}/subsets/harbor"): Entry(
        "registry:publish",
        "/v1/benchmarks/{bm}/subsets/harbor",
        {"slug": "{fresh}", "files": HARBOR_TASK},
        owned=True,
    ),
    ("POST", "/v1/benchmarks/{benchmark_id}/impls"): Entry(
        "registry:publish", "/v1/benchmarks/{bm}/impls", {"code": "PROBE = 1\n"}, owned=True
    ),
    ("GET", "/v1/subsets/{subset_id}"): Entry("registry:read", "/v1/subsets/{sub}", owned=True),
    ("GET", "/v1/subsets/{subset_id}/tasks"): Entry(
        "registry:read", "/v1/subsets/{sub}/tasks", owned=True
    ),
    ("PATCH", "/v1/subsets/{subset_id}"): Entry(
        "registry:publish", "/v1/subsets/{sub}", {"description": "probed"}, owned=True
    ),
    ("POST", "/v1/subsets/{subset_id}/tasks"): Entry(
        "registry:publish",
        "/v1/subsets/{sub}/tasks",
        {"tasks": [{"task_id": "{fresh}"}]},
        owned=True,
    ),
    ("DELETE", "/v1/subsets/{subset_id}"): Entry(
        "registry:publish", "/v1/subsets/{sub}", owned=True, destructive=True
    ),
    ("POST", "/v1/impls"): Entry(
        "registry:publish", "/v1/impls", {"subset": "{sub}", "code": "PROBE = 1\n"}, owned=True
    ),
    ("GET", "/v1/impls/{impl_id}"): Entry("registry:read", "/v1/impls/{impl}", owned=True),
    ("GET", "/v1/impls/{impl_id}/code"): Entry(
        "registry:read", "/v1/impls/{impl}/code", owned=True
    ),
    ("PATCH", "/v1/impls/{impl_id}"): Entry(
        "registry:publish", "/v1/impls/{impl}", {"label": "probed"}, owned=True
    ),
    ("DELETE", "/v1/impls/{impl_id}"): Entry(
        "registry:publish", "/v1/impls/{impl}", owned=True, destructive=True
    ),
    # The registry's reads over runs, and impls frozen from a run.
    ("GET", "/v1/subsets/{subset_id}/leaderboard"): Entry(
        "registry:read", "/v1/subsets/{sub}/leaderboard", owned=True
    ),
    ("GET", "/v1/subsets/{subset_id}/runs"): Entry(
        "registry:read", "/v1/subsets/{sub}/runs", owned=True
    ),
    ("GET", "/v1/impls/{impl_id}/runs"): Entry(
        "registry:read", "/v1/impls/{impl}/runs", owned=True
    ),
    ("GET", "/v1/impls/{impl_id}/compare"): Entry(
        "registry:read", "/v1/impls/{impl}/compare", owned=True
    ),
    ("GET", "/v1/benchmarks/{benchmark_id}/range"): Entry(
        "registry:read", "/v1/benchmarks/{bm}/range?start=0&end=5", owned=True
    ),
    ("POST", "/v1/impls/from_run"): Entry(
        "registry:publish",
        "/v1/impls/from_run",
        {"from_run": "{run}", "subset": "{sub}"},
        owned=True,
    ),
    # BUILT subsets: {built} is A's slug, which names nothing in another account.
    ("POST", "/v1/build/subsets"): Entry(
        "registry:publish",
        "/v1/build/subsets",
        {"benchmark": "{bm}", "slug": "{fresh}", "tasks": [{"task_id": "t1"}]},
        owned=True,
    ),
    ("GET", "/v1/build/subsets/{subset}/recipe"): Entry(
        "registry:read", "/v1/build/subsets/{built}/recipe", owned=True
    ),
    ("PATCH", "/v1/build/subsets/{subset}/recipe"): Entry(
        "registry:publish",
        "/v1/build/subsets/{built}/recipe",
        {"config": {"temperature": 0.5}, "note": "probed"},
        owned=True,
    ),
    ("PATCH", "/v1/build/subsets/{subset}/samples"): Entry(
        "registry:publish",
        "/v1/build/subsets/{built}/samples",
        {"upsert": [{"task_id": "{fresh}"}], "note": "probed"},
        owned=True,
        destructive=True,
    ),
}

ROUTE_IDS = [f"{method} {path}" for method, path in MATRIX]
OWNED = [key for key, entry in MATRIX.items() if entry.owned]
OWNED_IDS = [f"{method} {path}" for method, path in OWNED]


def served_routes(http: FastAPI) -> set[tuple[str, str]]:
    """(method, path) for every route the app serves, included routers expanded."""
    # FastAPI keeps an included router as one entry of ``app.routes``; expand it.
    expand = getattr(fastapi.routing, "iter_route_contexts", None)
    routes: list[Any] = list(expand(http.routes)) if expand else list(http.routes)
    found: set[tuple[str, str]] = set()
    for route in routes:
        # The dashboard's pages answer a browser session, not a bearer credential:
        # tests/system/test_dashboard.py checks them (and they share this API's rules).
        if isinstance(getattr(route, "route", route), PageRoute | Mount):
            continue
        path, methods = getattr(route, "path", None), getattr(route, "methods", None)
        assert path and methods, f"a route with no path or methods: {route!r}"
        for method in methods:
            if method == "HEAD" and "GET" in methods:
                continue  # Starlette answers HEAD wherever it answers GET
            found.add((method, path))
    return found


@dataclass
class World:
    platform: Platform
    client: httpx.AsyncClient
    admin_session: str
    admin_pat: str  # the deployment admin's PAT: every scope, admin included
    alice_session: str
    bob_session: str
    bob_pat: str  # every scope bob can hold
    real: dict[str, str]  # A's resources by placeholder
    missing: dict[str, str]  # the same placeholders, naming nothing, each as long
    _tokens: dict[tuple[str, ...], str] = field(default_factory=dict)
    _fresh: Iterator[int] = field(default_factory=itertools.count)

    async def pat(self, scopes: tuple[str, ...]) -> str:
        """A PAT holding exactly ``scopes`` (minted once): alice's, or the deployment
        admin's when ``scopes`` include admin (only an admin session grants it)."""
        if scopes not in self._tokens:
            session = self.admin_session if ADMIN in scopes else self.alice_session
            self._tokens[scopes] = await mint(self.client, session, list(scopes))
        return self._tokens[scopes]

    def fill(self, entry: Entry, *, missing: bool = False) -> tuple[str, dict[str, Any] | None]:
        values = dict(self.missing if missing else self.real)
        text = json.dumps([entry.path, entry.body])
        for name, value in values.items():
            text = text.replace("{" + name + "}", value)
        while "{fresh}" in text:
            text = text.replace("{fresh}", f"probe{next(self._fresh)}", 1)
        path, body = json.loads(text)
        return path, body

    async def send(
        self, key: tuple[str, str], token: str | None, *, missing: bool = False
    ) -> httpx.Response:
        """``key``'s probe request with ``token`` (none at all when None)."""
        path, body = self.fill(MATRIX[key], missing=missing)
        # The platform's client carries the admin's PAT by default: replace or drop it.
        request = self.client.build_request(key[0], path, json=body, headers=as_(token or "-"))
        if token is None:
            del request.headers["Authorization"]
        return await self.client.send(request)


def as_(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def open_session(client: httpx.AsyncClient, username: str, password: str) -> str:
    response = await client.post("/v1/sessions", json={"username": username, "password": password})
    assert response.status_code == 201, response.text
    return str(response.json()["token"])


async def mint(client: httpx.AsyncClient, session: str, scopes: list[str]) -> str:
    response = await client.post(
        "/v1/tokens", json={"label": "matrix", "scopes": scopes}, headers=as_(session)
    )
    assert response.status_code == 201, response.text
    token = str(response.json()["token"])
    assert token.startswith("bw_live_pat_")
    return token


async def new_account(client: httpx.AsyncClient, admin_session: str, username: str) -> str:
    made = await client.post(
        "/v1/accounts",
        json={"username": username, "password": PASSWORD},
        headers=as_(admin_session),
    )
    assert made.status_code == 201, made.text
    return await open_session(client, username, PASSWORD)


async def finished_run(client: httpx.AsyncClient, token: str, model: FakeOpenAIServer) -> str:
    launched = await client.post(
        "/v1/runs",
        json={
            "benchmark": "GSM8K",
            "sut": {"model": "m", "provider": "openai_compatible", "api_base": model.base_url},
            "metadata": {"limit": 1},
        },
        headers=as_(token),
    )
    assert launched.status_code == 201, launched.text
    run_id = str(launched.json()["id"])
    for _ in range(1200):
        run = (await client.get(f"/v1/runs/{run_id}", headers=as_(token))).json()
        if run.get("status") in ("ok", "error"):
            assert run["status"] == "ok", run
            return run_id
        await asyncio.sleep(0.1)
    raise TimeoutError(f"run {run_id} never finished")


@pytest.fixture(scope="module")
def http_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FastAPI]:
    """The gateway's HTTP app as the platform builds it (not serving)."""
    service = GatewayService(Settings(data_dir=tmp_path_factory.mktemp("routes")))
    yield service.http
    service.app.close()
    service.views.close()


@pytest.fixture(scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    model = FakeOpenAIServer().start()
    data_dir: Path = tmp_path_factory.mktemp("matrix")
    platform = await Platform(platform_settings(data_dir, None, None)).start()
    try:
        client = platform.client
        assert client
        creds = json.loads((data_dir / "credentials.json").read_text())
        admin_session = await open_session(
            client, creds["login"]["username"], creds["login"]["password"]
        )
        alice_session = await new_account(client, admin_session, "alice")
        bob_session = await new_account(client, admin_session, "bob")
        alice = await mint(client, alice_session, list(NON_ADMIN_SCOPES))
        bob_pat = await mint(client, bob_session, list(NON_ADMIN_SCOPES))

        run_id = await finished_run(client, alice, model)
        tasks = (await client.get(f"/v1/runs/{run_id}/tasks", headers=as_(alice))).json()
        secret = await client.post(
            "/v1/secrets",
            json={
                "name": "matrix-key",
                "value": "sk-matrix-" + "7" * 32,
                "rules": [{"host_pattern": "api.matrix-a.example"}],
            },
            headers=as_(alice),
        )
        assert secret.status_code == 201, secret.text
        policy = (await client.get("/v1/host-policy", headers=as_(alice))).json()
        assert ("api.matrix-a.example", "allow") in {
            (r["pattern"], r["action"]) for r in policy["rules"]
        }
        hook = await client.post(
            "/v1/webhooks",
            json={"url": "https://hooks.matrix-a.invalid/h", "events": ["run.finished"]},
            headers=as_(alice),
        )
        assert hook.status_code == 201, hook.text
        sent = await client.post(f"/v1/webhooks/{hook.json()['id']}/test", headers=as_(alice))
        assert sent.status_code == 202, sent.text
        topup = await client.post(
            "/v1/billing/topups", json={"amount_cents": 500}, headers=as_(alice)
        )
        assert topup.status_code == 201, topup.text
        await mint(client, alice_session, ["billing:read"])
        listed = (await client.get("/v1/tokens", headers=as_(alice_session))).json()["data"]
        token_id = str(next(t["id"] for t in listed if t["scopes"] == ["billing:read"]))

        bm = await client.post("/v1/benchmarks", json={"name": "Matrix"}, headers=as_(alice))
        assert bm.status_code == 201, bm.text
        bm_id = str(bm.json()["id"])
        sub = await client.post(
            f"/v1/benchmarks/{bm_id}/subsets",
            json={"slug": "v1", "tasks": [{"task_id": "t0"}]},
            headers=as_(alice),
        )
        assert sub.status_code == 201, sub.text
        impl = await client.post(
            "/v1/impls",
            json={"subset": sub.json()["id"], "code": "PROBE = 0\n"},
            headers=as_(alice),
        )
        assert impl.status_code == 201, impl.text
        built = await client.post(
            "/v1/build/subsets",
            json={"benchmark": bm_id, "slug": "matrix-built", "tasks": [{"task_id": "t0"}]},
            headers=as_(alice),
        )
        assert built.status_code == 201, built.text
        missing_bm = f"bm_{uuid.uuid4()}"

        real = {
            # An impl id holds its benchmark's: replaced first, so the benchmark's stays put.
            "impl": str(impl.json()["id"]),
            "bm": bm_id,
            "sub": str(sub.json()["id"]),
            "run": run_id,
            "task": str(tasks["data"][0]["id"]),
            "secret": "matrix-key",
            "token": token_id,
            "pattern": "api.matrix-a.example",
            "webhook": str(hook.json()["id"]),
            "delivery": str(sent.json()["id"]),
            "topup": str(topup.json()["id"]),
            "built": "matrix-built",
        }
        missing = {
            "impl": f"{missing_bm}:{'0' * 12}",
            "bm": missing_bm,
            "sub": "sub_" + "0" * 12,
            "run": str(uuid.uuid4()),
            "task": real["task"],  # the run is what is missing
            "secret": "matrix-nop",
            "token": "0" * len(token_id),
            "pattern": "api.matrix-z.example",
            "webhook": "whk_" + "0" * 24,
            "delivery": "whd_" + "0" * 24,
            "topup": "top_" + "0" * (len(real["topup"]) - 4),
            "built": "matrix-bxilt",
        }
        assert all(len(real[k]) == len(missing[k]) for k in real)
        yield World(
            platform=platform,
            client=client,
            admin_session=admin_session,
            admin_pat=platform.token,
            alice_session=alice_session,
            bob_session=bob_session,
            bob_pat=bob_pat,
            real=real,
            missing=missing,
        )
    finally:
        await platform.shutdown()
        model.stop()


def problem(response: httpx.Response) -> dict[str, Any]:
    assert response.headers["content-type"].startswith("application/problem+json"), (
        response.headers,
        response.text,
    )
    body: dict[str, Any] = response.json()
    assert body["status"] == response.status_code
    return body


def test_every_served_route_is_in_the_matrix(http_app: FastAPI) -> None:
    served = served_routes(http_app)
    unlisted = sorted(served - set(MATRIX))
    stale = sorted(set(MATRIX) - served)
    assert not unlisted, f"routes with no entry in MATRIX (say what guards them): {unlisted}"
    assert not stale, f"MATRIX entries for routes the gateway does not serve: {stale}"


@pytest.mark.parametrize("key", list(MATRIX), ids=ROUTE_IDS)
async def test_without_a_credential(world: World, key: tuple[str, str]) -> None:
    entry = MATRIX[key]
    response = await world.send(key, None, missing=entry.destructive)
    if entry.need == PUBLIC:
        assert response.status_code < 400, response.text
        return
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"] == "Bearer"
    problem(response)
    # A token nobody minted is no better than none.
    forged = await world.send(key, "bw_live_pat_" + "x" * 40, missing=entry.destructive)
    assert forged.status_code == 401, forged.text


@pytest.mark.parametrize("key", list(MATRIX), ids=ROUTE_IDS)
async def test_without_what_it_needs_is_403_naming_it(world: World, key: tuple[str, str]) -> None:
    entry = MATRIX[key]
    refusals: list[tuple[str, httpx.Response]] = []
    if entry.need in (PUBLIC, AUTHENTICATED):
        pytest.skip(f"{entry.need}: nothing beyond a credential to lack")
    elif entry.need == SESSION:
        # A PAT never mints, lists or revokes PATs, not even an admin's with every scope.
        every = await world.pat(ALL_SCOPES)
        refusals.append(("session", await world.send(key, every, missing=True)))
    elif entry.need == ADMIN_SESSION:
        lacking = await world.pat(NON_ADMIN_SCOPES)
        refusals.append((ADMIN, await world.send(key, lacking)))
        refusals.append((ADMIN, await world.send(key, world.alice_session)))
        admin_pat = await world.pat((ADMIN,))
        refusals.append(("session", await world.send(key, admin_pat)))
    else:
        # Every scope there is but the one it needs (admin would grant it).
        others = tuple(s for s in NON_ADMIN_SCOPES if s != entry.need)
        lacking = await world.pat(others)
        refusals.append((entry.need, await world.send(key, lacking, missing=entry.destructive)))
    for named, response in refusals:
        assert response.status_code == 403, (named, response.text)
        body = problem(response)
        assert named in f"{body.get('title')} {body.get('detail')}", (named, body)
        if named == "session":
            assert body["code"] == "session_required", body
        else:
            assert body["code"] == "missing_scope" and body["field"] == "scope", body


@pytest.mark.parametrize("key", list(MATRIX), ids=ROUTE_IDS)
async def test_with_only_what_it_needs_gets_past_the_check(
    world: World, key: tuple[str, str]
) -> None:
    entry = MATRIX[key]
    if entry.need == PUBLIC:
        credential = None
    elif entry.need == AUTHENTICATED:
        credential = await world.pat(("billing:read",))
    elif entry.need == SESSION:
        credential = world.alice_session
    elif entry.need == ADMIN_SESSION:
        credential = world.admin_session
    else:
        credential = await world.pat((entry.need,))
    response = await world.send(key, credential, missing=entry.destructive)
    assert response.status_code not in (401, 403), response.text
    assert response.status_code < 500, response.text


@pytest.mark.parametrize("key", OWNED, ids=OWNED_IDS)
async def test_another_accounts_resource_is_missing(world: World, key: tuple[str, str]) -> None:
    """404, and the same bytes as for an id that never existed (the id aside)."""
    entry = MATRIX[key]
    if entry.need in (SESSION, ADMIN_SESSION):
        others = {"bob": world.bob_session, "admin": world.admin_session}
    else:
        others = {"bob": world.bob_pat, "admin": world.admin_pat}
    for who, credential in others.items():
        theirs = await world.send(key, credential)
        nothing = await world.send(key, credential, missing=True)
        assert theirs.status_code == 404, (who, theirs.text)
        assert nothing.status_code == 404, (who, nothing.text)
        problem(theirs)
        seen = theirs.content
        for name, value in world.real.items():
            seen = seen.replace(value.encode(), world.missing[name].encode())
        assert seen == nothing.content, (who, theirs.text, nothing.text)
        skip = {"date"}
        assert {k: v for k, v in theirs.headers.items() if k not in skip} == {
            k: v for k, v in nothing.headers.items() if k not in skip
        }, who


async def test_listings_show_only_the_callers_own(world: World) -> None:
    client, bob = world.client, world.bob_pat
    runs = (await client.get("/v1/runs", headers=as_(bob))).json()["data"]
    assert world.real["run"] not in {r["id"] for r in runs}
    assert (await client.get("/v1/secrets", headers=as_(bob))).json()["data"] == []
    policy = (await client.get("/v1/host-policy", headers=as_(bob))).json()
    assert world.real["pattern"] not in {r["pattern"] for r in policy["rules"]}
    assert (await client.get("/v1/blocked-hosts", headers=as_(bob))).json()["data"] == []
    tokens = (await client.get("/v1/tokens", headers=as_(world.bob_session))).json()["data"]
    assert world.real["token"] not in {t["id"] for t in tokens}
    benchmarks = (await client.get("/v1/benchmarks", headers=as_(bob))).json()["data"]
    assert world.real["bm"] not in {b["id"] for b in benchmarks}
    me = (await client.get("/v1/me", headers=as_(bob))).json()
    alice_me = (await client.get("/v1/me", headers=as_(await world.pat(("runs:read",))))).json()
    assert me["account"] != alice_me["account"]
    # A's resources are all still there: nothing above reached them.
    alice = await world.pat(NON_ADMIN_SCOPES)
    assert (
        await client.get(f"/v1/runs/{world.real['run']}", headers=as_(alice))
    ).status_code == 200
    assert (await client.get("/v1/secrets/matrix-key", headers=as_(alice))).status_code == 200
    policy = (await client.get("/v1/host-policy", headers=as_(alice))).json()
    assert world.real["pattern"] in {r["pattern"] for r in policy["rules"]}
    tokens = (await client.get("/v1/tokens", headers=as_(world.alice_session))).json()["data"]
    assert any(t["id"] == world.real["token"] and not t["revoked"] for t in tokens)
