"""The model proxy attaches the account's vault secret for the provider's host.

Versions are pinned when the run attaches: a rotation reaches new runs and never
a running one, also across a restart of the proxy. The value never appears in
the binding's stored events.
"""

import uuid
from pathlib import Path
from typing import Any

import pytest

from benchwright_proxy.app import build
from benchwright_proxy.credentials import RunCredentials
from benchwright_shared.contracts import SutRef
from benchwright_shared.contracts.vault import PutSecret, SecretRule
from benchwright_shared.settings import Settings
from tests.proxy.conftest import ProxyEndpoint, fake_sut
from tests.support.fake_openai import FakeOpenAIServer

BODY: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "2+2?"}]}
ACCOUNT = "acct_test"


@pytest.fixture
def upstream() -> Any:
    server = FakeOpenAIServer().start()
    yield server
    server.stop()


def put(proxy: ProxyEndpoint, value: str, kind: str = "bearer", target: str | None = None) -> None:
    rule = SecretRule(host_pattern="127.0.0.1", inject_kind=kind, inject_target=target)
    proxy.service.vault.put(
        PutSecret(account=ACCOUNT, name="UPSTREAM_KEY", value=value, rules=[rule])
    )


async def call(proxy: ProxyEndpoint, key: str) -> None:
    async with proxy.client(key) as client:
        response = await client.post("/v1/chat/completions", json=BODY)
        assert response.status_code == 200, response.text


async def test_the_pinned_secret_goes_upstream_and_rotation_reaches_new_runs_only(
    proxy: ProxyEndpoint, upstream: FakeOpenAIServer
) -> None:
    put(proxy, "sk-upstream-v1")
    old_run = str(uuid.uuid4())
    old_key = await proxy.bind(fake_sut(upstream), old_run)
    await call(proxy, old_key)
    assert upstream.state["auth"] == {"Bearer sk-upstream-v1"}

    put(proxy, "sk-upstream-v2")  # rotate
    upstream.state["auth"].clear()
    await call(proxy, old_key)
    assert upstream.state["auth"] == {"Bearer sk-upstream-v1"}  # the running run keeps v1
    await call(proxy, await proxy.bind(fake_sut(upstream)))
    assert "Bearer sk-upstream-v2" in upstream.state["auth"]

    # A restarted proxy forgets values, not pins: the old run still sends v1.
    runtime = proxy.service.runtime
    runtime.credentials = RunCredentials(proxy.service.vault, proxy.service.vault_store)
    runtime._bindings.clear()
    upstream.state["auth"].clear()
    await call(proxy, old_key)
    assert upstream.state["auth"] == {"Bearer sk-upstream-v1"}

    # A re-attach (a resumed run) keeps the first pins.
    upstream.state["auth"].clear()
    await call(proxy, await proxy.bind(fake_sut(upstream), old_run))
    assert upstream.state["auth"] == {"Bearer sk-upstream-v1"}


async def test_without_a_matching_secret_nothing_is_attached(
    proxy: ProxyEndpoint, upstream: FakeOpenAIServer
) -> None:
    rule = SecretRule(host_pattern="api.elsewhere.example")
    proxy.service.vault.put(PutSecret(account=ACCOUNT, name="OTHER", value="sk-x", rules=[rule]))
    await call(proxy, await proxy.bind(fake_sut(upstream)))
    assert upstream.state["auth"] == {""}


async def test_secret_values_stay_out_of_the_bindings_store(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, proxy_port=0, nats_url=None, database_url=None)
    service = build(settings)
    await service.runtime.serve_http()
    server = FakeOpenAIServer().start()
    try:
        service.vault.put(
            PutSecret(
                account=ACCOUNT,
                name="UPSTREAM_KEY",
                value="sk-never-stored-in-clear",
                rules=[
                    SecretRule(
                        host_pattern="127.0.0.1", inject_kind="header", inject_target="X-Api-Key"
                    )
                ],
            )
        )
        sut = SutRef(model="fake", provider="openai_compatible", api_base=server.base_url)
        _, key = await service.runtime.bind(str(uuid.uuid4()), ACCOUNT, sut)
        await call(ProxyEndpoint(service, service.runtime.url), key)
    finally:
        await service.stop()
        server.stop()
    assert_not_stored(tmp_path, b"sk-never-stored-in-clear")


def assert_not_stored(data_dir: Path, value: bytes) -> None:
    stores = list(data_dir.rglob("*.sqlite*"))
    assert len(stores) >= 2  # the bindings and the vault
    for stored in stores:
        assert value not in stored.read_bytes(), stored
