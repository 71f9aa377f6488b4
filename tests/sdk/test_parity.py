"""The two clients offer the same surface, the guide's section 14 names all exist, and
the new account calls (secrets, host policy, tokens, ``me``, ``login``) send the same
requests from either client."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from benchwright import (
    AsyncBenchwright,
    AuthenticationError,
    Benchwright,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
)

from .dual import BASE_URL, Dual, client_fixture  # noqa: F401 (the ``client`` fixture)
from .fakes import TOKEN, FakeGateway, problem


def words(text: str) -> list[str]:
    return text.split()


# The guide's section 14, by the names it calls them (``tasks.*`` live on ``runs``).
GUIDE_CALLS = words("""
runs.launch runs.get runs.list runs.stream runs.events runs.wait runs.fork runs.halt
runs.kill runs.update runs.publish runs.narrate runs.blocked_hosts runs.tasks
runs.artifacts runs.artifact runs.artifact_content runs.report runs.fingerprint
registry.benchmarks.list registry.benchmarks.get registry.benchmarks.find
registry.subsets.get registry.subsets.leaderboard registry.subsets.runs
registry.impls.get registry.impls.code registry.impls.runs
benchmarks.create benchmarks.update benchmarks.delete benchmarks.subsets.create
benchmarks.subsets.update benchmarks.subsets.append_tasks benchmarks.subsets.delete
impls.create impls.create_from_run impls.update impls.delete
secrets.list secrets.get secrets.create secrets.update secrets.delete
host_policy.list host_policy.add host_policy.delete host_policy.default
host_policy.starter_pack host_policy.blocked_hosts
billing.balance.get billing.controls.update billing.topups.create billing.topups.get
billing.transactions.list billing.usage_trend billing.export
webhooks.create webhooks.list webhooks.get webhooks.update webhooks.delete
webhooks.rotate_secret webhooks.test_delivery webhooks.deliveries webhooks.retry_delivery
webhooks.construct_event
settings.list settings.get settings.set settings.delete settings.schema
me
""")
# The guide's calls that take ``idempotency_key=``.
KEYED_CALLS = words("""
runs.launch runs.fork benchmarks.create benchmarks.subsets.create
benchmarks.subsets.append_tasks impls.create secrets.create secrets.update host_policy.add
billing.controls.update billing.topups.create webhooks.create
""")
# Where the two clients differ on purpose: (sync name, its async counterpart).
RENAMED = {"close": "aclose"}
# Pure local helpers, no I/O, so not coroutines on the async client either.
LOCAL = {"construct_event"}
# Public methods or classes without a docstring: none may appear.
UNDOCUMENTED: set[str] = set()
UNDOCUMENTED_CLASSES: set[str] = set()


@pytest.fixture
def pair() -> Iterator[tuple[Benchwright, AsyncBenchwright]]:
    sync = Benchwright(api_key=TOKEN, base_url=BASE_URL)
    yield sync, AsyncBenchwright(api_key=TOKEN, base_url=BASE_URL)
    sync.close()


def resolve(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def surface(obj: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted name, attribute) of every public method and resource below ``obj``."""
    for name in dir(obj):
        if name.startswith("_"):
            continue
        value = getattr(obj, name)
        if inspect.ismethod(value) or inspect.isfunction(value):
            yield prefix + name, value
        elif hasattr(value, "_http"):
            yield prefix + name, value
            yield from surface(value, f"{prefix}{name}.")


def is_async(method: Any) -> bool:
    return inspect.iscoroutinefunction(method) or inspect.isasyncgenfunction(method)


def test_async_client_mirrors_every_sync_call(pair: tuple[Benchwright, AsyncBenchwright]) -> None:
    sync, async_ = pair
    for dotted, value in surface(sync):
        leaf = dotted.rsplit(".", 1)[-1]
        twin = resolve(async_, dotted.replace(leaf, RENAMED.get(leaf, leaf)))
        if not callable(value):
            continue
        if leaf in LOCAL:
            assert not is_async(twin), dotted
        else:
            assert is_async(twin), f"AsyncBenchwright.{dotted} is not a coroutine"


