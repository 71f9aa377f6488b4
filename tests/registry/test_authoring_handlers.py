"""Authoring over a real nats-server: rows travel as uploads, snapshots land in the bucket."""

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from faststream.nats import NatsBroker
from nats.js.errors import ObjectNotFoundError

from benchwright_registry.app import RegistryService
from benchwright_registry.handlers import dataset_bucket
from benchwright_shared import subjects
from benchwright_shared.bus import MIDDLEWARES, ask, declare_streams, jetstream
from benchwright_shared.contracts import (
    BenchmarkResolution,
    GetSubsetRows,
    RebuildProjection,
    RebuildResult,
    ResolveBenchmark,
    SubsetRows,
)
from benchwright_shared.contracts.registry import (
    AppendTasks,
    CreateBenchmark,
    CreateSubset,
    ListBenchmarks,
    RegistryAnswer,
    TasksUpload,
)
from benchwright_shared.hashing import canonical_json, sha256_hex
from benchwright_shared.settings import Settings
from tests.conftest import reset_nats

pytestmark = pytest.mark.connected

ACCOUNT = "acct_x"


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


def rows(*ids: str) -> list[dict[str, Any]]:
    return [{"task_id": i, "input": i, "expected": i} for i in ids]


async def upload(broker: NatsBroker, task_rows: list[dict[str, Any]], **override: Any) -> Any:
    data = "".join(canonical_json(r) + "\n" for r in task_rows).encode()
    name = f"{subjects.UPLOADS_PREFIX}{uuid.uuid4()}.jsonl"
    await (await dataset_bucket(jetstream(broker))).put(name, data)
    fields = {"object_name": name, "sha256": sha256_hex(data), "count": len(task_rows)}
    return TasksUpload(**{**fields, **override})


async def test_rows_arrive_as_uploads_and_snapshots_are_published(registry: NatsBroker) -> None:
    made = await ask(registry, CreateBenchmark(account=ACCOUNT, name="Up"), RegistryAnswer)
    assert made.problem is None and made.created and made.benchmark is not None
    bm = made.benchmark.id

    sent = await upload(registry, rows("a", "b"))
    created = await ask(
        registry,
        CreateSubset(account=ACCOUNT, benchmark_id=bm, slug="v1", rolling=True, tasks=sent),
        RegistryAnswer,
    )
    assert created.problem is None and created.subset is not None
    sub = created.subset
    bucket = await dataset_bucket(jetstream(registry))
    # The registry keeps the rows in its own store and throws the upload away.
    with pytest.raises(ObjectNotFoundError):
        await bucket.get(sent.object_name)

    appended = await ask(
        registry,
        AppendTasks(
            account=ACCOUNT,
            subset_id=sub.id,
            tasks=await upload(registry, rows("c")),
            idempotency_key="k",
        ),
        RegistryAnswer,
    )
    assert appended.append is not None and appended.append.task_count == 3

    for snapshot_id, count in ((sub.id, 2), (appended.append.snapshot_id, 3)):
        page = await ask(registry, GetSubsetRows(subset_id=snapshot_id, limit=10), SubsetRows)
        assert page.total == count and page.object_name == f"{snapshot_id}.jsonl"
        # What a sandbox copies: the snapshot's rows, byte for byte, under its digest.
        stored = (await bucket.get(page.object_name)).data or b""
        assert sha256_hex(stored) == page.content_sha256
        assert stored.decode().count("\n") == count

    resolved = await ask(
        registry, ResolveBenchmark(account=ACCOUNT, benchmark="up"), BenchmarkResolution
    )
    assert resolved.subset_id == appended.append.snapshot_id and resolved.task_count == 3


async def test_a_bad_upload_is_refused_naming_tasks(registry: NatsBroker) -> None:
    made = await ask(registry, CreateBenchmark(account=ACCOUNT, name="Up"), RegistryAnswer)
    assert made.benchmark is not None

    async def create(tasks: TasksUpload) -> RegistryAnswer:
        command = CreateSubset(
            account=ACCOUNT, benchmark_id=made.benchmark.id, slug="v1", tasks=tasks
        )
        return await ask(registry, command, RegistryAnswer)

    for tasks in (
        await upload(registry, rows("a"), sha256="0" * 64),
        await upload(registry, rows("a"), count=2),
        TasksUpload(object_name="uploads/missing.jsonl", sha256="x", count=1),
        # Only uploads may be read: not another subset's dataset object.
        TasksUpload(object_name="sub_000000000000.jsonl", sha256="x", count=1),
    ):
        answer = await create(tasks)
        assert answer.problem is not None
        assert (answer.problem.status, answer.problem.field) == (400, "tasks")


async def test_the_catalog_read_model_rebuilds_from_the_store(registry: NatsBroker) -> None:
    for name in ("One", "Two"):
        await ask(registry, CreateBenchmark(account=ACCOUNT, name=name), RegistryAnswer)
    rebuilt = await ask(
        registry,
        RebuildProjection(projection="catalog"),
        RebuildResult,
        subject=subjects.rebuild_subject("registry"),
    )
    assert rebuilt.problem is None and rebuilt.applied == 2
    assert rebuilt.digest == rebuilt.before_digest
    listed = await ask(registry, ListBenchmarks(account=ACCOUNT, sort="name"), RegistryAnswer)
    own = [b.name for b in listed.benchmarks if b.owner == ACCOUNT]
    assert own == ["One", "Two"]
