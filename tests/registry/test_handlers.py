"""The registry's queries over a real nats-server: request/reply on their subjects."""

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from faststream.nats import NatsBroker

from benchwright_registry.app import RegistryService
from benchwright_shared import subjects
from benchwright_shared.bus import MIDDLEWARES, ask, declare_streams, jetstream
from benchwright_shared.contracts import (
    BenchmarkResolution,
    CatalogListing,
    GetSubsetRows,
    ListCatalog,
    ResolveBenchmark,
    SubsetRows,
)
from benchwright_shared.settings import Settings
from tests.conftest import reset_nats

pytestmark = pytest.mark.connected

# Building the catalog and storing every subset in the object store, on a fresh server.
STARTUP_BUDGET_S = 15.0


@pytest.fixture
async def registry(tmp_path: Path, embedded_nats: str) -> AsyncIterator[NatsBroker]:
    await reset_nats(embedded_nats)
    service = RegistryService(Settings(data_dir=tmp_path, nats_url=embedded_nats))
    broker = NatsBroker(embedded_nats, logger=None, middlewares=MIDDLEWARES)
    broker.include_router(service.router)
    await broker.connect()
    await declare_streams(jetstream(broker))
    await broker.start()
    started = time.monotonic()
    await service.start(broker)
    assert time.monotonic() - started < STARTUP_BUDGET_S
    yield broker
    await service.stop()
    await broker.stop()


async def test_list_catalog_over_the_bus(registry: NatsBroker) -> None:
    listing = await ask(registry, ListCatalog(account="acct_x"), CatalogListing)
    assert listing.problem is None
    counts = {b.name: [s.task_count for s in b.subsets] for b in listing.benchmarks}
    assert counts["GSM8K"] == [1319]
    assert counts["HumanEval"] == [164]
    assert counts["MMLU"][0] == 14042 and len(counts["MMLU"]) == 58
    assert counts["BFCL v4"] == [400, 200, 200, 200]
    assert counts["Natural Questions (open)"] == [1000]
    mmlu = next(b for b in listing.benchmarks if b.name == "MMLU")
    assert mmlu.aliases and mmlu.category == "knowledge"
    assert len(mmlu.subsets[0].categories) == 57
    assert mmlu.subsets[0].official_impl_id is None


async def test_aliases_resolve_and_rows_are_stored(registry: NatsBroker) -> None:
    query = ResolveBenchmark(
        account="acct_x", benchmark="Berkeley Function Calling", subset="multiple"
    )
    answer = await ask(registry, query, BenchmarkResolution)
    assert answer.problem is None
    assert (answer.benchmark_name, answer.subset_slug, answer.task_count) == (
        "BFCL v4",
        "multiple",
        200,
    )
    assert answer.impl_id is None and answer.subset_id is not None
    page = await ask(registry, GetSubsetRows(subset_id=answer.subset_id, limit=2), SubsetRows)
    assert [r["task_id"] for r in page.rows] == [
        "bfcl/multiple/multiple_0",
        "bfcl/multiple/multiple_1",
    ]
    # The whole subset is in the object store under its content-hash name.
    assert page.object_name is not None
    bucket = await jetstream(registry).object_store(subjects.DATASETS_BUCKET)
    stored = await bucket.get(page.object_name)
    assert stored.data is not None
    assert stored.data.count(b"\n") == 200


async def test_a_retired_subset_reaches_the_bucket_only_when_asked_for(
    registry: NatsBroker,
) -> None:
    from nats.js.errors import ObjectNotFoundError

    from tests.registry.test_application import RETIRED_SUBSET_IDS

    old_id = RETIRED_SUBSET_IDS[("HumanEval", "test")]
    await ask(registry, ListCatalog(account="acct_x"), CatalogListing)  # the start's publishing
    bucket = await jetstream(registry).object_store(subjects.DATASETS_BUCKET)
    with pytest.raises(ObjectNotFoundError):  # not published at start (a new data dir)
        await bucket.get_info(f"{old_id}.jsonl")
    page = await ask(registry, GetSubsetRows(subset_id=old_id, limit=1), SubsetRows)
    assert page.problem is None and page.object_name == f"{old_id}.jsonl"
    stored = await bucket.get(page.object_name)  # a replay of an old run can fetch it
    assert stored.data is not None and stored.data.count(b"\n") == 164
