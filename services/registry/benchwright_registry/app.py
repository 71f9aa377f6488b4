"""Assembles the registry: catalog, dataset blobs, queries, run summaries."""

import asyncio
from dataclasses import dataclass, field

from faststream.nats import NatsBroker, NatsRouter
from nats.js.errors import NotFoundError as ObjectNotFoundError

from benchwright_registry.application import RegistryApplication, load_builtin_catalog
from benchwright_registry.projections import RunSummariesProjection
from benchwright_shared import subjects
from benchwright_shared.bus import jetstream
from benchwright_shared.contracts import (
    BenchmarkResolution,
    GetImpl,
    GetSubsetRows,
    ImplCode,
    RebuildProjection,
    RebuildResult,
    ResolveBenchmark,
    SubsetRows,
)
from benchwright_shared.contracts.base import Problem
from benchwright_shared.projection import ProjectionStore
from benchwright_shared.projection_runner import rebuild_projection, register_projection
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore


@dataclass
class RegistryService:
    settings: Settings
    name: str = "registry"
    router: NatsRouter = field(default_factory=NatsRouter)

    def __post_init__(self) -> None:
        self.blocking = BlockingStore(self.name)
        self.views = ProjectionStore(self.settings, self.name, [RunSummariesProjection()])
        self.app: RegistryApplication | None = None
        self._ready = asyncio.Event()
        self.broker: NatsBroker | None = None
        register_projection(
            self.router,
            store=self.views,
            blocking=self.blocking,
            projection="run_summaries",
            stream=subjects.RUNS_STREAM,
            subject=subjects.RUN_LOG_ALL,
            service=self.name,
            max_deliver=self.settings.max_deliver,
        )
        router = self.router

        async def ready() -> RegistryApplication:
            await self._ready.wait()
            assert self.app is not None
            return self.app

        @router.subscriber(subjects.RESOLVE_BENCHMARK, queue=self.name)
        async def resolve(query: ResolveBenchmark) -> BenchmarkResolution:
            return (await ready()).resolve(query)

        @router.subscriber(subjects.GET_SUBSET_ROWS, queue=self.name)
        async def subset_rows(query: GetSubsetRows) -> SubsetRows:
            return (await ready()).subset_rows(query)

        @router.subscriber(subjects.GET_IMPL, queue=self.name)
        async def impl(query: GetImpl) -> ImplCode:
            return (await ready()).impl(query)

        @router.subscriber(subjects.rebuild_subject(self.name), queue=self.name)
        async def rebuild(query: RebuildProjection) -> RebuildResult:
            if query.projection != "run_summaries" or self.broker is None:
                return RebuildResult(
                    projection=query.projection,
                    problem=Problem(title="unknown projection", status=404),
                )
            return await rebuild_projection(
                jetstream(self.broker),
                store=self.views,
                blocking=self.blocking,
                projection="run_summaries",
                stream=subjects.RUNS_STREAM,
                subject=subjects.RUN_LOG_ALL,
            )

    async def start(self, broker: NatsBroker) -> None:
        self.broker = broker
        catalog = await asyncio.to_thread(load_builtin_catalog)
        js = jetstream(broker)
        store = (
            await js.create_object_store(subjects.DATASETS_BUCKET)
            if not await _has_bucket(js)
            else await js.object_store(subjects.DATASETS_BUCKET)
        )
        for subset in catalog.subsets.values():
            try:
                info = await store.get_info(subset.object_name)
                if info.digest and not info.deleted:
                    continue  # content-addressed: the same name holds the same bytes
            except ObjectNotFoundError:
                pass
            await store.put(subset.object_name, subset.jsonl)
        self.app = RegistryApplication(catalog)
        self._ready.set()

    async def stop(self) -> None:
        self.views.close()
        self.blocking.close()


async def _has_bucket(js: object) -> bool:
    try:
        await js.object_store(subjects.DATASETS_BUCKET)  # type: ignore[attr-defined]
    except Exception:
        return False
    return True


def build(settings: Settings) -> RegistryService:
    return RegistryService(settings)
