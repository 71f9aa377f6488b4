"""``/v1/build/subsets`` in-process (ASGI) against a real registry on a private nats-server:
scopes, owner-only edits that answer others exactly like missing ones, the status
codes of each change, and a pinned launch that names a retired subset."""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from faststream.nats import NatsBroker

from benchwright_gateway.app import GatewayService
from benchwright_registry.app import RegistryService
from benchwright_shared.bus import MIDDLEWARES, declare_streams, jetstream
from benchwright_shared.settings import Settings
from tests.conftest import reset_nats

pytestmark = pytest.mark.connected

ALICE, BOB, ADMIN = "acct_alice", "acct_bob", "acct_admin"
SUMS = [
    {"task_id": f"sum-{a}-{b}", "input": {"a": a, "b": b}, "expected": str(a + b)}
    for a, b in [(2, 3), (7, 5), (13, 29)]
]
RECIPE = {"prompt_template": "What is {input.a} + {input.b}?", "extraction": "last_number"}
PUBLISH = ["registry:read", "registry:publish", "runs:read", "runs:write"]


@pytest.fixture
async def services(
    tmp_path: Path, embedded_nats: str
) -> AsyncIterator[tuple[GatewayService, RegistryService]]:
    await reset_nats(embedded_nats)
    settings = Settings(data_dir=tmp_path, nats_url=embedded_nats)
    registry = RegistryService(settings)
    gateway = GatewayService(settings)
    broker = NatsBroker(embedded_nats, logger=None, middlewares=MIDDLEWARES)
    broker.include_router(registry.router)
    await broker.connect()
    await declare_streams(jetstream(broker))
    await broker.start()
    await registry.start(broker)
    gateway.ctx.broker = broker  # the gateway's HTTP side only
    yield gateway, registry
    await registry.stop()
    await broker.stop()
    gateway.app.close()
    gateway.views.close()


def client(gateway: GatewayService, account: str, scopes: list[str]) -> httpx.AsyncClient:
    token = gateway.app.mint_token(account, scopes, "test")
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=gateway.http),
        base_url="http://gw",
        headers={"Authorization": f"Bearer {token}"},
    )


async def built(alice: httpx.AsyncClient) -> dict[str, Any]:
    bm = await alice.post("/v1/benchmarks", json={"name": "Sums"})
    assert bm.status_code == 201, bm.text
    made = await alice.post(
        "/v1/build/subsets",
        json={
            "benchmark": bm.json()["id"],
            "slug": "sums",
            "tasks": SUMS,
            "recipe": RECIPE,
            "note": "first cut",
        },
    )
    assert made.status_code == 201, made.text
    body: dict[str, Any] = made.json()
    return body


async def test_create_read_and_edit(services: tuple[GatewayService, RegistryService]) -> None:
    gateway, _ = services
    async with client(gateway, ALICE, PUBLISH) as alice:
        view = await built(alice)
        assert view["object"] == "built_subset" and view["slug"] == "sums"
        assert view["impl_id"].startswith(view["subset_id"] + ":")
        again = await alice.post(
            "/v1/build/subsets",
            json={
                "benchmark": view["benchmark_id"],
                "slug": "sums",
                "tasks": SUMS,
                "recipe": RECIPE,
                "note": "first cut",
            },
        )
        assert again.status_code == 200 and again.json()["subset_id"] == view["subset_id"]

        shown = await alice.get("/v1/build/subsets/sums/recipe")
        assert shown.status_code == 200 and shown.json()["config"]["run_timeout"] == 300
        by_id = await alice.get(f"/v1/build/subsets/{view['subset_id']}/recipe")
        assert by_id.json() == shown.json()

        edited = await alice.patch(
            "/v1/build/subsets/sums/recipe",
            json={"config": {"run_timeout": 900, "trials": 3}, "note": "slow boot"},
        )
        assert edited.status_code == 200, edited.text
        body = edited.json()
        assert body["changed"] and body["subset_id"] == view["subset_id"]
        assert body["impl_id"] != view["impl_id"]
        assert body["history"][-1]["note"] == "slow boot"
        assert body["history"][-1]["changes"] == {"run_timeout": [300, 900], "trials": [1, 3]}
        repeat = await alice.patch(
            "/v1/build/subsets/sums/recipe", json={"config": {"run_timeout": 900}}
        )
        assert repeat.status_code == 200 and not repeat.json()["changed"]

        bad = await alice.patch("/v1/build/subsets/sums/recipe", json={"config": {"trials": 0}})
        assert bad.status_code == 400 and bad.json()["field"] == "config.trials"
        empty = await alice.patch("/v1/build/subsets/sums/recipe", json={"config": {}})
        assert empty.status_code == 400

        forked = await alice.patch(
            "/v1/build/subsets/sums/samples",
            json={
                "upsert": [{"task_id": "sum-1-1", "input": {"a": 1, "b": 1}, "expected": "2"}],
                "remove": ["sum-2-3"],
                "note": "q1 was trivial",
            },
        )
        assert forked.status_code == 200, forked.text
        new = forked.json()
        assert new["changed"] and new["subset_id"] != view["subset_id"]
        assert new["predecessor_id"] == view["subset_id"] and new["config"]["trials"] == 3
        old = (await alice.get(f"/v1/build/subsets/{view['subset_id']}/recipe")).json()
        assert old["retired"] and old["successor_id"] == new["subset_id"]
        stale = await alice.patch(
            f"/v1/build/subsets/{view['subset_id']}/recipe", json={"config": {"trials": 1}}
        )
        assert stale.status_code == 409 and stale.json()["code"] == "subset_retired"

        # A pinned launch of the retired subset is refused before anything is made.
        launch = await alice.post(
            "/v1/runs",
            json={
                "benchmark": view["benchmark_id"],
                "subset": view["subset_id"],
                "sut": {"model": "m", "provider": "local"},
            },
        )
        assert launch.status_code == 409, launch.text
        assert launch.json()["code"] == "subset_retired"
        assert new["subset_id"] in launch.json()["detail"]


