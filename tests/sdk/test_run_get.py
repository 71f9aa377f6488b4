"""``runs.get(expand=, fields=)``, partial runs, the typed errors the guide's gotchas
raise, and retries that keep a request's idempotency key, from either client."""

from __future__ import annotations

import json

import httpx
import pytest

from benchwright import (
    APIStatusError,
    BadRequestError,
    ConflictError,
    PaymentRequiredError,
    PreconditionFailedError,
    Run,
    UnprocessableEntityError,
)

from .dual import Dual, client_fixture  # noqa: F401 (the ``client`` fixture)
from .fakes import RUN_ID, SUMMARY, FakeGateway, event, problem, run_body

RUN = f"/v1/runs/{RUN_ID}"


async def test_get_sends_expand_and_fields_comma_separated(
    client: Dual, gateway: FakeGateway
) -> None:
    partial = {
        "id": RUN_ID,
        "object": "run",
        "status": "ok",
        "tasks_summary": SUMMARY,
        "artifacts": [
            {
                "id": "art_3",
                "object": "artifact",
                "type": "fetch",
                "event_type": "FetchArtifact",
                "phase": "fetch",
                "version": 1,
                "latest": True,
                "created_at": "2025-01-02T03:04:05Z",
                "media_type": "application/json",
                "size_bytes": 120,
                "sha256": "0" * 64,
                "inherited_from": None,
            }
        ],
        "recent_events": [event(7, "PipelineFinished", status="ok")],
        "blocked_hosts": [],
    }
    gateway.on("GET", RUN, httpx.Response(200, json=partial))
    run = await client(
        "runs.get",
        RUN_ID,
        expand=["tasks_summary", "artifacts", "recent_events", "blocked_hosts"],
        fields=["status"],
    )
    params = gateway.seen("GET", RUN)[0].url.params
    assert params["expand"] == "tasks_summary,artifacts,recent_events,blocked_hosts"
    assert params["fields"] == "status"
    assert run.status == "ok" and run.is_terminal
    assert run.tasks_summary is not None and run.tasks_summary.pass_rate == pytest.approx(1 / 3)
    assert run.artifacts is not None and run.artifacts[0].type == "fetch"
    assert run.recent_events is not None and run.recent_events[0].data.status == "ok"
    assert run.blocked_hosts == []
    # What the server did not send stays unset, rather than pretending to a value.
    assert run.visibility is None and run.model is None
    assert run.model_fields_set >= {"id", "status", "tasks_summary"}
    assert "visibility" not in run.model_fields_set


async def test_get_without_options_sends_no_parameters(client: Dual, gateway: FakeGateway) -> None:
    gateway.on("GET", RUN, httpx.Response(200, json=run_body("ok")))
    run = await client("runs.get", RUN_ID, expand="tasks_summary")
    assert gateway.seen("GET", RUN)[0].url.params == httpx.QueryParams({"expand": "tasks_summary"})
    assert run.tasks_summary is None  # asked for, but this server did not expand it
    await client("runs.get", RUN_ID)
    assert not gateway.seen("GET", RUN)[1].url.params


async def test_unknown_field_is_a_bad_request_naming_it(client: Dual, gateway: FakeGateway) -> None:
    gateway.on(
        "GET",
        RUN,
        problem(
            400,
            "unknown fields",
            "fields: 'colour' is not one of id, object, status",
            field="fields",
            code="invalid_argument",
        ),
    )
    with pytest.raises(BadRequestError) as info:
        await client("runs.get", RUN_ID, fields=["status", "colour"])
    assert (info.value.field, info.value.code) == ("fields", "invalid_argument")
    assert "'colour'" in str(info.value)


def test_a_partial_run_parses() -> None:
    run = Run.model_validate({"id": RUN_ID, "object": "run", "cost": None, "links": None})
    assert run.status is None and not run.is_terminal
    assert run.cost.billed is None and run.links.dashboard is None


def test_a_run_whose_cost_is_unknown_still_parses() -> None:
    # The gateway sends ``cost: null`` while billing cannot be reached.
    run = Run.model_validate(run_body("ok", cost=None))
    assert run.status == "ok" and run.cost.incurred is None


