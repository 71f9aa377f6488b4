"""Access: logins open sessions, sessions mint tokens, tokens carry scopes, and an
account never sees another's runs. One matrix over every endpoint."""

import json
from typing import Any

import httpx
import pytest

from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = [pytest.mark.slow, pytest.mark.connected]

RUN = "{run}"
# (method, path, body, the scope it needs); {run} is the account's finished run.
ENDPOINTS: list[tuple[str, str, dict[str, Any] | None, str]] = [
    ("GET", "/v1/runs", None, "runs:read"),
    ("GET", "/v1/runs/{run}", None, "runs:read"),
    ("GET", "/v1/runs/{run}/tasks", None, "runs:read"),
    ("GET", "/v1/runs/{run}/events", None, "runs:read"),
    ("GET", "/v1/runs/{run}/fingerprint", None, "runs:read"),
    ("GET", "/v1/runs/{run}/stream", None, "runs:read"),
    ("POST", "/v1/runs", {"replay": {"from_run": RUN}}, "runs:write"),
    (
        "POST",
        "/v1/runs/{run}/fork",
        {"description": "x", "from_phase": "materialize"},
        "runs:write",
    ),
    ("POST", "/v1/runs/{run}/halt", None, "runs:write"),
    ("POST", "/v1/runs/{run}/resume", None, "runs:write"),
    ("PATCH", "/v1/runs/{run}", {"review_resolution": "go"}, "runs:write"),
    ("DELETE", "/v1/runs/{run}", None, "runs:write"),
    ("POST", "/v1/admin/projections/runs/rebuild", None, "admin"),
]


def fill(value: Any, run_id: str) -> Any:
    return json.loads(json.dumps(value).replace(RUN, run_id)) if value is not None else None


async def session(client: httpx.AsyncClient, username: str, password: str) -> str:
    response = await client.post("/v1/sessions", json={"username": username, "password": password})
    assert response.status_code == 201, response.text
    return str(response.json()["token"])


async def mint(client: httpx.AsyncClient, session_token: str, scopes: list[str]) -> str:
    response = await client.post(
        "/v1/tokens",
        json={"label": "test", "scopes": scopes},
        headers={"Authorization": f"Bearer {session_token}"},
    )
    assert response.status_code == 201, response.text
    token = str(response.json()["token"])
    assert token.startswith("bw_live_pat_")
    return token