async def test_scopes_and_owners(services: tuple[GatewayService, RegistryService]) -> None:
    gateway, _ = services
    async with client(gateway, ALICE, PUBLISH) as alice:
        view = await built(alice)
    sub = view["subset_id"]
    missing = "sub_" + "0" * 12

    async with client(gateway, ALICE, ["registry:read"]) as reader:
        assert (await reader.get("/v1/build/subsets/sums/recipe")).status_code == 200
        refused = await reader.patch(
            "/v1/build/subsets/sums/recipe", json={"config": {"trials": 2}}
        )
        assert refused.status_code == 403 and "registry:publish" in refused.json()["detail"]
        made = await reader.post(
            "/v1/build/subsets",
            json={"benchmark": view["benchmark_id"], "slug": "x", "tasks": SUMS},
        )
        assert made.status_code == 403
    async with client(gateway, ALICE, ["registry:publish"]) as writer:
        assert (await writer.get("/v1/build/subsets/sums/recipe")).status_code == 403

    requests: list[tuple[str, str, dict[str, Any] | None]] = [
        ("GET", "/v1/build/subsets/{}/recipe", None),
        ("PATCH", "/v1/build/subsets/{}/recipe", {"config": {"trials": 2}, "note": "mine"}),
        ("PATCH", "/v1/build/subsets/{}/samples", {"remove": ["sum-2-3"]}),
    ]
    async with client(gateway, BOB, PUBLISH) as bob:
        for method, path, body in requests:
            for theirs, nothing in ((sub, missing), ("sums", "sumz")):
                seen = await bob.request(method, path.format(theirs), json=body)
                absent = await bob.request(method, path.format(nothing), json=body)
                assert seen.status_code == absent.status_code == 404, seen.text
                assert seen.content.replace(theirs.encode(), nothing.encode()) == absent.content
                assert seen.headers["content-type"].startswith("application/problem+json")

    # An admin of another account reaches it by id, and is named in its history.
    async with client(gateway, ADMIN, ["admin"]) as admin:
        # A slug is looked up in the caller's own account.
        by_slug = await admin.patch("/v1/build/subsets/sums/recipe", json={"config": {"trials": 2}})
        assert by_slug.status_code == 404
        edited = await admin.patch(
            f"/v1/build/subsets/{sub}/recipe",
            json={"config": {"temperature": 0.5}, "note": "admin fix"},
        )
        assert edited.status_code == 200, edited.text
        assert edited.json()["history"][-1]["by"] == ADMIN
    async with client(gateway, ALICE, PUBLISH) as alice:
        history = (await alice.get("/v1/build/subsets/sums/recipe")).json()["history"]
        assert [h["note"] for h in history] == ["first cut", "admin fix"]
        # Unknown fields are refused, not ignored.
        extra = await alice.patch(
            "/v1/build/subsets/sums/recipe", json={"config": {"trials": 2}, "why": "x"}
        )
        assert extra.status_code == 400 and extra.json()["field"] == "why"
