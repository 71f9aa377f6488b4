"""Proxy commands in, application calls out."""

from faststream.nats import NatsRouter

from benchwright_proxy.service import ProxyRuntime
from benchwright_shared import subjects
from benchwright_shared.bus import command_subscriber
from benchwright_shared.contracts import AttachModel, DetachModel
from benchwright_shared.contracts.queries import (
    CheckProviderKeys,
    ModelCallPrices,
    PriceModelCalls,
    ProviderKeys,
)

SERVICE = "proxy"


def register(router: NatsRouter, runtime: ProxyRuntime, *, max_deliver: int) -> None:
    @command_subscriber(router, subjects.ATTACH_MODEL, service=SERVICE, max_deliver=max_deliver)
    async def attach_model(command: AttachModel) -> None:
        await runtime.attach(command)

    @command_subscriber(router, subjects.DETACH_MODEL, service=SERVICE, max_deliver=max_deliver)
    async def detach_model(command: DetachModel) -> None:
        await runtime.detach(command)

    @router.subscriber(subjects.PRICE_MODEL_CALLS, queue=SERVICE)
    async def price_model_calls(query: PriceModelCalls) -> ModelCallPrices:
        return await runtime.price(query)

    @router.subscriber(subjects.CHECK_PROVIDER_KEYS, queue=SERVICE)
    async def check_provider_keys(query: CheckProviderKeys) -> ProviderKeys:
        return await runtime.check_keys(query)
