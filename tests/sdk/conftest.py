"""Fixtures: an isolated environment and a client wired to the fake gateway."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchwright import Benchwright

from .fakes import TOKEN, FakeGateway


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No real token, URL or credentials file can leak into a test."""
    monkeypatch.delenv("BW_PAT", raising=False)
    monkeypatch.delenv("BW_BASE_URL", raising=False)
    data_dir = tmp_path / "bw-data"
    monkeypatch.setenv("BW_DATA_DIR", str(data_dir))
    return data_dir


@pytest.fixture
def gateway() -> FakeGateway:
    """A fresh fake gateway."""
    return FakeGateway()


@pytest.fixture
def sleeps() -> list[float]:
    """Every delay the client asked to sleep for (nothing actually sleeps)."""
    return []


@pytest.fixture
def bw(gateway: FakeGateway, sleeps: list[float]) -> Iterator[Benchwright]:
    """A client on the fake gateway whose backoff sleeps are recorded, not slept."""
    client = Benchwright(api_key=TOKEN, base_url="http://bw.test", http_client=gateway.client())
    client._http.sleep = sleeps.append
    yield client
    client.close()
