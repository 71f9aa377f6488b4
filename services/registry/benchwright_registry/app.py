"""Assembles the registry: catalog, dataset blobs, queries, run summaries."""

import asyncio
from dataclasses import dataclass, field

from faststream.nats import NatsBroker, NatsRouter
from nats.js import JetStreamContext
from nats.js.errors import BucketNotFoundError
from nats.js.errors import NotFoundError as ObjectNotFoundError
from nats.js.object_store import ObjectStore

from benchwright_registry.application import RegistryApplication, load_builtin_catalog
from benchwright_registry.domain import Catalog
from benchwright_registry.projections import RunSummariesProjection
from benchwright_shared import subjects
from benchwright_shared.bus import jetstream
from benchwright_shared.contracts import (
    BenchmarkResolution,
    CatalogListing,
    GetImpl,
    GetSubsetRows,
    ImplCode,
    ListCatalog,
    ResolveBenchmark,
    SubsetRows,
)
from benchwright_shared.projection_runner import RUN_LOG_SOURCE, ProjectionHost
from benchwright_shared.settings import Settings


@dataclass
class RegistryService:
    settings: Settings
    name: str = "registry"
    router: NatsRouter = field(default_factory=NatsRouter)

    def __post_init__(self) -> None:
        self.views = ProjectionHost(
            self.settings,
            self.name,
            self.router,
            {"run_summaries": (RunSummariesProjection(), RUN_LOG_SOURCE)},
        )
        self.app: RegistryApplication | None = None
        self._ready = asyncio.Event()
        router = self.router

        async def ready() -> RegistryApplication:
            # Queries that arrive while the catalog loads wait for it.
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

        @router.subscriber(subjects.LIST_CATALOG, queue=self.name)
        async def list_catalog(query: ListCatalog) -> CatalogListing:
            return (await ready()).list_catalog(query)

    async def start(self, broker: NatsBroker) -> None:
        self.views.broker = broker
        catalog = await asyncio.to_thread(load_builtin_catalog)
        await publish_datasets(jetstream(broker), catalog)
        self.app = RegistryApplication(catalog)
        self._ready.set()

    async def stop(self) -> None:
        self.views.close()


async def dataset_bucket(js: JetStreamContext) -> ObjectStore:
    try:
        return await js.object_store(subjects.DATASETS_BUCKET)
    except BucketNotFoundError:
        return await js.create_object_store(subjects.DATASETS_BUCKET)


async def publish_datasets(js: JetStreamContext, catalog: Catalog) -> None:
    """Put every subset's rows in the object store, once: names are content hashes."""
    bucket = await dataset_bucket(js)
    for subset in catalog.subsets.values():
        try:
            info = await bucket.get_info(subset.object_name)
            if info.digest and not info.deleted:
                continue
        except ObjectNotFoundError:
            pass
        await bucket.put(subset.object_name, subset.jsonl)


def build(settings: Settings) -> RegistryService:
    return RegistryService(settings)