@pytest.mark.parametrize("dotted", GUIDE_CALLS)
def test_every_guide_call_exists_on_both_clients(
    pair: tuple[Benchwright, AsyncBenchwright], dotted: str
) -> None:
    for bw in pair:
        assert callable(resolve(bw, dotted)), f"{type(bw).__name__}.{dotted}"


@pytest.mark.parametrize("dotted", KEYED_CALLS)
def test_creation_calls_take_an_idempotency_key(
    pair: tuple[Benchwright, AsyncBenchwright], dotted: str
) -> None:
    for bw in pair:
        assert "idempotency_key" in inspect.signature(resolve(bw, dotted)).parameters


def test_public_surface_has_docstrings(pair: tuple[Benchwright, AsyncBenchwright]) -> None:
    missing: set[str] = set()
    for bw in pair:
        if not (type(bw).__doc__ or "").strip():
            missing.add(type(bw).__name__)
        for dotted, value in surface(bw):
            documented = value.__doc__ if callable(value) else type(value).__doc__
            if (documented or "").strip():
                continue
            missing.add(dotted if callable(value) else type(value).__name__)
    assert missing <= UNDOCUMENTED | UNDOCUMENTED_CLASSES, sorted(
        missing - UNDOCUMENTED - UNDOCUMENTED_CLASSES
    )


# -- secrets -------------------------------------------------------------------------------
SECRET = {
    "object": "secret",
    "name": "OPENROUTER_API_KEY",
    "description": "",
    "rules": [{"host_pattern": "openrouter.ai", "inject_kind": "bearer"}],
    "preview": "sk-o…",
    "version": 1,
}


async def test_secrets_create_sends_the_key_as_a_header(client: Dual, gateway: FakeGateway) -> None:
    gateway.on("POST", "/v1/secrets", httpx.Response(201, json=SECRET))
    rule = {"host_pattern": "openrouter.ai", "inject_kind": "bearer"}
    made = await client(
        "secrets.create", "OPENROUTER_API_KEY", "sk-or-1", rules=[rule], idempotency_key="k1"
    )
    assert made.preview == "sk-o…" and made.rules[0].inject_kind == "bearer"
    (sent,) = gateway.seen("POST", "/v1/secrets")
    assert sent.headers["idempotency-key"] == "k1"
    assert json.loads(sent.content) == {
        "name": "OPENROUTER_API_KEY",
        "value": "sk-or-1",
        "description": "",
        "rules": [rule],
    }


async def test_secrets_rotate_list_get_delete(client: Dual, gateway: FakeGateway) -> None:
    path = "/v1/secrets/OPENROUTER_API_KEY"
    gateway.on("PATCH", path, httpx.Response(200, json={**SECRET, "version": 2}))
    gateway.on("GET", "/v1/secrets", httpx.Response(200, json={"object": "list", "data": [SECRET]}))
    gateway.on("GET", path, httpx.Response(200, json=SECRET))
    gateway.on("DELETE", path, httpx.Response(200, json={"name": SECRET["name"], "deleted": True}))

    rotated = await client("secrets.update", "OPENROUTER_API_KEY", value="sk-or-2")
    assert rotated.version == 2
    assert json.loads(gateway.seen("PATCH", path)[0].content) == {"value": "sk-or-2"}
    assert "idempotency-key" not in gateway.seen("PATCH", path)[0].headers
    assert [s.name for s in await client("secrets.list")] == ["OPENROUTER_API_KEY"]
    assert (await client("secrets.get", "OPENROUTER_API_KEY")).preview == "sk-o…"
    assert (await client("secrets.delete", "OPENROUTER_API_KEY")).deleted is True


async def test_a_secret_name_is_one_path_segment(client: Dual, gateway: FakeGateway) -> None:
    with pytest.raises(NotFoundError):
        await client("secrets.get", "../tokens")
    assert gateway.requests[0].url.raw_path == b"/v1/secrets/..%2Ftokens"


