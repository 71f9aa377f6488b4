"""The gateway in-process, through httpx's ASGI transport: auth, scopes, problems."""

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from faststream.nats import NatsBroker

from benchwright_gateway.app import GatewayService
from benchwright_shared.settings import Settings

pytestmark = pytest.mark.connected


@pytest.fixture
async def gateway(tmp_path: Path, embedded_nats: str) -> AsyncIterator[GatewayService]:
    service = GatewayService(Settings(data_dir=tmp_path, nats_url=embedded_nats))
    broker = NatsBroker(embedded_nats, logger=None)
    await broker.connect()
    service.ctx.broker = broker  # no registry, no orchestrator: only this service
    yield service
    await broker.stop()
    service.app.close()
    service.views.close()


def client(service: GatewayService, token: str | None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=service.http), base_url="http://gw", headers=headers
    )


BODY = {"benchmark": "GSM8K", "sut": {"model": "m", "provider": "local"}}


async def test_tokens_are_required_and_checked(gateway: GatewayService) -> None:
    async with client(gateway, None) as anonymous:
        response = await anonymous.get("/v1/runs")
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.headers["content-type"].startswith("application/problem+json")
    async with client(gateway, "bw_live_pat_not-a-real-one") as forged:
        assert (await forged.get("/v1/runs")).status_code == 401


async def test_a_missing_scope_is_403_naming_it(gateway: GatewayService) -> None:
    token = gateway.app.mint_token("acct_x", ["runs:read"], "read only")
    assert token.startswith("bw_live_pat_")
    async with client(gateway, token) as reader:
        assert (await reader.get("/v1/runs")).json()["data"] == []
        response = await reader.post("/v1/runs", json=BODY)
    assert response.status_code == 403
    assert "runs:write" in response.json()["detail"]


async def test_a_service_that_is_not_running_is_a_503_problem(gateway: GatewayService) -> None:
    token = gateway.app.mint_token("acct_x", ["runs:read", "runs:write"], "writer")
    async with client(gateway, token) as writer:
        response = await writer.post("/v1/runs", json=BODY)
    assert response.status_code == 503
    assert response.json()["code"] == "service_unavailable"
    assert response.headers["retry-after"] == "1"


async def test_tokens_are_stored_only_as_hashes(gateway: GatewayService) -> None:
    token = gateway.app.mint_token("acct_x", ["runs:read"], "t")
    stored = b"".join(
        bytes(n.state) for n in gateway.app.recorder.select_notifications(start=None, limit=100)
    )
    assert token.encode() not in stored
    assert gateway.app.verify(token) is not None


async def test_a_method_the_route_does_not_take_is_405_with_allow(
    gateway: GatewayService,
) -> None:
    token = gateway.app.mint_token("acct_x", ["runs:read"], "reader")
    async with client(gateway, token) as reader:
        response = await reader.put("/v1/runs")
    assert response.status_code == 405
    assert response.headers["content-type"].startswith("application/problem+json")
    assert set(response.headers["allow"].replace(" ", "").split(",")) >= {"GET", "POST"}


async def test_the_published_schema_says_what_the_api_answers(gateway: GatewayService) -> None:
    async with client(gateway, None) as anonymous:
        document = (await anonymous.get("/openapi.json")).json()
    problem = "application/problem+json"
    operations = [
        (path, method, op)
        for path, item in document["paths"].items()
        for method, op in item.items()
    ]
    assert len(operations) > 50
    for path, method, op in operations:
        responses = op["responses"]
        assert "422" not in responses, (method, path)
        for code in ("400", "401", "403", "500", "503", "504", "default"):
            assert problem in responses[code]["content"], (method, path, code)
        if method in ("post", "put", "patch"):
            assert "413" in responses, (method, path)
        if "{" in path:
            assert "404" in responses, (method, path)
    media = {
        ("/v1/billing/export", "get"): "text/csv",
        ("/v1/runs/{run_id}/stream", "get"): "text/event-stream",
        ("/v1/impls/{impl_id}/code", "get"): "text/x-python",
        ("/v1/runs/{run_id}/report", "get"): "text/html",
    }
    for (path, method), kind in media.items():
        assert kind in document["paths"][path][method]["responses"]["200"]["content"], path
    assert "HTTPValidationError" not in document["components"]["schemas"]


HARBOR_APT = {
    "harness": "harbor",
    "sut": {"model": "m", "provider": "local"},
    "metadata": {
        "harbor_harness": {
            "dataset": "mine",
            "files": {
                "t/task.toml": "",
                "t/instruction.md": "Say hi.",
                "t/tests/test.sh": "echo 1 > /logs/verifier/reward.txt",
                "t/environment/Dockerfile": "FROM debian:12\nRUN apt-get install -y jq\n",
            },
        }
    },
}


async def test_a_harbor_launch_is_refused_as_a_problem_naming_the_file(
    gateway: GatewayService,
) -> None:
    token = gateway.app.mint_token("acct_x", ["runs:read", "runs:write"], "writer")
    async with client(gateway, token) as writer:
        response = await writer.post("/v1/runs", json=HARBOR_APT)
    assert response.status_code == 422
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["field"] == 'metadata.harbor_harness.files["t/environment/Dockerfile"]'
    assert problem["code"] == "unsupported_dockerfile_step"
    assert "line 2" in problem["detail"] and "RUN apt-get" in problem["detail"]


@pytest.mark.parametrize("declared", [False, True])
async def test_a_600_mb_launch_is_413_without_being_read_whole(
    gateway: GatewayService, declared: bool
) -> None:
    token = gateway.app.mint_token("acct_x", ["runs:read", "runs:write"], "writer")
    chunk = b"x" * (1 << 20)
    pulled = 0

    async def enormous() -> AsyncIterator[bytes]:
        nonlocal pulled
        yield b'{"harness": "harbor", "metadata": {"harbor_harness": {"files": {"big": "'
        for _ in range(600):
            pulled += 1
            yield chunk
        yield b'"}}}}'

    # Without a length the body is chunked: the cap is found by reading, not told.
    headers = {"content-type": "application/json"}
    if declared:
        headers["content-length"] = str(600 * len(chunk) + 100)
    async with client(gateway, token) as writer:
        response = await writer.post("/v1/runs", content=enormous(), headers=headers)
    assert response.status_code == 413
    assert response.headers["content-type"].startswith("application/problem+json")
    assert (response.json()["field"], response.json()["code"]) == ("body", "payload_too_large")
    # The cap (512 KiB) and what the guard drains for the answer (64 MiB) at most.
    assert pulled <= 66
