"""Assembles the registry: catalog, authored store, dataset blobs, queries, read models."""

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from faststream.nats import NatsBroker, NatsRouter
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError as ObjectNotFoundError

from benchwright_registry import build_handlers, handlers
from benchwright_registry.application import (
    AuthoringApplication,
    RegistryApplication,
    builtin_rows,
    load_builtin_catalog,
)
from benchwright_registry.application.catalog_cache import cached_catalog
from benchwright_registry.domain import Catalog, Subset
from benchwright_registry.projections import (
    CatalogProjection,
    PhaseCellsProjection,
    RunSummariesProjection,
)
from benchwright_shared.bus import jetstream
from benchwright_shared.contracts import RebuildResult
from benchwright_shared.projection import Projection
from benchwright_shared.projection_runner import RUN_LOG_SOURCE, ProjectionHost, Source
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore, eventsourcing_env

log = logging.getLogger(__name__)
# How often a process picks up benchmarks other registry processes stored.
FOLLOW_INTERVAL_S = 1.0
# The catalog read model follows the registry's own event store, not a stream.
OWN_STORE = Source(stream="", subjects=(), replay_subject="")


class RegistryViews(ProjectionHost):
    """The registry's read models; ``catalog`` is rebuilt from the registry's own store."""

    def __init__(
        self,
        settings: Settings,
        service: str,
        router: NatsRouter,
        projections: Mapping[str, tuple[Projection, Source]],
        *,
        blocking: BlockingStore,
    ) -> None:
        super().__init__(settings, service, router, projections, blocking=blocking)
        self.rebuild_catalog: Callable[[], int] | None = None

    async def rebuild(self, projection: str) -> RebuildResult:
        if projection != CatalogProjection.name or self.rebuild_catalog is None:
            return await super().rebuild(projection)
        before = await self.blocking.run(self.store.digest, projection)
        applied = await self.blocking.run(self.rebuild_catalog)
        digest = await self.blocking.run(self.store.digest, projection)
        return RebuildResult(
            projection=projection, applied=applied, digest=digest, before_digest=before
        )


@dataclass
class RegistryService:
    settings: Settings
    name: str = "registry"
    router: NatsRouter = field(default_factory=NatsRouter)

    def __post_init__(self) -> None:
        # One thread for the authored store and the read models: writes there are rare.
        self.blocking = BlockingStore(self.name)
        self.views = RegistryViews(
            self.settings,
            self.name,
            self.router,
            {
                "run_summaries": (RunSummariesProjection(), RUN_LOG_SOURCE),
                PhaseCellsProjection.name: (PhaseCellsProjection(), RUN_LOG_SOURCE),
                CatalogProjection.name: (CatalogProjection(), OWN_STORE),
            },
            blocking=self.blocking,
        )
        self.authoring = AuthoringApplication(
            env=eventsourcing_env(self.settings, self.name), views=self.views.store
        )
        self.app: RegistryApplication | None = None
        self._ready = asyncio.Event()
        self._broker: NatsBroker | None = None
        self._follow_task: asyncio.Task[None] | None = None

        async def ready() -> RegistryApplication:
            # Queries that arrive while the catalog loads wait for it.
            await self._ready.wait()
            assert self.app is not None
            return self.app

        runtime = handlers.Runtime(ready, self.blocking, self._jetstream)
        handlers.register(self.router, runtime)
        build_handlers.register(self.router, runtime)
        handlers.register_reads(self.router, runtime, self._connected_broker)

    def _connected_broker(self) -> NatsBroker:
        if self._broker is None:
            raise RuntimeError("the registry's broker is not connected yet")
        return self._broker

    def _jetstream(self) -> JetStreamContext:
        if self._broker is None:
            raise RuntimeError("the registry's broker is not connected yet")
        return jetstream(self._broker)

    async def start(self, broker: NatsBroker) -> None:
        self._broker = broker
        self.views.broker = broker
        catalog = await asyncio.to_thread(
            cached_catalog, self.settings.cache_dir, load_builtin_catalog
        )
        rows = builtin_rows(catalog)
        self.views.rebuild_catalog = lambda: self.authoring.rebuild_catalog(rows)
        await self.blocking.run(self.authoring.seed_catalog, rows)
        await self.blocking.run(self.authoring.follow)
        self.app = RegistryApplication(catalog, self.authoring)
        # The rows go to the object store behind the start (a new data directory takes
        # ~20 MB); queries wait for them, since an answer may name an object.
        self._follow_task = asyncio.create_task(
            self._publish_then_follow(catalog), name="registry-catalog-follow"
        )

    async def _publish_then_follow(self, catalog: Catalog) -> None:
        while True:
            try:
                await publish_datasets(jetstream(self._connected_broker()), catalog)
                break
            except Exception:
                log.exception("registry: publishing the built-in datasets failed; retrying")
                await asyncio.sleep(1.0)
        self._ready.set()
        await self._follow()

    async def _follow(self) -> None:
        """Pick up benchmarks other registry processes stored (this one's follow at once)."""
        while True:
            await asyncio.sleep(FOLLOW_INTERVAL_S)
            try:
                await self.blocking.run(self.authoring.follow)
            except Exception:
                log.exception("registry: following the authored store failed")

    async def stop(self) -> None:
        if self._follow_task is not None:
            self._follow_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._follow_task
        self.blocking.close()
        self.authoring.close()
        self.views.close()


async def publish_datasets(js: JetStreamContext, catalog: Catalog) -> None:
    """Put every current subset's rows in the object store, once: names are content hashes."""
    bucket = await handlers.dataset_bucket(js)

    async def stored(subset: Subset) -> bool:
        try:
            info = await bucket.get_info(subset.object_name)
        except ObjectNotFoundError:
            return False
        return bool(info.digest) and not info.deleted

    # A few at a time: each object is a string of chunk publishes, each waiting for its ack.
    lanes = asyncio.Semaphore(8)

    async def publish(subset: Subset) -> None:
        async with lanes:
            if not await stored(subset):
                await bucket.put(subset.object_name, subset.jsonl)

    # Retired subsets wait until a replay asks for them (``handlers.ensure_published``).
    current = [s for s in catalog.subsets.values() if not s.retired]
    await asyncio.gather(*(publish(s) for s in current))


def build(settings: Settings) -> RegistryService:
    return RegistryService(settings)
