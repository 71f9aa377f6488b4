"""``/v1/runs/{id}/labels`` and ``/agreement`` in-process: scopes, and bad input refused
as problem+json naming the field, before anything is sent."""

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from faststream.nats import NatsBroker

from benchwright_gateway.app import GatewayService
from benchwright_shared.settings import Settings
from tests.gateway.test_labels import ACCOUNT, RUN, _run_log

pytestmark = pytest.mark.connected


@pytest.fixture
async def gateway(tmp_path: Path, embedded_nats: str) -> AsyncIterator[GatewayService]:
    service = GatewayService(Settings(data_dir=tmp_path, nats_url=embedded_nats))
    broker = NatsBroker(embedded_nats, logger=None)
    await broker.connect()
    service.ctx.broker = broker  # no orchestrator: a label that passes the checks goes nowhere
    service.views.store.apply_many("runs", list(enumerate(_run_log(), start=1)))
    yield service
    await broker.stop()
    service.app.close()
    service.views.close()


def client(service: GatewayService, scopes: list[str], account: str = ACCOUNT) -> httpx.AsyncClient:
    token = service.app.mint_token(account, scopes, "labeller")
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=service.http),
        base_url="http://gw",
        headers={"Authorization": f"Bearer {token}"},
    )


async def test_labelling_needs_its_own_scope_and_reading_needs_runs_read(
    gateway: GatewayService,
) -> None:
    async with client(gateway, ["runs:read", "runs:write"]) as writer:
        refused = await writer.post(f"/v1/runs/{RUN}/labels", json={"task": 0, "grade": "pass"})
        assert (await writer.get(f"/v1/runs/{RUN}/labels")).json()["data"] == []
        report = (await writer.get(f"/v1/runs/{RUN}/agreement")).json()
    assert refused.status_code == 403
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert "runs:label" in refused.json()["detail"]
    assert report["scale"] == "pass_fail" and report["labels"] == 0
    assert report["corrected"]["corrected"] is False
    async with client(gateway, ["runs:label"]) as labeller:
        assert (await labeller.get(f"/v1/runs/{RUN}/agreement")).status_code == 403


@pytest.mark.parametrize(
    ("body", "status", "field_name"),
    [
        ({"task": 40, "grade": "pass"}, 404, "task"),
        ({"task": "t9_0", "grade": "pass"}, 404, "task"),
        ({"task": 1, "grade": "maybe"}, 422, "grade"),
        ({"task": 1, "grade": "pass", "trial": 3}, 422, "trial"),
        ({"task": 1, "grade": "pass", "note": "x" * 4001}, 400, "note"),
        ({"task": 1, "grade": "pass", "trial": -1}, 400, "trial"),
        ({"task": 1}, 400, "grade"),
        ({"task": True, "grade": "pass"}, 400, "task"),
        ({"task": "", "grade": "pass"}, 400, "task"),
        ({"task": 1, "grade": "pass", "by": "someone else"}, 400, "by"),
    ],
)
async def test_bad_labels_are_problems_naming_the_field(
    gateway: GatewayService, body: dict[str, object], status: int, field_name: str
) -> None:
    async with client(gateway, ["runs:label"]) as labeller:
        response = await labeller.post(f"/v1/runs/{RUN}/labels", json=body)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["field"] == field_name


async def test_another_accounts_run_is_not_found(gateway: GatewayService) -> None:
    async with client(gateway, ["runs:label", "runs:read"], account="acct_b") as stranger:
        posted = await stranger.post(f"/v1/runs/{RUN}/labels", json={"task": 0, "grade": "pass"})
        listed = await stranger.get(f"/v1/runs/{RUN}/labels")
    assert posted.status_code == listed.status_code == 404
    assert posted.json()["field"] == "run_id"
