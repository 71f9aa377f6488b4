"""Hostile input against the running platform: every one is a 4xx problem naming the
field, and nothing it touched is half-written (issue 11)."""

import asyncio
import json
from typing import Any

import httpx
import pytest

from tests.conftest import Platform

SUT = {"model": "m", "provider": "local"}


def launch(**extra: Any) -> dict[str, Any]:
    return {"benchmark": "GSM8K", "sut": SUT, **extra}


def assert_problem(response: httpx.Response, status: int, field: str | None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem: dict[str, Any] = response.json()
    assert problem["status"] == status
    if field is not None:
        assert problem.get("field") == field, problem
    return problem


async def run_count(client: httpx.AsyncClient) -> int:
    return len((await client.get("/v1/runs", params={"limit": 200})).json()["data"])


async def post_raw(client: httpx.AsyncClient, path: str, text: str) -> httpx.Response:
    return await client.post(
        path, content=text.encode(), headers={"content-type": "application/json"}
    )


async def test_a_launch_body_the_platform_cannot_keep_is_refused_and_nothing_runs(
    platform: Platform,
) -> None:
    client = platform.client
    assert client is not None
    before = await run_count(client)

    # Too large: refused from its declared length, before it is read.
    huge = {"metadata": {"notes": "x" * (20 * 1024 * 1024)}}
    assert_problem(await client.post("/v1/runs", json=launch(**huge)), 413, "body")
    assert_problem(
        await client.post("/v1/runs", json=launch(metadata={"notes": "x" * 600_000})), 413, "body"
    )

    # Not finite: NaN, Infinity and a float that overflows, where the route would
    # have taken them (the limits) and in a setting.
    base = json.dumps(launch())[:-1]
    for number in ("1e999", "NaN", "Infinity", "-Infinity"):
        text = base + f', "limits": {{"run": {{"cost": {number}}}}}}}'
        problem = assert_problem(await post_raw(client, "/v1/runs", text), 400, "limits.run.cost")
        assert "finite" in problem["detail"]
    setting = await client.put(
        "/v1/settings/default_limits",
        content=b'{"value": {"run": {"cost": 1e999}}}',
        headers={"content-type": "application/json"},
    )
    assert_problem(setting, 400, "value.run.cost")

    # Too deep, a lone surrogate, NUL, an integer past 64 bits.
    deep: Any = "bottom"
    for _ in range(500):
        deep = {"d": deep}
    problem = assert_problem(await client.post("/v1/runs", json=launch(metadata=deep)), 400, None)
    assert problem["field"].startswith("metadata.d.d")
    lone = base + ', "metadata": {"x": "\\ud800"}}'
    assert_problem(await post_raw(client, "/v1/runs", lone), 400, "metadata.x")
    nul = base + ', "metadata": {"x": "a\\u0000b"}}'
    assert_problem(await post_raw(client, "/v1/runs", nul), 400, "metadata.x")
    big = base + ', "metadata": {"n": ' + "9" * 30 + "}}"
    assert_problem(await post_raw(client, "/v1/runs", big), 400, "metadata.n")

    assert await run_count(client) == before, "a refused launch left a run behind"
    # And the platform still launches what is fine.
    assert (await client.post("/v1/runs", json=launch(metadata={"limit": 1}))).status_code == 201


async def test_positions_past_what_a_store_holds_are_400_not_a_timeout(
    platform: Platform,
) -> None:
    client = platform.client
    assert client is not None
    run = (await client.post("/v1/runs", json=launch(metadata={"limit": 1}))).json()
    for after in (10**30, 2**63, 2**53):
        response = await client.get(f"/v1/runs/{run['id']}/events", params={"after_seq": after})
        assert_problem(response, 400, "after_seq")
    benchmarks = (await client.get("/v1/benchmarks")).json()["data"]
    gsm8k = next(b for b in benchmarks if b["name"] == "GSM8K")
    near = 2**63 - 5
    response = await client.get(
        f"/v1/benchmarks/{gsm8k['id']}/range", params={"start": near, "end": near + 2}
    )
    assert_problem(response, 400, "start")


async def test_names_with_nul_are_refused_and_rows_with_unicode_breaks_are_kept(
    platform: Platform,
) -> None:
    client = platform.client
    assert client is not None
    response = await client.post("/v1/benchmarks", json={"name": "bad\u0000name"})
    assert_problem(response, 400, "name")
    created = await client.post("/v1/benchmarks", json={"name": "Unicode breaks"})
    assert created.status_code == 201, created.text
    rows = [
        {"task_id": f"t{i}", "question": f"one\u2028two\u2029three\u0085four {i}", "answer": "x"}
        for i in range(3)
    ]
    # Raw characters, not \u escapes: what a dataset written by another tool holds.
    body = json.dumps({"slug": "breaks", "tasks": rows}, ensure_ascii=False)
    subset = await post_raw(client, f"/v1/benchmarks/{created.json()['id']}/subsets", body)
    assert subset.status_code == 201, subset.text
    page = await client.get(f"/v1/subsets/{subset.json()['id']}/tasks")
    assert page.status_code == 200, page.text
    got = [row["question"] for row in page.json()["data"]]
    assert got == [r["question"] for r in rows]
    # The catalog still lists what comes after.
    assert (await client.post("/v1/benchmarks", json={"name": "After"})).status_code == 201
    names = {b["name"] for b in (await client.get("/v1/benchmarks")).json()["data"]}
    assert {"Unicode breaks", "After"} <= names


@pytest.mark.parametrize("method", ["POST", "PATCH"])
async def test_a_body_that_is_not_json_is_400(platform: Platform, method: str) -> None:
    client = platform.client
    assert client is not None
    response = await client.request(
        method, "/v1/runs" if method == "POST" else "/v1/runs/nope", content=b"{not json"
    )
    assert 400 <= response.status_code < 500, response.text
    assert response.headers["content-type"].startswith("application/problem+json")


async def test_an_idempotency_key_reused_with_another_body_is_409_everywhere(
    platform: Platform,
) -> None:
    client = platform.client
    assert client is not None

    async def twice(
        method: str, path: str, first: dict[str, Any], other: dict[str, Any]
    ) -> dict[str, Any]:
        key = {"Idempotency-Key": f"key-{path}"}
        made = await client.request(method, path, json=first, headers=key)
        assert made.status_code in (200, 201), made.text
        again = await client.request(method, path, json=first, headers=key)
        assert again.status_code in (200, 201), again.text
        reused = await client.request(method, path, json=other, headers=key)
        problem = assert_problem(reused, 409, "Idempotency-Key")
        assert problem["code"] == "idempotency_key_reused"
        first_answer: dict[str, Any] = made.json()
        assert again.json().get("id") == first_answer.get("id")
        return first_answer

    await twice("POST", "/v1/billing/topups", {"amount_cents": 500}, {"amount_cents": 900})
    balance = (await client.get("/v1/billing/balance")).json()
    secret = {"name": "API_TOKEN", "value": "s3cret", "rules": []}
    await twice("POST", "/v1/secrets", secret, {**secret, "value": "other"})
    await twice(
        "PATCH",
        "/v1/host-policy",
        {"add": [{"pattern": "example.org", "action": "allow"}]},
        {"add": [{"pattern": "example.com", "action": "allow"}]},
    )
    # The repeats changed nothing: one top-up, one secret, one rule.
    assert (await client.get("/v1/billing/balance")).json() == balance
    secrets = (await client.get("/v1/secrets")).json()["data"]
    assert [s["name"] for s in secrets] == ["API_TOKEN"]
    policy = (await client.get("/v1/host-policy")).json()
    patterns = [r["pattern"] for r in policy["rules"]]
    assert "example.org" in patterns and "example.com" not in patterns


async def test_a_run_log_message_a_view_cannot_apply_is_parked_and_the_view_goes_on(
    platform: Platform, fake_model: Any
) -> None:
    import nats

    from benchwright_shared import subjects

    client = platform.client
    assert client is not None
    settings = platform.settings
    url = settings.nats_url
    if not url:  # the embedded platform's own nats-server
        conf = (settings.data_dir / "nats" / "nats-server.conf").read_text()
        url = "nats://" + conf.split('"')[1]
    nc = await nats.connect(url)
    try:
        bad = {"run_id": "run-poison", "seq": 1, "type": "MaterializeTaskResult", "data": {}}
        await nc.jetstream().publish(
            subjects.run_log_subject("run-poison"),
            json.dumps(bad).encode(),
            stream=subjects.RUNS_STREAM,
        )
    finally:
        await nc.close()
    for _ in range(100):
        parked = (await client.get("/v1/admin/projections/runs/parked")).json()["data"]
        if parked:
            break
        await asyncio.sleep(0.1)
    assert [json.loads(p["message"])["run_id"] for p in parked] == ["run-poison"]
    assert "index" in parked[0]["error"]
    # The view goes on: a run launched after it shows up and finishes.
    body = launch(metadata={"limit": 2})
    body["sut"] = {"model": "m", "provider": "openai_compatible", "api_base": fake_model.base_url}
    run = (await client.post("/v1/runs", json=body)).json()
    finished = await platform.wait_terminal(run["id"])
    assert finished["status"] == "ok", finished
    unknown = await client.get("/v1/admin/projections/nope/parked")
    assert_problem(unknown, 404, "name")
