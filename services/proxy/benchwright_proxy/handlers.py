"""Proxy commands in, application calls out."""

from faststream.nats import NatsRouter

from benchwright_proxy.service import ProxyRuntime
from benchwright_shared import subjects
from benchwright_shared.bus import command_subscriber
from benchwright_shared.contracts import AttachModel, DetachModel

SERVICE = "proxy"


def register(router: NatsRouter, runtime: ProxyRuntime, *, max_deliver: int) -> None:
    @command_subscriber(router, subjects.ATTACH_MODEL, service=SERVICE, max_deliver=max_deliver)
    async def attach_model(command: AttachModel) -> None:
        await runtime.attach(command)

    @command_subscriber(router, subjects.DETACH_MODEL, service=SERVICE, max_deliver=max_deliver)
    async def detach_model(command: DetachModel) -> None:
        await runtime.detach(command)
