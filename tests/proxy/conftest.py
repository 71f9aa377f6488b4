"""The proxy's model endpoint on a real socket, with a run bound to a fake model."""

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from benchwright_proxy.app import ProxyService, build
from benchwright_shared.contracts import ModelUsageRecorded, SutRef
from benchwright_shared.settings import Settings
from tests.support.fake_openai import FakeOpenAIServer


class ProxyEndpoint:
    """A started proxy endpoint (no bus): bind runs, call it, read what it metered."""

    def __init__(self, service: ProxyService, url: str) -> None:
        self.service = service
        self.url = url

    async def bind(self, sut: SutRef, run_id: str | None = None) -> str:
        """Attach a run to ``sut`` through the runtime; returns the run's proxy key."""
        _, key = await self.service.runtime.bind(run_id or str(uuid.uuid4()), "acct_test", sut)
        return key

    def client(self, key: str, timeout: float = 30.0) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.url, headers={"Authorization": f"Bearer {key}"}, timeout=timeout
        )

    def usage(self) -> list[ModelUsageRecorded]:
        return self.service.runtime.meter.drain()


@pytest.fixture
async def proxy(tmp_path: Path) -> AsyncIterator[ProxyEndpoint]:
    settings = Settings(data_dir=tmp_path, proxy_port=0, nats_url=None, database_url=None)
    service = build(settings)
    url = await service.runtime.serve_http()
    yield ProxyEndpoint(service, url)
    await service.stop()


@pytest.fixture
def streaming_model() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer(streaming=True).start()
    yield server
    server.stop()


def fake_sut(server: FakeOpenAIServer) -> SutRef:
    return SutRef(model="fake", provider="openai_compatible", api_base=server.base_url)
