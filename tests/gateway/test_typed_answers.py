"""The account, registry and webhook routes declare what they answer.

A route without a response model publishes a bare object in the OpenAPI, and the
TypeScript SDK generated from it knows nothing of the answer; these hold every
route of those routers to a pydantic model from ``benchwright_shared.api``.
"""

from datetime import UTC, datetime
from typing import Any, get_args, get_origin

import pytest
from fastapi.routing import APIRoute
from pydantic import BaseModel

from benchwright_gateway.api import (
    access,
    billing,
    build,
    registry,
    registry_impls,
    registry_reads,
    secrets,
    settings,
    webhooks,
)
from benchwright_shared.api.account import Balance, Topup
from benchwright_shared.api.webhooks import Webhook
from benchwright_shared.contracts.base import Problem
from benchwright_shared.contracts.billing import BalanceView

ROUTERS = (
    access,
    billing,
    build,
    registry,
    registry_impls,
    registry_reads,
    secrets,
    settings,
    webhooks,
)
# Routes that answer something other than JSON: CSV, Python source (or JSON on request).
NOT_JSON = {("GET", "/v1/billing/export"), ("GET", "/v1/impls/{impl_id}/code")}


def routes() -> list[tuple[str, APIRoute]]:
    return [
        (module.__name__.rsplit(".", 1)[-1], route)
        for module in ROUTERS
        for route in module.router.routes
        if isinstance(route, APIRoute)
    ]


def models_in(annotation: Any) -> list[Any]:
    """The members of a union, or the annotation itself."""
    return list(get_args(annotation)) if get_origin(annotation) is not None else [annotation]


@pytest.mark.parametrize(
    ("module", "route"), routes(), ids=[f"{m}:{r.path}:{sorted(r.methods)}" for m, r in routes()]
)
def test_every_route_answers_a_declared_model(module: str, route: APIRoute) -> None:
    (method,) = route.methods
    if (method, route.path) in NOT_JSON:
        return
    members = models_in(route.response_model)
    assert members and all(isinstance(m, type) and issubclass(m, BaseModel) for m in members), (
        f"{module} {method} {route.path} answers {route.response_model!r}, not a model"
    )
    for model in members:
        assert model.__module__.startswith("benchwright_shared.api."), (
            f"{module} {method} {route.path}: {model.__qualname__} is not a shared answer"
        )


@pytest.mark.parametrize("answer", [Balance, Topup])
def test_a_view_that_carries_a_problem_answers_without_it(answer: type[BaseModel]) -> None:
    assert "problem" not in answer.model_json_schema(mode="serialization")["properties"]
    shown = answer.model_validate({"problem": None}).model_dump(mode="json")
    assert "problem" not in shown and shown["object"] == answer.model_fields["object"].default


def test_a_balance_answer_is_the_view_plus_its_object() -> None:
    view = BalanceView(account="acct", problem=Problem(title="x"))
    shown = Balance.model_validate(view.model_dump(exclude={"problem"})).model_dump(mode="json")
    expected = view.model_dump(mode="json", exclude={"problem"})
    assert shown == {**expected, "object": "balance"}


def test_webhook_times_are_written_as_they_always_were() -> None:
    at = datetime.fromtimestamp(1_700_000_000, UTC)
    shown = Webhook(id="wh_1", url="https://x.example", created_at=at).model_dump(mode="json")
    assert shown["created_at"] == at.isoformat() == "2023-11-14T22:13:20+00:00"
    schema = Webhook.model_json_schema(mode="serialization")["properties"]["created_at"]
    assert {"type": "string", "format": "date-time"} in schema["anyOf"]
