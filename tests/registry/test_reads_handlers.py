"""The registry's reads over runs on a real nats-server: request/reply on their subjects."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from faststream.nats import NatsBroker

from benchwright_registry.app import RegistryService
from benchwright_registry.catalog import builtin_catalog
from benchwright_registry.domain import make_benchmark
from benchwright_shared.bus import MIDDLEWARES, ask, declare_streams, jetstream
from benchwright_shared.contracts.registry import RegistryAnswer
from benchwright_shared.contracts.registry_reads import (
    CreateImplFromRun,
    FindPhaseCell,
    Leaderboard,
    ListRegistryRuns,
    PhaseCell,
    ReadLeaderboard,
    ReadTaskRange,
    RegistryRunList,
    TaskRange,
)
from benchwright_shared.settings import Settings
from tests.conftest import reset_nats

pytestmark = pytest.mark.connected


@pytest.fixture
async def registry(tmp_path: Path, embedded_nats: str) -> AsyncIterator[NatsBroker]:
    await reset_nats(embedded_nats)
    service = RegistryService(Settings(data_dir=tmp_path, nats_url=embedded_nats))
    broker = NatsBroker(embedded_nats, logger=None, middlewares=MIDDLEWARES)
    broker.include_router(service.router)
    await broker.connect()
    await declare_streams(jetstream(broker))
    await broker.start()
    await service.start(broker)
    yield broker
    await service.stop()
    await broker.stop()


async def test_reads_answer_over_the_bus(registry: NatsBroker) -> None:
    cell = await ask(
        registry, FindPhaseCell(account="acct_a", phase="fetch", fingerprint="f"), PhaseCell
    )
    assert cell.problem is None and cell.run_id is None
    # GSM8K is readable by anyone; it has no runs yet.
    gsm8k = next(b for b in builtin_catalog() if b.name == "GSM8K")
    bm_id = make_benchmark(gsm8k.name, "", "", (), "").benchmark_id
    board = await ask(
        registry, ReadLeaderboard(account="acct_a", subset_id="sub_" + "0" * 12), Leaderboard
    )
    assert board.problem is not None and board.problem.status == 404
    assert (board.problem.extra or {}).get("code") == "not_found"
    listed = await ask(registry, ListRegistryRuns(account="acct_a"), RegistryRunList)
    assert listed.problem is not None and listed.problem.status == 400
    found = await ask(
        registry, ReadTaskRange(account="acct_a", benchmark_id=bm_id, start=0, end=5), TaskRange
    )
    assert found.problem is None and found.runs == [] and found.benchmark_id == bm_id


async def test_an_impl_from_a_run_needs_the_orchestrator(registry: NatsBroker) -> None:
    """Without an orchestrator to read the run's log from, the answer says so (503)."""
    answer = await ask(
        registry,
        CreateImplFromRun(account="acct_a", run_id="00000000-0000-0000-0000-000000000000"),
        RegistryAnswer,
        timeout=30,
    )
    assert answer.problem is not None and answer.problem.status == 503