def as_(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_scopes_and_ownership_on_every_endpoint(
    platform: Platform, fake_model: FakeOpenAIServer
) -> None:
    client = platform.client
    assert client
    creds = json.loads((platform.settings.data_dir / "credentials.json").read_text())
    admin = await session(client, creds["login"]["username"], creds["login"]["password"])

    # A PAT never mints a PAT; a session does.
    refused = await client.post("/v1/tokens", json={"scopes": ["runs:read"]})
    assert refused.status_code == 403 and refused.json()["code"] == "session_required"
    bad = await client.post("/v1/tokens", json={"scopes": ["runs:fly"]}, headers=as_(admin))
    assert bad.status_code == 400 and bad.json()["field"] == "scopes"

    # A second account, side by side.
    made = await client.post(
        "/v1/accounts",
        json={"username": "bob", "password": "correct horse battery"},
        headers=as_(admin),
    )
    assert made.status_code == 201, made.text
    bob_account = made.json()["account"]
    assert bob_account != creds.get("account", "acct_local")
    taken = await client.post(
        "/v1/accounts",
        json={"username": "bob", "password": "another long password"},
        headers=as_(admin),
    )
    assert taken.status_code == 409
    bob = await session(client, "bob", "correct horse battery")
    assert (
        await client.post("/v1/sessions", json={"username": "bob", "password": "nope"})
    ).status_code == 401
    not_admin = await client.post(
        "/v1/accounts", json={"username": "eve", "password": "x" * 12}, headers=as_(bob)
    )
    assert not_admin.status_code == 403
    bob_all = await mint(client, bob, ["runs:read", "runs:write", "artifacts:read"])
    me = (await client.get("/v1/me", headers=as_(bob_all))).json()
    assert me["account"] == bob_account and me["kind"] == "pat"

    # The local account's run.
    run = (
        await client.post(
            "/v1/runs",
            json={
                "benchmark": "GSM8K",
                "sut": {
                    "model": "m",
                    "provider": "openai_compatible",
                    "api_base": fake_model.base_url,
                },
                "metadata": {"limit": 2},
            },
        )
    ).json()
    await platform.wait_terminal(run["id"])

    for method, path, body, scope in ENDPOINTS:
        url, payload = path.replace(RUN, run["id"]), fill(body, run["id"])
        # Without the scope: 403 naming it.
        others = [s for s in ("runs:read", "runs:write", "billing:read") if s != scope]
        narrow = await mint(client, admin, others)
        response = await client.request(method, url, json=payload, headers=as_(narrow))
        assert response.status_code == 403, (method, path, response.text)
        assert scope in response.json()["detail"], (method, path)
        # Another account's run is a 404, as if it did not exist.
        if RUN in path or (body and RUN in json.dumps(body)):
            response = await client.request(method, url, json=payload, headers=as_(bob_all))
            assert response.status_code == 404, (method, path, response.text)
    listed = (await client.get("/v1/runs", headers=as_(bob_all))).json()["data"]
    assert listed == []

    # Revoking a token stops it at once.
    tokens = (await client.get("/v1/tokens", headers=as_(bob))).json()["data"]
    assert [t["scopes"] for t in tokens] == [["artifacts:read", "runs:read", "runs:write"]]
    assert all("hashed" not in t and "token" not in t for t in tokens)
    revoked = await client.delete(f"/v1/tokens/{tokens[0]['id']}", headers=as_(bob))
    assert revoked.status_code == 200
    assert (await client.get("/v1/runs", headers=as_(bob_all))).status_code == 401


async def test_the_cli_mints_a_token_from_the_local_admin_login(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from typer.testing import CliRunner

    from benchwright import Benchwright
    from benchwright.cli import app

    monkeypatch.setenv("BW_DATA_DIR", str(platform.settings.data_dir))
    monkeypatch.delenv("BW_PAT", raising=False)
    monkeypatch.delenv("BW_BASE_URL", raising=False)
    result = await asyncio.to_thread(
        CliRunner().invoke, app, ["token", "create", "--scopes", "runs:read", "--label", "ci"]
    )
    assert result.exit_code == 0, result.output
    token = result.stdout.strip().splitlines()[0]
    assert token.startswith("bw_live_pat_")

    def whoami() -> Any:
        with Benchwright(api_key=token) as bw:
            return bw.me()

    me = await asyncio.to_thread(whoami)
    assert me.kind == "pat" and me.scopes == ["runs:read"]
    wrong = await asyncio.to_thread(
        CliRunner().invoke, app, ["token", "create", "--username", "admin", "--password", "nope"]
    )
    assert wrong.exit_code != 0


async def test_secrets_are_write_only_and_the_host_policy_is_the_accounts(
    platform: Platform,
) -> None:
    client = platform.client
    assert client
    value = "sk-or-v1-" + "9" * 40 + "ZZZZ"
    created = await client.post(
        "/v1/secrets",
        json={
            "name": "openrouter",
            "value": value,
            "description": "OpenRouter key",
            "rules": [{"host_pattern": "openrouter.ai", "inject_kind": "bearer"}],
        },
    )
    assert created.status_code == 201, created.text
    assert created.json()["preview"] == "••••ZZZZ" and created.json()["version"] == 1
    again = await client.post("/v1/secrets", json={"name": "openrouter", "value": "x" * 20})
    assert again.status_code == 409 and again.json()["field"] == "name"
    bad = await client.post(
        "/v1/secrets",
        json={"name": "x", "value": "v", "rules": [{"host_pattern": "https://a.b/c"}]},
    )
    assert bad.status_code == 400 and bad.json()["field"].startswith("rules")
    rotated = await client.patch("/v1/secrets/openrouter", json={"value": value + "2"})
    assert rotated.json()["version"] == 2
    assert (await client.patch("/v1/secrets/nope", json={"value": "y" * 20})).status_code == 404
    listed = (await client.get("/v1/secrets")).json()["data"]
    assert [s["name"] for s in listed] == ["openrouter"]
    # Adding the secret allowed its host.
    policy = (await client.get("/v1/host-policy")).json()
    assert policy["default_mode"] == "allow"
    assert ("openrouter.ai", "allow") in {(r["pattern"], r["action"]) for r in policy["rules"]}
    flipped = await client.patch(
        "/v1/host-policy",
        json={
            "default_mode": "block",
            "starter_pack": True,
            "add": [{"pattern": "*.evil.io", "action": "block"}],
        },
    )
    assert flipped.status_code == 200 and flipped.json()["default_mode"] == "block"
    assert (
        await client.patch("/v1/host-policy", json={"remove": ["not.there"]})
    ).status_code == 404
    assert (await client.get("/v1/blocked-hosts")).json()["data"] == []

    # Another account sees none of it; a token without the scope gets 403.
    creds = json.loads((platform.settings.data_dir / "credentials.json").read_text())
    admin = await session(client, creds["login"]["username"], creds["login"]["password"])
    await client.post(
        "/v1/accounts",
        json={"username": "carol", "password": "a long password!"},
        headers=as_(admin),
    )
    carol = await mint(client, await session(client, "carol", "a long password!"), ["secrets:read"])
    assert (await client.get("/v1/secrets", headers=as_(carol))).json()["data"] == []
    assert (await client.get("/v1/secrets/openrouter", headers=as_(carol))).status_code == 404
    assert (await client.get("/v1/host-policy", headers=as_(carol))).json()["rules"] == []
    runs_only = await mint(client, admin, ["runs:read"])
    denied = await client.get("/v1/secrets", headers=as_(runs_only))
    assert denied.status_code == 403 and "secrets:read" in denied.json()["detail"]

    # The value is nowhere: not in any answer, and not on disk outside the sealed vault.
    deleted = await client.delete("/v1/secrets/openrouter")
    assert deleted.status_code == 200
    assert (await client.get("/v1/secrets/openrouter")).status_code == 404
    for path in platform.settings.data_dir.rglob("*"):
        if path.is_file():
            assert value.encode() not in path.read_bytes(), path


async def test_the_sdk_speaks_secrets_host_policy_and_fingerprints(
    platform: Platform, fake_model: FakeOpenAIServer
) -> None:
    import asyncio

    from benchwright import Benchwright

    client = platform.client
    assert client
    base_url = str(client.base_url).rstrip("/")

    def use_sdk() -> dict[str, Any]:
        with Benchwright(api_key=platform.token, base_url=base_url) as bw:
            made = bw.secrets.create(
                "together", "tgp_v1_" + "x" * 30, rules=[{"host_pattern": "api.together.xyz"}]
            )
            rotated = bw.secrets.rotate("together", value="tgp_v1_" + "y" * 30)
            policy = bw.host_policy.block("*.evil.io")
            run = bw.runs.launch(
                benchmark="GSM8K",
                sut={
                    "model": "m",
                    "provider": "openai_compatible",
                    "api_base": fake_model.base_url,
                },
                metadata={"limit": 1},
            )
            bw.runs.wait(run.id, poll_interval=0.2)
            return {
                "made": made,
                "rotated": rotated,
                "names": [s.name for s in bw.secrets.list()],
                "policy": policy,
                "fingerprint": bw.runs.fingerprint(run.id),
                "blocked": bw.runs.blocked_hosts(run.id),
            }

    seen = await asyncio.to_thread(use_sdk)
    assert seen["made"].version == 1 and seen["rotated"].version == 2
    assert seen["made"].preview.endswith("xxxx") and "value" not in seen["made"]
    assert seen["names"] == ["together"]
    assert ("*.evil.io", "block") in {(r["pattern"], r["action"]) for r in seen["policy"].rules}
    assert seen["fingerprint"].matches is True
    assert seen["blocked"] == []