async def test_a_rotation_lost_to_a_5xx_is_retried_with_the_same_key(
    client: Dual, gateway: FakeGateway, sleeps: list[float]
) -> None:
    path = "/v1/secrets/K"
    gateway.on(
        "PATCH",
        path,
        problem(503, "unavailable", "vault restarting"),
        httpx.Response(200, json=SECRET),
    )
    await client("secrets.rotate", "K", value="v2", idempotency_key="rotate-1")
    attempts = gateway.seen("PATCH", path)
    assert [r.headers["idempotency-key"] for r in attempts] == ["rotate-1", "rotate-1"]
    assert len(sleeps) == 1


async def test_a_duplicate_secret_is_a_conflict(client: Dual, gateway: FakeGateway) -> None:
    gateway.on("POST", "/v1/secrets", problem(409, "secret exists", "a secret named 'K' exists"))
    with pytest.raises(ConflictError) as info:
        await client("secrets.create", "K", "v")
    assert info.value.status == 409


# -- host policy -----------------------------------------------------------------------------
def policy(*rules: tuple[str, str], default_mode: str = "allow") -> httpx.Response:
    data = [{"pattern": p, "action": a} for p, a in rules]
    return httpx.Response(
        200, json={"object": "host_policy", "default_mode": default_mode, "rules": data}
    )


async def test_host_policy_calls_patch_the_one_policy(client: Dual, gateway: FakeGateway) -> None:
    gateway.on("GET", "/v1/host-policy", policy(("pypi.org", "allow")))
    gateway.on("PATCH", "/v1/host-policy", policy(("api.wolframalpha.com", "allow")))

    assert await client("host_policy.list") == [{"pattern": "pypi.org", "action": "allow"}]
    assert (await client("host_policy.get")).default_mode == "allow"
    added = await client("host_policy.add", "api.wolframalpha.com", idempotency_key="allow-wolf")
    assert added.rules[0].pattern == "api.wolframalpha.com"
    await client("host_policy.add", "evil.example", mode="block")
    await client("host_policy.delete", "api.wolframalpha.com")
    await client("host_policy.default", "block")
    await client("host_policy.starter_pack")

    sent = gateway.seen("PATCH", "/v1/host-policy")
    bodies = [json.loads(r.content) for r in sent]
    empty = {"add": [], "remove": [], "starter_pack": False}
    assert bodies == [
        {**empty, "add": [{"pattern": "api.wolframalpha.com", "action": "allow"}]},
        {**empty, "add": [{"pattern": "evil.example", "action": "block"}]},
        {**empty, "remove": ["api.wolframalpha.com"]},
        {**empty, "default_mode": "block"},
        {**empty, "starter_pack": True},
    ]
    assert sent[0].headers["idempotency-key"] == "allow-wolf"
    assert "idempotency-key" not in sent[1].headers


async def test_blocked_hosts_account_wide_and_per_run(client: Dual, gateway: FakeGateway) -> None:
    row = {
        "host": "api.wolframalpha.com",
        "run_id": "r1",
        "seen_count": 3,
        "first_seen": "2025-01-02T03:04:05Z",
        "last_seen": "2025-01-02T04:04:05Z",
    }
    listed = httpx.Response(200, json={"object": "list", "data": [row]})
    gateway.on("GET", "/v1/blocked-hosts", listed)
    gateway.on("GET", "/v1/runs/r1/blocked-hosts", listed)
    assert (await client("host_policy.blocked_hosts"))[0].seen_count == 3
    assert (await client("runs.blocked_hosts", "r1"))[0].host == "api.wolframalpha.com"


# -- tokens, me and login ----------------------------------------------------------------------
async def test_tokens_create_list_revoke(client: Dual, gateway: FakeGateway) -> None:
    made = {"object": "token", "token": "bw_live_pat_new", "scopes": ["runs:read"], "label": "ci"}
    gateway.on("POST", "/v1/tokens", httpx.Response(201, json=made))
    gateway.on("GET", "/v1/tokens", httpx.Response(200, json={"object": "list", "data": []}))
    gateway.on("DELETE", "/v1/tokens/tok_1", httpx.Response(200, json={"revoked": True}))
    assert (await client("tokens.create", ["runs:read"], "ci")).token == "bw_live_pat_new"
    assert json.loads(gateway.seen("POST", "/v1/tokens")[0].content) == {
        "scopes": ["runs:read"],
        "label": "ci",
    }
    assert await client("tokens.list") == []
    assert (await client("tokens.revoke", "tok_1")).revoked is True


