"""The async client on the embedded platform: a login mints a token, the token reads
``me``, keeps secrets and the host policy, launches a run and reads it back with
``runs.get(expand=, fields=)``; then the token is revoked."""

import json
from typing import Any

import pytest

from benchwright import (
    AsyncBenchwright,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
)
from benchwright_gateway.render import RUN_FIELDS
from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer, gsm8k_oracle
from tests.system.test_pinned_run import gsm8k_rows

pytestmark = [pytest.mark.slow, pytest.mark.connected]

SCOPES = ["runs:read", "runs:write", "secrets:read", "secrets:write"]
VALUE = "sk-or-v1-" + "7" * 40 + "WXYZ"


def saved_login(platform: Platform) -> dict[str, Any]:
    creds = json.loads((platform.settings.data_dir / "credentials.json").read_text())
    return dict(creds["login"])


async def test_async_client_end_to_end(platform: Platform) -> None:
    assert platform.client
    base_url = str(platform.client.base_url)
    login = saved_login(platform)

    with pytest.raises(AuthenticationError):
        await AsyncBenchwright.login(login["username"], "not the password", base_url)
    async with await AsyncBenchwright.login(
        login["username"], login["password"], base_url
    ) as session:
        assert (await session.me()).kind == "session"
        minted = await session.tokens.create(SCOPES, "sdk parity")
        listed = await session.tokens.list()
        (entry,) = [t for t in listed if t.label == "sdk parity"]
        assert entry.scopes == sorted(SCOPES) and "token" not in entry

        async with AsyncBenchwright(api_key=minted.token, base_url=base_url) as bw:
            me = await bw.me()
            assert me.kind == "pat" and sorted(me.scopes) == sorted(SCOPES)
            # A token cannot breed more of itself.
            with pytest.raises(PermissionDeniedError) as refused:
                await bw.tokens.create(["runs:read"])
            assert refused.value.code == "session_required"

            await check_secrets(bw)
            await check_host_policy(bw)
            await check_run_reads(bw, platform)

            await session.tokens.revoke(entry.id)
            with pytest.raises(AuthenticationError):
                await bw.me()


async def check_secrets(bw: AsyncBenchwright) -> None:
    rule = {"host_pattern": "openrouter.ai", "inject_kind": "bearer"}
    made = await bw.secrets.create(
        "OPENROUTER_API_KEY", VALUE, rules=[rule], idempotency_key="sdk-parity-secret"
    )
    assert made.version == 1 and made.preview.endswith("WXYZ")
    with pytest.raises(ConflictError):
        await bw.secrets.create("OPENROUTER_API_KEY", "another-value")
    rotated = await bw.secrets.rotate("OPENROUTER_API_KEY", value=VALUE[::-1])
    assert rotated.version == 2
    shown = [await bw.secrets.get("OPENROUTER_API_KEY"), *await bw.secrets.list()]
    assert all(VALUE not in json.dumps(s) and VALUE[::-1] not in json.dumps(s) for s in shown)
    assert (await bw.secrets.delete("OPENROUTER_API_KEY")).deleted is True
    with pytest.raises(NotFoundError):
        await bw.secrets.get("OPENROUTER_API_KEY")


async def check_host_policy(bw: AsyncBenchwright) -> None:
    await bw.host_policy.starter_pack()
    assert ("pypi.org", "allow") in {
        (r["pattern"], r["action"]) for r in await bw.host_policy.list()
    }
    added = await bw.host_policy.add("api.wolframalpha.com", idempotency_key="sdk-parity-allow")
    assert ("api.wolframalpha.com", "allow") in {(r["pattern"], r["action"]) for r in added.rules}
    await bw.host_policy.add("evil.example", mode="block")
    assert (await bw.host_policy.default("block")).default_mode == "block"
    assert (await bw.host_policy.get()).default_mode == "block"
    await bw.host_policy.default("allow")
    after = await bw.host_policy.delete("api.wolframalpha.com")
    assert all(r.pattern != "api.wolframalpha.com" for r in after.rules)
    with pytest.raises(NotFoundError):
        await bw.host_policy.delete("api.wolframalpha.com")
    assert isinstance(await bw.host_policy.blocked_hosts(), list)


async def check_run_reads(bw: AsyncBenchwright, platform: Platform) -> None:
    model = FakeOpenAIServer(gsm8k_oracle(gsm8k_rows()[:20], correct_every=2)).start()
    try:
        launched = await bw.runs.launch(
            benchmark="GSM8K",
            sut={"model": "fake", "provider": "openai_compatible", "api_base": model.base_url},
            metadata={"limit": 4},
        )
        done = await bw.runs.wait(launched.id, timeout=120, poll_interval=0.2)
    finally:
        model.stop()
    assert done.status == "ok", done.error

    full = await bw.runs.get(done.id)
    assert full.model_fields_set >= set(RUN_FIELDS)
    assert full.tasks_summary is None and full.recent_events is None

    slim = await bw.runs.get(
        done.id,
        expand=["tasks_summary", "recent_events", "blocked_hosts"],
        fields=["status", "cost"],
    )
    expected = {"id", "object", "status", "cost", "tasks_summary", "recent_events"}
    assert slim.model_fields_set == expected | {"blocked_hosts"}
    assert slim.status == "ok" and slim.visibility is None and slim.model is None
    assert slim.tasks_summary is not None
    assert (slim.tasks_summary.total, slim.tasks_summary.passed) == (4, 2)
    assert slim.tasks_summary.model_dump() == (await bw.runs.tasks(done.id)).summary.model_dump()
    assert slim.recent_events is not None and 0 < len(slim.recent_events) <= 20
    assert slim.recent_events[-1].type == "PipelineFinished"
    log = [e.seq for e in (await bw.runs.events(done.id, limit=5000)).data]
    assert [e.seq for e in slim.recent_events] == log[-len(slim.recent_events) :]
    assert slim.blocked_hosts == []

    # Artifacts need their own scope, which this token was not given.
    with pytest.raises(PermissionDeniedError) as refused:
        await bw.runs.get(done.id, expand="artifacts")
    assert "artifacts:read" in str(refused.value)

    for param, bad in (("fields", ["status", "colour"]), ("expand", ["everything"])):
        with pytest.raises(BadRequestError) as info:
            await bw.runs.get(done.id, **{param: bad})
        assert (info.value.field, info.value.code) == (param, "invalid_argument")
        assert repr(bad[-1]) in (info.value.detail or "")

    # The API takes a list parameter repeated, too; artifacts for a token that may read them.
    assert platform.client
    url = f"/v1/runs/{done.id}"
    raw = await platform.client.get(url, params=[("expand", "artifacts"), ("fields", "phase")])
    assert raw.status_code == 200, raw.text
    body = raw.json()
    assert set(body) == {"id", "object", "phase", "artifacts"}
    listed = (await platform.client.get(f"{url}/artifacts")).json()["data"]
    assert body["artifacts"] == listed
