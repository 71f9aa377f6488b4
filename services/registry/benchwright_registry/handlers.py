"""The registry's questions and authoring requests, answered over request/reply.

Thin: read the message (and, for task rows, the upload it names), call the
application on the store thread, answer. A refusal is raised, never caught here:
the bus answers it as the reply's ``problem`` (``benchwright_shared.bus.ANSWER_REFUSALS``).
"""

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from faststream.nats import NatsBroker, NatsRouter
from nats.js import JetStreamContext
from nats.js.errors import BucketNotFoundError
from nats.js.errors import NotFoundError as ObjectNotFoundError
from nats.js.object_store import ObjectStore

from benchwright_registry.application import AuthoringApplication, RegistryApplication
from benchwright_registry.application.reads import FROM_RUN_EVENTS
from benchwright_shared import subjects
from benchwright_shared.bus import ask
from benchwright_shared.contracts import (
    BenchmarkResolution,
    CatalogListing,
    GetImpl,
    GetRunEvents,
    GetSubsetRows,
    ImplCode,
    ListCatalog,
    ResolveBenchmark,
    RunEventsPage,
    SubsetRows,
)
from benchwright_shared.contracts.registry import (
    AppendTasks,
    CreateBenchmark,
    CreateImpl,
    CreateSubset,
    DeleteBenchmark,
    DeleteImpl,
    DeleteSubset,
    ListBenchmarks,
    ReadBenchmark,
    ReadImpl,
    ReadSubset,
    RegistryAnswer,
    TasksUpload,
    UpdateBenchmark,
    UpdateImpl,
    UpdateSubset,
)
from benchwright_shared.contracts.registry_reads import (
    CompareImpl,
    Comparison,
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
from benchwright_shared.hashing import sha256_hex
from benchwright_shared.refusal import Refused
from benchwright_shared.store import BlockingStore

log = logging.getLogger(__name__)
QUEUE = "registry"


@dataclass
class Runtime:
    """What the handlers reach: the application (once the catalog is loaded), the store
    thread, and JetStream (uploads and dataset objects)."""

    ready: Callable[[], Awaitable[RegistryApplication]]
    store: BlockingStore
    jetstream: Callable[[], JetStreamContext]
    # Dataset objects known to be in the bucket, so each is checked once per process.
    published: set[str] = field(default_factory=set)


async def dataset_bucket(js: JetStreamContext) -> ObjectStore:
    try:
        return await js.object_store(subjects.DATASETS_BUCKET)
    except BucketNotFoundError:
        return await js.create_object_store(subjects.DATASETS_BUCKET)


def _bad_upload(detail: str) -> Refused:
    return Refused(400, "invalid tasks", detail, field="tasks", code="invalid_argument")


async def read_upload(js: JetStreamContext, upload: TasksUpload) -> list[dict[str, Any]]:
    """The rows of an upload, checked against its digest and count."""
    name = upload.object_name
    if upload.bucket != subjects.DATASETS_BUCKET or not name.startswith(subjects.UPLOADS_PREFIX):
        raise _bad_upload("tasks must be uploaded under the datasets bucket's uploads/")
    try:
        data = (await (await dataset_bucket(js)).get(name)).data or b""
    except ObjectNotFoundError:
        raise _bad_upload(f"no upload {name!r}") from None
    if sha256_hex(data) != upload.sha256:
        raise _bad_upload("the upload does not match its digest")
    try:
        # Lines end at "\n" only: str.splitlines would also split inside a JSON string
        # that holds U+2028, U+2029 or U+0085 raw (real datasets do).
        rows = [json.loads(line) for line in data.split(b"\n") if line.strip()]
    except ValueError as exc:
        raise _bad_upload(f"the upload is not JSON lines: {exc}") from None
    if len(rows) != upload.count:
        raise _bad_upload(f"the upload holds {len(rows)} rows, not {upload.count}")
    return rows


async def discard_upload(js: JetStreamContext, upload: TasksUpload | None) -> None:
    if upload is None or not upload.object_name.startswith(subjects.UPLOADS_PREFIX):
        return
    try:
        await (await dataset_bucket(js)).delete(upload.object_name)
    except Exception:
        log.warning("could not delete upload %s", upload.object_name, exc_info=True)


def register(router: NatsRouter, rt: Runtime) -> None:
    async def call[T](fn: Callable[[RegistryApplication], T]) -> T:
        app = await rt.ready()
        return await rt.store.run(fn, app)

    def authoring(app: RegistryApplication) -> AuthoringApplication:
        if app.authoring is None:
            raise Refused(503, "authoring unavailable", "this registry has no store")
        return app.authoring

    # -- the pipeline's questions ---------------------------------------------------------
    @router.subscriber(subjects.RESOLVE_BENCHMARK, queue=QUEUE)
    async def resolve(query: ResolveBenchmark) -> BenchmarkResolution:
        return await call(lambda app: app.resolve(query))

    @router.subscriber(subjects.GET_SUBSET_ROWS, queue=QUEUE)
    async def subset_rows(query: GetSubsetRows) -> SubsetRows:
        rows = await call(lambda app: app.subset_rows(query))
        if rows.problem is None and rows.object_name and rows.object_name not in rt.published:
            await ensure_published(rows.subset_id, rows.object_name)
        return rows

    async def ensure_published(subset_id: str, object_name: str) -> None:
        """An authored snapshot's rows, or a retired built-in subset's, go into the bucket
        the first time someone asks (a replay of a run that pinned them)."""
        bucket = await dataset_bucket(rt.jetstream())
        try:
            info = await bucket.get_info(object_name)
            present = bool(info.digest) and not info.deleted
        except ObjectNotFoundError:
            present = False
        if not present:
            retired = await call(lambda app: app.retired_jsonl(subset_id))
            if retired is not None:
                await bucket.put(object_name, retired)
            else:
                found = await call(lambda app: app.authored_snapshot(subset_id))
                if found is None:
                    return  # a current built-in subset: published at start
                lines, _ = found
                rows = lines.page(0, len(lines))
                await bucket.put(object_name, "".join(line + "\n" for line in rows).encode())
        rt.published.add(object_name)

    @router.subscriber(subjects.GET_IMPL, queue=QUEUE)
    async def impl(query: GetImpl) -> ImplCode:
        return await call(lambda app: app.impl(query))

    @router.subscriber(subjects.LIST_CATALOG, queue=QUEUE)
    async def list_catalog(query: ListCatalog) -> CatalogListing:
        return await call(lambda app: app.list_catalog(query))

    # -- benchmarks -----------------------------------------------------------------------
    @router.subscriber(subjects.CREATE_BENCHMARK, queue=QUEUE)
    async def create_benchmark(command: CreateBenchmark) -> RegistryAnswer:
        def run(app: RegistryApplication) -> RegistryAnswer:
            view, created = authoring(app).create_benchmark(command)
            return RegistryAnswer(benchmark=view, created=created)

        return await call(run)

    @router.subscriber(subjects.UPDATE_BENCHMARK, queue=QUEUE)
    async def update_benchmark(command: UpdateBenchmark) -> RegistryAnswer:
        return await call(
            lambda app: RegistryAnswer(benchmark=authoring(app).update_benchmark(command))
        )

    @router.subscriber(subjects.READ_BENCHMARK, queue=QUEUE)
    async def read_benchmark(query: ReadBenchmark) -> RegistryAnswer:
        def run(app: RegistryApplication) -> RegistryAnswer:
            builtin = app.builtin_benchmark(query.benchmark_id)
            if builtin is not None:
                return RegistryAnswer(benchmark=builtin)
            return RegistryAnswer(
                benchmark=authoring(app).benchmark(query.account, query.benchmark_id)
            )

        return await call(run)

    @router.subscriber(subjects.LIST_BENCHMARKS, queue=QUEUE)
    async def list_benchmarks(query: ListBenchmarks) -> RegistryAnswer:
        def run(app: RegistryApplication) -> RegistryAnswer:
            page, token = app.list_benchmarks(query)
            return RegistryAnswer(benchmarks=page, next_page_token=token)

        return await call(run)

    @router.subscriber(subjects.DELETE_BENCHMARK, queue=QUEUE)
    async def delete_benchmark(command: DeleteBenchmark) -> RegistryAnswer:
        def run(app: RegistryApplication) -> RegistryAnswer:
            authoring(app).delete_benchmark(command.account, command.benchmark_id)
            return RegistryAnswer()

        return await call(run)

    # -- subsets --------------------------------------------------------------------------
    async def with_rows(
        upload: TasksUpload | None,
        fn: Callable[[RegistryApplication, list[dict[str, Any]]], RegistryAnswer],
    ) -> RegistryAnswer:
        js = rt.jetstream()
        rows = await read_upload(js, upload) if upload is not None else []
        try:
            return await call(lambda app: fn(app, rows))
        finally:
            await discard_upload(js, upload)

    @router.subscriber(subjects.CREATE_SUBSET, queue=QUEUE)
    async def create_subset(command: CreateSubset) -> RegistryAnswer:
        def run(app: RegistryApplication, rows: list[dict[str, Any]]) -> RegistryAnswer:
            view, created = authoring(app).create_subset(command, rows)
            return RegistryAnswer(subset=view, created=created)

        return await with_rows(command.tasks, run)

    @router.subscriber(subjects.APPEND_TASKS, queue=QUEUE)
    async def append_tasks(command: AppendTasks) -> RegistryAnswer:
        def run(app: RegistryApplication, rows: list[dict[str, Any]]) -> RegistryAnswer:
            result, created = authoring(app).append_tasks(command, rows)
            return RegistryAnswer(append=result, created=created)

        return await with_rows(command.tasks, run)

    @router.subscriber(subjects.UPDATE_SUBSET, queue=QUEUE)
    async def update_subset(command: UpdateSubset) -> RegistryAnswer:
        return await call(lambda app: RegistryAnswer(subset=authoring(app).update_subset(command)))

    @router.subscriber(subjects.READ_SUBSET, queue=QUEUE)
    async def read_subset(query: ReadSubset) -> RegistryAnswer:
        def run(app: RegistryApplication) -> RegistryAnswer:
            builtin = app.builtin_subset(query.subset_id)
            if builtin is not None:
                rows = app.builtin_subset_rows(query.subset_id, query.rows_offset, query.rows_limit)
                return RegistryAnswer(subset=builtin, rows=rows)
            view, rows = authoring(app).subset(
                query.account, query.subset_id, query.rows_offset, query.rows_limit
            )
            return RegistryAnswer(subset=view, rows=rows)

        return await call(run)

    @router.subscriber(subjects.DELETE_SUBSET, queue=QUEUE)
    async def delete_subset(command: DeleteSubset) -> RegistryAnswer:
        def run(app: RegistryApplication) -> RegistryAnswer:
            authoring(app).delete_subset(command.account, command.subset_id)
            return RegistryAnswer()

        return await call(run)

    # -- impls ----------------------------------------------------------------------------
    @router.subscriber(subjects.CREATE_IMPL, queue=QUEUE)
    async def create_impl(command: CreateImpl) -> RegistryAnswer:
        def run(app: RegistryApplication) -> RegistryAnswer:
            view, created = authoring(app).create_impl(command)
            return RegistryAnswer(impl=view, created=created)

        return await call(run)

    @router.subscriber(subjects.UPDATE_IMPL, queue=QUEUE)
    async def update_impl(command: UpdateImpl) -> RegistryAnswer:
        return await call(lambda app: RegistryAnswer(impl=authoring(app).update_impl(command)))

    @router.subscriber(subjects.READ_IMPL, queue=QUEUE)
    async def read_impl(query: ReadImpl) -> RegistryAnswer:
        def run(app: RegistryApplication) -> RegistryAnswer:
            view, code = app.read_impl(query.account, query.impl_id)
            return RegistryAnswer(impl=view, code=code if query.with_code else None)

        return await call(run)

    @router.subscriber(subjects.DELETE_IMPL, queue=QUEUE)
    async def delete_impl(command: DeleteImpl) -> RegistryAnswer:
        def run(app: RegistryApplication) -> RegistryAnswer:
            authoring(app).delete_impl(command.account, command.impl_id)
            return RegistryAnswer()

        return await call(run)


# How long the registry waits for the orchestrator's run log (impls from runs).
RUN_LOG_TIMEOUT_S = 15.0


def register_reads(router: NatsRouter, rt: Runtime, broker: Callable[[], NatsBroker]) -> None:
    """Reads over runs (leaderboards, listings, comparisons, task ranges), impls frozen
    from a run, and the phase-cache index the orchestrator asks."""

    async def call[T](fn: Callable[[RegistryApplication], T]) -> T:
        app = await rt.ready()
        return await rt.store.run(fn, app)

    @router.subscriber(subjects.READ_LEADERBOARD, queue=QUEUE)
    async def leaderboard(query: ReadLeaderboard) -> Leaderboard:
        return await call(lambda app: app.reads.leaderboard(query))

    @router.subscriber(subjects.LIST_REGISTRY_RUNS, queue=QUEUE)
    async def runs(query: ListRegistryRuns) -> RegistryRunList:
        return await call(lambda app: app.reads.runs(query))

    @router.subscriber(subjects.COMPARE_IMPL, queue=QUEUE)
    async def compare(query: CompareImpl) -> Comparison:
        return await call(lambda app: app.reads.compare(query))

    @router.subscriber(subjects.READ_TASK_RANGE, queue=QUEUE)
    async def task_range(query: ReadTaskRange) -> TaskRange:
        return await call(lambda app: app.reads.task_range(query))

    @router.subscriber(subjects.FIND_PHASE_CELL, queue=QUEUE)
    async def phase_cell(query: FindPhaseCell) -> PhaseCell:
        return await call(lambda app: app.reads.phase_cell(query))

    @router.subscriber(subjects.CREATE_IMPL_FROM_RUN, queue=QUEUE)
    async def impl_from_run(command: CreateImplFromRun) -> RegistryAnswer:
        """Read the run's log from the orchestrator, then register its scorer."""
        try:
            page = await ask(
                broker(),
                GetRunEvents(run_id=command.run_id, types=list(FROM_RUN_EVENTS), limit=5000),
                RunEventsPage,
                timeout=RUN_LOG_TIMEOUT_S,
            )
        except Exception:
            log.warning("registry: no run log for %s", command.run_id, exc_info=True)
            raise Refused(
                503,
                "run log unavailable",
                "the orchestrator did not answer; try again",
                code="unavailable",
            ) from None
        # A deleted run's log answers a problem: it reads as missing, like any other.
        events = [] if page.problem is not None else page.events

        def run(app: RegistryApplication) -> RegistryAnswer:
            view, created = app.reads.impl_from_run(command, events)
            return RegistryAnswer(impl=view, created=created)

        return await call(run)
