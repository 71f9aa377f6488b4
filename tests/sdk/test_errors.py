"""Problem documents become typed exceptions carrying the server's details."""

from __future__ import annotations

import httpx
import pytest

from benchwright import (
    APIConnectionError,
    APIResponseError,
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    Benchwright,
    BenchwrightError,
    ConflictError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
)

from .fakes import RUN_ID, FakeGateway, problem


def test_validation_problem_exposes_field_and_code(bw: Benchwright, gateway: FakeGateway) -> None:
    gateway.on(
        "POST",
        "/v1/runs",
        problem(422, "invalid request", "unknown provider 'nope'", field="sut.provider", code="x"),
    )
    with pytest.raises(BadRequestError) as info:
        bw.runs.launch(benchmark="GSM8K", sut={"model": "m", "provider": "nope"})
    err = info.value
    assert (err.status, err.field, err.code) == (422, "sut.provider", "x")
    assert err.problem["detail"] == "unknown provider 'nope'"
    assert str(err) == "invalid request: unknown provider 'nope' (field: sut.provider)"


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, PermissionDeniedError),
        (404, NotFoundError),
        (409, ConflictError),
        (418, APIStatusError),
        (429, RateLimitError),
        (500, InternalServerError),
        (503, InternalServerError),
    ],
)
def test_status_maps_to_exception_class(
    bw: Benchwright, gateway: FakeGateway, status: int, cls: type[APIStatusError]
) -> None:
    bw._http.policy = type(bw._http.policy)(max_retries=0)
    gateway.on("GET", f"/v1/runs/{RUN_ID}", problem(status, "nope", "because"))
    with pytest.raises(cls) as info:
        bw.runs.get(RUN_ID)
    assert type(info.value) is cls
    assert info.value.status_code == status
    assert isinstance(info.value, BenchwrightError)


def test_non_json_error_body_still_gives_a_readable_error(
    bw: Benchwright, gateway: FakeGateway
) -> None:
    gateway.on("GET", f"/v1/runs/{RUN_ID}", httpx.Response(502, text="<html>Bad gateway</html>"))
    with pytest.raises(InternalServerError) as info:
        bw.runs.get(RUN_ID)
    assert info.value.title == "Bad Gateway"
    assert "<html>Bad gateway</html>" in str(info.value)


def test_unreachable_server_is_a_connection_error(sleeps: list[float]) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    bw = Benchwright(
        api_key="bw_live_pat_x",
        base_url="http://bw.test",
        http_client=httpx.Client(transport=httpx.MockTransport(refuse)),
    )
    bw._http.sleep = sleeps.append
    with pytest.raises(APIConnectionError, match=r"could not reach http://bw\.test/v1/runs"):
        bw.runs.list()
    assert len(sleeps) == 2  # two retries after the first attempt


def test_success_with_a_body_that_is_not_json(bw: Benchwright, gateway: FakeGateway) -> None:
    gateway.on("GET", f"/v1/runs/{RUN_ID}", httpx.Response(200, text="<html>login</html>"))
    with pytest.raises(APIResponseError, match="not JSON"):
        bw.runs.get(RUN_ID)


def test_success_with_the_wrong_shape(bw: Benchwright, gateway: FakeGateway) -> None:
    gateway.on("GET", f"/v1/runs/{RUN_ID}", httpx.Response(200, json={"status": "ok"}))
    with pytest.raises(APIResponseError, match=r"unexpected Run from the server: .* at id"):
        bw.runs.get(RUN_ID)
