"""``/v1/admin`` on its own router: a read model's refusal reaches the caller whole
(status, title, detail, the field at fault and its code), and a rebuild answers the
typed ``ProjectionRebuild``."""

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
import pytest
from fastapi import FastAPI

from benchwright_gateway.api import admin, errors
from benchwright_gateway.api.auth import Principal
from benchwright_shared.contracts import ParkedMessages, RebuildResult
from benchwright_shared.contracts.base import Problem
from benchwright_shared.contracts.queries import ParkedMessage
from benchwright_shared.refusal import Refused

TOKEN = "bw_admin"
BUSY = Refused(409, "rebuild under way", "runs is being rebuilt", field="name", code="busy")


@dataclass
class Views:
    """The gateway's read models as the admin routes see them, answering what we set."""

    problem: Problem | None = None
    asked: list[str] = field(default_factory=list)

    async def rebuild(self, projection: str) -> RebuildResult:
        self.asked.append(projection)
        if self.problem is not None:
            return RebuildResult(projection=projection, problem=self.problem)
        return RebuildResult(projection=projection, applied=12, digest="d1", before_digest="d1")

    async def parked(self, projection: str) -> ParkedMessages:
        if self.problem is not None:
            return ParkedMessages(projection=projection, problem=self.problem)
        parked = ParkedMessage(position=3, error="boom", message="{}", parked_at="2025-01-02")
        return ParkedMessages(projection=projection, data=[parked])


async def verify(token: str) -> Principal | None:
    return Principal("acct_1", ("admin",)) if token == TOKEN else None


@pytest.fixture
async def views() -> Views:
    return Views()


@pytest.fixture
async def client(views: Views) -> AsyncIterator[httpx.AsyncClient]:
    app = FastAPI()
    errors.install(app)
    app.state.ctx = None  # the gateway's own projection answers without the bus
    app.state.verify = verify
    app.state.views = views
    app.include_router(admin.router)
    transport = httpx.ASGITransport(app=app)
    headers = {"authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://gw", headers=headers) as c:
        yield c


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/v1/admin/projections/runs/rebuild"), ("GET", "/v1/admin/projections/runs/parked")],
)
async def test_a_read_models_refusal_keeps_its_field_and_code(
    client: httpx.AsyncClient, views: Views, method: str, path: str
) -> None:
    views.problem = BUSY.problem()
    response = await client.request(method, path)
    assert response.status_code == 409
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert (body["title"], body["detail"]) == ("rebuild under way", "runs is being rebuilt")
    assert (body["field"], body["code"]) == ("name", "busy")


async def test_a_rebuild_and_the_parked_answer_their_types(
    client: httpx.AsyncClient, views: Views
) -> None:
    rebuilt = await client.post("/v1/admin/projections/runs/rebuild")
    assert rebuilt.status_code == 200 and views.asked == ["runs"]
    assert rebuilt.json() == {
        "projection": "runs",
        "applied": 12,
        "digest": "d1",
        "before_digest": "d1",
        "parked": 0,
    }
    parked = (await client.get("/v1/admin/projections/runs/parked")).json()
    assert parked == {
        "object": "list",
        "data": [{"position": 3, "error": "boom", "message": "{}", "parked_at": "2025-01-02"}],
    }


async def test_an_unknown_projection_is_a_404_naming_it(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/admin/projections/nope/rebuild")
    assert response.status_code == 404 and response.json()["field"] == "name"
