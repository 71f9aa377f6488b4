"""The proxy's refusals over the bus keep their cause: status, detail and code."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from faststream.nats import NatsBroker

from benchwright_proxy.app import ProxyService, build
from benchwright_shared.bus import MIDDLEWARES, ask, declare_streams, jetstream
from benchwright_shared.contracts import SutRef
from benchwright_shared.contracts.queries import ModelCallPrices, PriceModelCalls
from benchwright_shared.contracts.vault import DeleteSecret, SecretAnswer
from benchwright_shared.refusal import Refused
from benchwright_shared.settings import Settings

pytestmark = pytest.mark.connected


@pytest.fixture
async def proxy_on_bus(tmp_path: Path, embedded_nats: str) -> AsyncIterator[NatsBroker]:
    """The proxy's handlers on a real nats-server (its HTTP side and injector stay off)."""
    settings = Settings(
        data_dir=tmp_path, proxy_port=0, nats_url=embedded_nats, injector_enabled=False
    )
    service: ProxyService = build(settings)
    broker = NatsBroker(embedded_nats, logger=None, middlewares=MIDDLEWARES)
    broker.include_router(service.router)
    await broker.connect()
    await declare_streams(jetstream(broker))  # its command consumers need them
    await broker.start()
    try:
        yield broker
    finally:
        await broker.stop()
        await service.stop()


async def test_pricing_an_unknown_provider_says_so_with_its_field_and_code(
    proxy_on_bus: NatsBroker,
) -> None:
    query = PriceModelCalls(sut=SutRef(model="m", provider="nope"), usages=[])
    prices = await ask(proxy_on_bus, query, ModelCallPrices)
    assert prices.problem is not None
    refused = Refused.from_problem(prices.problem)
    assert (refused.status, refused.title) == (400, "invalid request")
    assert refused.detail == "unknown provider 'nope'"
    assert (refused.field, refused.code) == ("sut.provider", "unknown_provider")


async def test_a_vault_refusal_is_its_answer(proxy_on_bus: NatsBroker) -> None:
    answer = await ask(proxy_on_bus, DeleteSecret(account="acct_a", name="MISSING"), SecretAnswer)
    assert answer.problem is not None and answer.problem.status == 404