# -- typed errors ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("status", "code", "cls"),
    [
        (402, "insufficient_balance", PaymentRequiredError),
        (409, "subset_frozen", ConflictError),
        (412, "precondition_failed", PreconditionFailedError),
        (422, "invalid_argument", UnprocessableEntityError),
    ],
)
async def test_guide_gotchas_raise_typed_errors(
    client: Dual, gateway: FakeGateway, status: int, code: str, cls: type[APIStatusError]
) -> None:
    gateway.on("PATCH", RUN, problem(status, "refused", "because", field="If-Match", code=code))
    with pytest.raises(cls) as info:
        await client("runs.update", RUN_ID, visibility="public", if_match="etag-1")
    assert (info.value.status, info.value.code, info.value.field) == (status, code, "If-Match")
    # Refusals are final: only 429 and 5xx are worth repeating.
    assert len(gateway.seen("PATCH", RUN)) == 1


def test_unprocessable_is_still_a_bad_request() -> None:
    assert issubclass(UnprocessableEntityError, BadRequestError)


async def test_validation_errors_are_listed(client: Dual, gateway: FakeGateway) -> None:
    errors = [{"field": "sut.model", "message": "required"}, {"field": "x", "message": "extra"}]
    gateway.on(
        "POST", "/v1/runs", problem(400, "invalid request", "sut.model: required", errors=errors)
    )
    with pytest.raises(BadRequestError) as info:
        await client("runs.launch", benchmark="GSM8K")
    assert info.value.errors == errors


# -- retries keep the key --------------------------------------------------------------------
async def test_fork_retries_a_5xx_with_the_same_generated_key(
    client: Dual, gateway: FakeGateway, sleeps: list[float]
) -> None:
    path = f"{RUN}/fork"
    gateway.on(
        "POST",
        path,
        problem(502, "bad gateway", "restarting"),
        httpx.Response(429, headers={"Retry-After": "2"}),
        httpx.Response(201, json=run_body()),
    )
    await client("runs.fork", RUN_ID, description="fix the scorer", from_phase="atomize")
    attempts = gateway.seen("POST", path)
    assert len(attempts) == 3
    assert len({r.headers["idempotency-key"] for r in attempts}) == 1
    assert {r.content for r in attempts} == {attempts[0].content}
    assert sleeps[1] == 2.0


async def test_host_policy_add_retries_with_its_key(
    client: Dual, gateway: FakeGateway, sleeps: list[float]
) -> None:
    gateway.on(
        "PATCH",
        "/v1/host-policy",
        problem(503, "unavailable", "vault restarting"),
        httpx.Response(200, json={"default_mode": "allow", "rules": []}),
    )
    await client("host_policy.add", "api.example.com", idempotency_key="allow-1")
    attempts = gateway.seen("PATCH", "/v1/host-policy")
    assert [r.headers["idempotency-key"] for r in attempts] == ["allow-1", "allow-1"]


async def test_an_unkeyed_create_is_not_retried_on_5xx(
    client: Dual, gateway: FakeGateway, sleeps: list[float]
) -> None:
    gateway.on("POST", "/v1/secrets", problem(500, "boom", "vault down"))
    with pytest.raises(APIStatusError):
        await client("secrets.create", "K", "v")
    assert len(gateway.seen("POST", "/v1/secrets")) == 1 and sleeps == []


async def test_an_idempotency_key_is_never_a_body_field(client: Dual, gateway: FakeGateway) -> None:
    ok = httpx.Response(200, json={"default_mode": "allow", "rules": []})
    gateway.on("PATCH", "/v1/host-policy", ok)
    gateway.on("POST", "/v1/secrets", httpx.Response(201, json={"name": "K"}))
    gateway.on("PATCH", "/v1/secrets/K", httpx.Response(200, json={"name": "K"}))
    gateway.on("POST", "/v1/runs", httpx.Response(201, json=run_body()))
    await client("host_policy.add", "a.example", idempotency_key="k")
    await client("secrets.create", "K", "v", idempotency_key="k")
    await client("secrets.update", "K", value="w", idempotency_key="k")
    await client("runs.launch", benchmark="GSM8K", idempotency_key="k")
    for request in gateway.requests:
        assert "idempotency_key" not in json.loads(request.content), request.url
        assert request.headers["idempotency-key"] == "k"


async def test_a_429_is_retried_even_without_a_key(
    client: Dual, gateway: FakeGateway, sleeps: list[float]
) -> None:
    # A 429 was turned away unprocessed, so repeating even a plain POST is safe.
    gateway.on(
        "POST",
        "/v1/tokens",
        httpx.Response(429, headers={"Retry-After": "1"}),
        httpx.Response(201, json={"token": "bw_live_pat_x"}),
    )
    assert (await client("tokens.create", ["runs:read"])).token == "bw_live_pat_x"
    assert len(gateway.seen("POST", "/v1/tokens")) == 2 and sleeps == [1.0]
