"""The injector's pure parts and its vault ports, without sockets."""

import asyncio
import base64
from pathlib import Path

import pytest

from benchwright_proxy.injector.refusals import RefusalBatcher
from benchwright_proxy.injector.rules import (
    InjectionRuleError,
    Placement,
    normalize_host,
    place,
    proxy_key,
    refusal_body,
)
from benchwright_proxy.injector.wiring import ServicePorts
from benchwright_shared.contracts.vault import SecretRule
from tests.proxy.test_injector_support import Platform

SECRET = "sk-secret-0123456789"


def basic(user_pass: str) -> str:
    return "Basic " + base64.b64encode(user_pass.encode()).decode()


@pytest.mark.parametrize(
    ("header", "key"),
    [
        (basic("run:bw_proxy_abc.s3cret"), "bw_proxy_abc.s3cret"),
        (basic("bw_proxy_abc.s3cret:"), "bw_proxy_abc.s3cret"),  # the key as the user name
        (basic("run:a:b"), "a:b"),
        ("basic " + base64.b64encode(b"u:k").decode(), "k"),
        (None, None),
        ("", None),
        ("Bearer bw_proxy_abc.s3cret", None),
        ("Basic not-base64!", None),
        ("Basic " + base64.b64encode(b":").decode(), None),
    ],
)
def test_the_key_is_read_from_basic_proxy_authorization(
    header: str | None, key: str | None
) -> None:
    assert proxy_key(header) == key


def test_hosts_are_compared_in_lower_case_without_the_root_dot() -> None:
    assert normalize_host("API.OpenAI.com.") == "api.openai.com"


def rule(kind: str, target: str | None = None) -> SecretRule:
    # Built without validation: the injector must refuse a bad rule on its own too.
    return SecretRule.model_construct(
        host_pattern="api.example.com", inject_kind=kind, inject_target=target
    )


def test_the_vault_refuses_a_rule_without_the_target_it_needs() -> None:
    with pytest.raises(ValueError, match="inject_target"):
        SecretRule(host_pattern="api.example.com", inject_kind="header")
    with pytest.raises(ValueError, match="inject_target"):
        SecretRule(host_pattern="api.example.com", inject_kind="query")


def test_each_kind_places_the_value() -> None:
    assert place(rule("bearer"), "v") == Placement("header", "Authorization", "Bearer v")
    assert place(rule("header", "X-Api-Key"), "v") == Placement("header", "X-Api-Key", "v")
    assert place(rule("basic", "me"), "v") == Placement("header", "Authorization", basic("me:v"))
    assert place(rule("basic"), "v") == Placement("header", "Authorization", basic(":v"))
    assert place(rule("query", "key"), "v") == Placement("query", "key", "v")


@pytest.mark.parametrize(
    ("bad_rule", "value"),
    [
        (rule("header"), SECRET),
        (rule("header", "Bad Name"), SECRET),
        (rule("header", "Proxy-Authorization"), SECRET),
        (rule("header", "Host"), SECRET),
        (rule("query"), SECRET),
        (rule("basic", "a:b"), SECRET),
        (rule("bearer"), SECRET + "\r\nX-Smuggled: 1"),
    ],
)
def test_a_rule_that_cannot_be_applied_is_refused_without_quoting_the_value(
    bad_rule: SecretRule, value: str
) -> None:
    with pytest.raises(InjectionRuleError) as error:
        place(bad_rule, value)
    assert value not in str(error.value)


def test_the_refusal_says_which_host_and_how_to_allow_it() -> None:
    body = refusal_body("evil.example")
    assert "evil.example is blocked" in body
    assert 'PATCH /v1/host-policy with {"add": [{"pattern": "evil.example"' in body


async def test_refusals_are_summed_per_account_and_capped() -> None:
    calls: list[tuple[str, dict[tuple[str | None, str], int]]] = []

    async def record(account: str, refusals: dict[tuple[str | None, str], int]) -> None:
        calls.append((account, refusals))

    batcher = RefusalBatcher(record, interval=3600, max_pending=2)
    for host in ("a.example", "a.example", "b.example", "c.example"):
        batcher.add("acct", "run-1", host)
    batcher.add("other", "run-2", "a.example")  # past the cap: refused, not counted
    await batcher.flush()
    assert calls == [("acct", {("run-1", "a.example"): 2, ("run-1", "b.example"): 1})]
    await batcher.flush()
    assert len(calls) == 1  # nothing new, no call


async def test_a_failing_record_is_logged_and_dropped(caplog: pytest.LogCaptureFixture) -> None:
    async def record(account: str, refusals: dict[tuple[str | None, str], int]) -> None:
        raise RuntimeError("vault down")

    batcher = RefusalBatcher(record)
    batcher.add("acct", "run-1", "a.example")
    await batcher.flush()
    assert "could not record 1 refusal(s) for account acct" in caplog.text


async def test_vault_ports_check_keys_and_remember_decisions_briefly(tmp_path: Path) -> None:
    platform = Platform(tmp_path)
    try:
        run_id, key = platform.run()
        ports = ServicePorts(platform.ports._check_key, platform.vault, platform.vault_store, 0.2)
        assert await ports.authenticate(key) == (run_id, "acct")
        assert await ports.authenticate(key + "x") is None
        assert await ports.authenticate("not a key") is None
        assert await ports.decide("acct", "evil.example") == "allow"
        platform.block("evil.example")
        assert await ports.decide("acct", "evil.example") == "allow"  # still remembered
        await asyncio.sleep(0.25)
        assert await ports.decide("acct", "evil.example") == "block"
        platform.put("api", "sk-value-0123456789", SecretRule(host_pattern="api.example.com"))
        pinned = await ports.pin("acct")
        assert pinned == {"api": 1}
        ((found, value),) = await ports.injections("acct", "api.example.com", pinned)
        assert found.inject_kind == "bearer" and value == "sk-value-0123456789"
        assert await ports.injections("acct", "other.example", pinned) == []
        # The run's own model host is the model proxy's: egress to it is refused,
        # even where the account allows it, and only for that run.
        platform.put("model", "sk-model-0123456789", SecretRule(host_pattern="model.invalid"))
        assert await ports.decide("acct", "model.invalid", run_id) == "block"
        assert await ports.decide("acct", "model.invalid", "another-run") == "allow"
    finally:
        platform.close()
