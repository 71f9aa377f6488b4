"""Secrets and host-policy rules are addressed by name or pattern, and by id (guide §14)."""

from tests.conftest import Platform


async def test_a_secret_answers_to_its_name_and_to_its_id(platform: Platform) -> None:
    client = platform.client
    assert client is not None
    created = await client.post(
        "/v1/secrets", json={"name": "API_TOKEN", "value": "first-value", "rules": []}
    )
    assert created.status_code == 201, created.text
    secret_id = created.json()["id"]
    assert secret_id.startswith("sec_")
    by_id = (await client.get(f"/v1/secrets/{secret_id}")).json()
    assert by_id["name"] == "API_TOKEN" and by_id["id"] == secret_id
    rotated = await client.patch(f"/v1/secrets/{secret_id}", json={"value": "second-value"})
    assert rotated.status_code == 200 and rotated.json()["version"] == 2, rotated.text
    assert rotated.json()["id"] == secret_id  # a rotation keeps it
    listed = (await client.get("/v1/secrets")).json()["data"]
    assert [s["id"] for s in listed] == [secret_id]
    missing = await client.get("/v1/secrets/sec_0000000000000000")
    assert missing.status_code == 404 and missing.json()["field"] == "name"
    assert (await client.delete(f"/v1/secrets/{secret_id}")).status_code == 200
    assert (await client.get("/v1/secrets/API_TOKEN")).status_code == 404


async def test_a_host_policy_rule_answers_to_its_id(platform: Platform) -> None:
    client = platform.client
    assert client is not None
    added = await client.patch(
        "/v1/host-policy", json={"add": [{"pattern": "*.example.org", "action": "block"}]}
    )
    assert added.status_code == 200, added.text
    rule = next(r for r in added.json()["rules"] if r["pattern"] == "*.example.org")
    assert rule["id"].startswith("hpr_")
    removed = await client.patch("/v1/host-policy", json={"remove": [rule["id"]]})
    assert removed.status_code == 200, removed.text
    assert all(r["pattern"] != "*.example.org" for r in removed.json()["rules"])
    unknown = await client.patch("/v1/host-policy", json={"remove": ["hpr_000000000000"]})
    assert unknown.status_code == 404 and unknown.json()["field"] == "remove"