async def test_a_token_cannot_mint_tokens(client: Dual, gateway: FakeGateway) -> None:
    gateway.on(
        "POST",
        "/v1/tokens",
        problem(403, "session required", "minting a token needs a login", code="session_required"),
    )
    with pytest.raises(PermissionDeniedError) as info:
        await client("tokens.create", ["runs:read"])
    assert info.value.code == "session_required"
    # Minting is not idempotent and carries no key: a 403 is final, a 5xx is not retried.
    assert len(gateway.seen("POST", "/v1/tokens")) == 1


async def test_me(client: Dual, gateway: FakeGateway) -> None:
    gateway.on(
        "GET",
        "/v1/me",
        httpx.Response(200, json={"object": "principal", "account": "acct_1", "scopes": ["x"]}),
    )
    me = await client("me")
    assert (me.account, me.scopes) == ("acct_1", ["x"])
    assert gateway.seen("GET", "/v1/me")[0].headers["authorization"] == f"Bearer {TOKEN}"


def session_answer(request: httpx.Request) -> httpx.Response:
    assert "authorization" not in request.headers
    body = json.loads(request.content)
    if body != {"username": "ada", "password": "correct horse"}:
        return problem(401, "login failed", "wrong username or password", field="password")
    return httpx.Response(201, json={"object": "session", "token": "bw_live_ses_1"})


def test_login_opens_a_session_and_uses_it(gateway: FakeGateway) -> None:
    gateway.on("POST", "/v1/sessions", session_answer)
    gateway.on("GET", "/v1/me", httpx.Response(200, json={"kind": "session"}))
    with Benchwright.login(
        "ada", "correct horse", BASE_URL, http_client=gateway.client()
    ) as session:
        assert session.base_url == BASE_URL
        assert session.me().kind == "session"
    assert gateway.seen("GET", "/v1/me")[0].headers["authorization"] == "Bearer bw_live_ses_1"
    with pytest.raises(AuthenticationError) as info:
        Benchwright.login("ada", "wrong", BASE_URL, http_client=gateway.client())
    assert info.value.field == "password"


async def test_async_login_opens_a_session_and_uses_it(gateway: FakeGateway) -> None:
    gateway.on("POST", "/v1/sessions", session_answer)
    gateway.on("GET", "/v1/me", httpx.Response(200, json={"kind": "session"}))
    session = await AsyncBenchwright.login(
        "ada", "correct horse", BASE_URL, http_client=gateway.async_client()
    )
    async with session:
        assert (await session.me()).kind == "session"
    assert gateway.seen("GET", "/v1/me")[0].headers["authorization"] == "Bearer bw_live_ses_1"
    with pytest.raises(AuthenticationError):
        await AsyncBenchwright.login("ada", "wrong", BASE_URL, http_client=gateway.async_client())


def test_login_finds_the_server_like_a_client_does(
    gateway: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BW_BASE_URL", "http://from-env.test")
    gateway.on("POST", "/v1/sessions", session_answer)
    with Benchwright.login("ada", "correct horse", http_client=gateway.client()) as session:
        assert session.base_url == "http://from-env.test"
    assert str(gateway.requests[0].url) == "http://from-env.test/v1/sessions"


# The parameters the guide's section 14 writes out for these calls.
GUIDE_PARAMETERS = {
    "runs.launch": "request sut harness compute driver hints constraints trials phase_models "
    "metadata idempotency_key timeout benchmark subset impl replay",
    "runs.tasks": "run_id passed version limit page_token sort",
    "runs.wait": "run_id timeout poll_interval",
    "runs.events": "run_id after_seq types limit",
}


@pytest.mark.parametrize("call", sorted(GUIDE_PARAMETERS))
def test_the_guides_parameters_are_taken_by_both_clients(
    pair: tuple[Benchwright, AsyncBenchwright], call: str
) -> None:
    for client in pair:
        taken = set(inspect.signature(resolve(client, call)).parameters)
        missing = set(words(GUIDE_PARAMETERS[call])) - taken
        assert not missing, f"{type(client).__name__}.{call} lacks {sorted(missing)}"
