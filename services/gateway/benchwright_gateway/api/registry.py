"""``/v1/benchmarks``, ``/v1/subsets``, ``/v1/impls``: the registry, read and authored.

The gateway checks the caller's scope and the body, then asks the registry
service over NATS request/reply; the registry owns the data and decides who
sees what (another account's private benchmark answers 404, like a missing
one). Reads need ``registry:read``, writes ``registry:publish``. Task rows are
put in the datasets bucket and named in the request: a thousand rows can be
larger than a NATS message.
"""

import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.responses import PlainTextResponse
from nats.js.errors import BucketNotFoundError
from nats.js.object_store import ObjectStore
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from benchwright_gateway.api.auth import Principal
from benchwright_gateway.api.errors import raise_for
from benchwright_gateway.api.guard import MAX_POSITION
from benchwright_gateway.api.models import TrialsIn
from benchwright_gateway.context import GatewayContext
from benchwright_shared import subjects
from benchwright_shared.bus import ask, jetstream
from benchwright_shared.contracts.base import Contract
from benchwright_shared.contracts.registry import (
    AppendTasks,
    BenchmarkSort,
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
from benchwright_shared.hashing import canonical_json, sha256_hex
from benchwright_shared.refusal import Refused

READ, PUBLISH = "registry:read", "registry:publish"
TIMEOUT_S = 30.0
MAX_TASKS = 1000
MAX_ROWS_PER_PAGE = 200
MAX_CODE_CHARS = 256 * 1024

Tag = Annotated[str, Field(min_length=1, max_length=100)]


class BenchmarkIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=10_000)
    category: str = Field(default="", max_length=100)
    tags: list[Tag] = Field(default_factory=list, max_length=50)


class BenchmarkPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, min_length=1, max_length=200)
    description: str | None = Field(default=None, max_length=10_000)
    category: str | None = Field(default=None, max_length=100)
    tags: list[Tag] | None = Field(default=None, max_length=50)


class SubsetIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    slug: str = Field(min_length=1, max_length=100)
    name: str = Field(default="", max_length=200)
    description: str = Field(default="", max_length=10_000)
    # Rows {"task_id", "input", "expected", ...}; at most 1,000 a request.
    tasks: list[dict[str, Any]] = Field(default_factory=list)
    rolling: StrictBool = False
    # {"code": <task_impl.py>, "label": ...}: what a pin of this subset runs by default.
    grader: dict[str, Any] | None = None
    default_trials: TrialsIn | None = None


class SubsetPatch(BaseModel):
    """Rename or describe; ``rolling: false`` freezes a rolling subset, for good."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, max_length=200)
    description: str | None = Field(default=None, max_length=10_000)
    rolling: StrictBool | None = None


class AppendIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tasks: list[dict[str, Any]] = Field(min_length=1)


class ImplIn(BaseModel):
    """Scorer code. The benchmark is the subset's; ``benchmark`` alone works too."""

    model_config = ConfigDict(extra="forbid")

    subset: str | None = Field(default=None, min_length=1, max_length=300)
    benchmark: str | None = Field(default=None, min_length=1, max_length=300)
    label: str = Field(default="", max_length=200)
    description: str = Field(default="", max_length=2000)
    code: str = Field(min_length=1, max_length=MAX_CODE_CHARS)
    # Accepted for compatibility: an impl is always Python.
    language: str | None = Field(default=None, max_length=20)
    official: StrictBool = False


class ImplPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str | None = Field(default=None, max_length=200)
    description: str | None = Field(default=None, max_length=2000)
    official: StrictBool | None = None


def _show(kind: str, view: BaseModel | None) -> dict[str, Any]:
    assert view is not None
    return {"object": kind, **view.model_dump(mode="json")}


def _check_tasks(tasks: list[dict[str, Any]]) -> None:
    if len(tasks) > MAX_TASKS:
        raise Refused(
            400,
            "too many tasks",
            f"{len(tasks)} rows: at most {MAX_TASKS:,} per request; create the subset with "
            "rolling=true and add the rest with append_tasks (POST /v1/subsets/{id}/tasks)",
            field="tasks",
            code="invalid_argument",
        )


def _check_language(language: str | None) -> None:
    if language not in (None, "python"):
        raise Refused(
            400,
            "unsupported language",
            "impls are Python",
            field="language",
            code="invalid_argument",
        )


def _wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/" not in accept


def build_router(ctx: GatewayContext, principal: Callable[..., Awaitable[Principal]]) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["registry"])
    Caller = Annotated[Principal, Depends(principal)]

    async def registry(request: Contract) -> RegistryAnswer:
        answer = await ask(ctx.bus(), request, RegistryAnswer, timeout=TIMEOUT_S)
        raise_for(answer.problem)
        return answer

    async def bucket() -> ObjectStore:
        js = jetstream(ctx.bus())
        try:
            return await js.object_store(subjects.DATASETS_BUCKET)
        except BucketNotFoundError:
            return await js.create_object_store(subjects.DATASETS_BUCKET)

    async def upload(tasks: list[dict[str, Any]]) -> TasksUpload | None:
        """Put rows in the datasets bucket for the registry to read (and then delete)."""
        if not tasks:
            return None
        data = "".join(canonical_json(row) + "\n" for row in tasks).encode()
        name = f"{subjects.UPLOADS_PREFIX}{uuid.uuid4()}.jsonl"
        await (await bucket()).put(name, data)
        return TasksUpload(object_name=name, sha256=sha256_hex(data), count=len(tasks))

    def created(answer: RegistryAnswer, response: Response) -> None:
        if not answer.created:
            response.status_code = 200

    # -- benchmarks ---------------------------------------------------------------------
    @router.post("/benchmarks", status_code=201)
    async def create_benchmark(
        body: BenchmarkIn,
        caller: Caller,
        response: Response,
        idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
    ) -> dict[str, Any]:
        """A new benchmark, private to the caller; a repeated Idempotency-Key returns it."""
        caller.require(PUBLISH)
        answer = await registry(
            CreateBenchmark(
                account=caller.account, idempotency_key=idempotency_key, **body.model_dump()
            )
        )
        created(answer, response)
        return _show("benchmark", answer.benchmark)

    @router.get("/benchmarks")
    async def list_benchmarks(
        caller: Caller,
        tag: Annotated[str | None, Query(max_length=100)] = None,
        sort: BenchmarkSort = "-created_at",
        limit: Annotated[int, Query(ge=1, le=100)] = 50,
        page_token: Annotated[str | None, Query(max_length=1000)] = None,
    ) -> dict[str, Any]:
        """The caller's benchmarks, the built-in catalog and public benchmarks."""
        caller.require(READ)
        answer = await registry(
            ListBenchmarks(
                account=caller.account, tag=tag, sort=sort, limit=limit, page_token=page_token
            )
        )
        return {
            "object": "list",
            "data": [_show("benchmark", b) for b in answer.benchmarks],
            "next_page_token": answer.next_page_token,
        }

    @router.get("/benchmarks/{benchmark_id}")
    async def get_benchmark(benchmark_id: str, caller: Caller) -> dict[str, Any]:
        """One benchmark with its subsets and impls."""
        caller.require(READ)
        answer = await registry(ReadBenchmark(account=caller.account, benchmark_id=benchmark_id))
        return _show("benchmark", answer.benchmark)

    @router.patch("/benchmarks/{benchmark_id}")
    async def update_benchmark(
        benchmark_id: str, body: BenchmarkPatch, caller: Caller
    ) -> dict[str, Any]:
        """Change the name, description, category or tags (owner only). Visibility is not
        patched: it follows the benchmark's runs."""
        caller.require(PUBLISH)
        answer = await registry(
            UpdateBenchmark(account=caller.account, benchmark_id=benchmark_id, **body.model_dump())
        )
        return _show("benchmark", answer.benchmark)

    @router.delete("/benchmarks/{benchmark_id}")
    async def delete_benchmark(benchmark_id: str, caller: Caller) -> dict[str, Any]:
        """Remove a benchmark (owner only); 409 while a public run references it."""
        caller.require(PUBLISH)
        await registry(DeleteBenchmark(account=caller.account, benchmark_id=benchmark_id))
        return {"object": "benchmark", "id": benchmark_id, "deleted": True}

    # -- subsets ------------------------------------------------------------------------
    @router.post("/benchmarks/{benchmark_id}/subsets", status_code=201)
    async def create_subset(
        benchmark_id: str, body: SubsetIn, caller: Caller, response: Response
    ) -> dict[str, Any]:
        """A subset whose id is the content address of its tasks: the same tasks under the
        same slug are the same subset (200 on a repeat)."""
        caller.require(PUBLISH)
        _check_tasks(body.tasks)
        answer = await registry(
            CreateSubset(
                account=caller.account,
                benchmark_id=benchmark_id,
                slug=body.slug,
                name=body.name,
                description=body.description,
                rolling=body.rolling,
                grader=body.grader,
                default_trials=body.default_trials.model_dump() if body.default_trials else None,
                tasks=await upload(body.tasks),
            )
        )
        created(answer, response)
        return _show("subset", answer.subset)

    @router.get("/subsets/{subset_id}")
    async def get_subset(subset_id: str, caller: Caller) -> dict[str, Any]:
        """A subset by its id or any of its snapshot ids."""
        caller.require(READ)
        answer = await registry(ReadSubset(account=caller.account, subset_id=subset_id))
        return _show("subset", answer.subset)

    @router.get("/subsets/{subset_id}/tasks")
    async def subset_tasks(
        subset_id: str,
        caller: Caller,
        offset: Annotated[int, Query(ge=0, le=MAX_POSITION)] = 0,
        limit: Annotated[int, Query(ge=1, le=MAX_ROWS_PER_PAGE)] = 100,
    ) -> dict[str, Any]:
        """A page of the task rows of a subset (its latest snapshot) or of one snapshot."""
        caller.require(READ)
        answer = await registry(
            ReadSubset(
                account=caller.account, subset_id=subset_id, rows_offset=offset, rows_limit=limit
            )
        )
        view = answer.subset
        assert view is not None
        # The subset's own id means its latest snapshot; a snapshot id, that snapshot.
        wanted = view.snapshot_id if subset_id == view.id else subset_id
        snapshot = next((s for s in view.snapshots if s.id == wanted), None)
        total = snapshot.task_count if snapshot is not None else view.task_count
        return {
            "object": "list",
            "subset_id": view.id,
            "snapshot_id": snapshot.id if snapshot is not None else view.snapshot_id,
            "total": total,
            "offset": offset,
            "data": answer.rows,
            "has_more": offset + len(answer.rows) < total,
        }

    @router.patch("/subsets/{subset_id}")
    async def update_subset(subset_id: str, body: SubsetPatch, caller: Caller) -> dict[str, Any]:
        """Rename, describe, or freeze (``rolling: false``, one way) a subset."""
        caller.require(PUBLISH)
        answer = await registry(
            UpdateSubset(account=caller.account, subset_id=subset_id, **body.model_dump())
        )
        return _show("subset", answer.subset)

    @router.post("/subsets/{subset_id}/tasks", status_code=201)
    async def append_tasks(
        subset_id: str,
        body: AppendIn,
        caller: Caller,
        response: Response,
        idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
    ) -> dict[str, Any]:
        """Append rows to a rolling subset: a new snapshot. A repeated Idempotency-Key
        answers the first append's result and adds nothing; a frozen subset answers 409
        ``subset_frozen``."""
        caller.require(PUBLISH)
        _check_tasks(body.tasks)
        rows = await upload(body.tasks)
        assert rows is not None  # AppendIn holds at least one row
        answer = await registry(
            AppendTasks(
                account=caller.account,
                subset_id=subset_id,
                tasks=rows,
                idempotency_key=idempotency_key,
            )
        )
        created(answer, response)
        return _show("subset_append", answer.append)

    @router.delete("/subsets/{subset_id}")
    async def delete_subset(subset_id: str, caller: Caller) -> dict[str, Any]:
        """Remove a subset (owner only); 409 while a public run pinned one of its snapshots."""
        caller.require(PUBLISH)
        await registry(DeleteSubset(account=caller.account, subset_id=subset_id))
        return {"object": "subset", "id": subset_id, "deleted": True}

    # -- impls --------------------------------------------------------------------------
    async def create_impl(
        caller: Principal, body: ImplIn, benchmark: str | None, response: Response
    ) -> dict[str, Any]:
        caller.require(PUBLISH)
        _check_language(body.language)
        answer = await registry(
            CreateImpl(
                account=caller.account,
                admin="admin" in caller.scopes,
                benchmark_id=benchmark,
                subset_id=body.subset,
                label=body.label,
                description=body.description,
                code=body.code,
                official=body.official,
            )
        )
        created(answer, response)
        return _show("impl", answer.impl)

    @router.post("/impls", status_code=201)
    async def create_impl_for_subset(
        body: ImplIn, caller: Caller, response: Response
    ) -> dict[str, Any]:
        """Register scorer code for ``subset`` (or ``benchmark``). Impls are immutable: the
        same code again is the same impl (200). Only an admin sets ``official``."""
        return await create_impl(caller, body, body.benchmark, response)

    @router.post("/benchmarks/{benchmark_id}/impls", status_code=201)
    async def create_benchmark_impl(
        benchmark_id: str, body: ImplIn, caller: Caller, response: Response
    ) -> dict[str, Any]:
        """Register scorer code under a benchmark (``subset`` optional)."""
        if body.benchmark not in (None, benchmark_id):
            raise Refused(
                400, "two benchmarks", "the body names another benchmark", field="benchmark"
            )
        return await create_impl(caller, body, benchmark_id, response)

    @router.get("/impls/{impl_id}")
    async def get_impl(impl_id: str, caller: Caller) -> dict[str, Any]:
        caller.require(READ)
        answer = await registry(ReadImpl(account=caller.account, impl_id=impl_id))
        return _show("impl", answer.impl)

    @router.get(
        "/impls/{impl_id}/code",
        response_model=None,
        responses={
            200: {
                "description": "The code as Python source, or as JSON when asked for it.",
                "content": {
                    "text/x-python": {"schema": {"type": "string"}},
                    "application/json": {"schema": {"type": "object"}},
                },
            }
        },
    )
    async def impl_code(
        impl_id: str, caller: Caller, request: Request
    ) -> PlainTextResponse | dict[str, Any]:
        """The impl's ``task_impl.py``: as text, or as JSON when only JSON is accepted."""
        caller.require(READ)
        answer = await registry(ReadImpl(account=caller.account, impl_id=impl_id, with_code=True))
        assert answer.impl is not None and answer.code is not None
        if _wants_json(request):
            return {
                "object": "impl_code",
                "id": answer.impl.id,
                "sha256": answer.impl.sha256,
                "language": answer.impl.language,
                "code": answer.code,
            }
        return PlainTextResponse(
            answer.code,
            media_type="text/x-python; charset=utf-8",
            headers={"ETag": f'"{answer.impl.sha256}"'},
        )

    @router.patch("/impls/{impl_id}")
    async def update_impl(impl_id: str, body: ImplPatch, caller: Caller) -> dict[str, Any]:
        """Relabel an impl, or (admin) mark it official. The code never changes."""
        caller.require(PUBLISH)
        answer = await registry(
            UpdateImpl(
                account=caller.account,
                admin="admin" in caller.scopes,
                impl_id=impl_id,
                **body.model_dump(),
            )
        )
        return _show("impl", answer.impl)

    @router.delete("/impls/{impl_id}")
    async def delete_impl(impl_id: str, caller: Caller) -> dict[str, Any]:
        """Remove an impl (owner only); 409 while a public run was scored by it."""
        caller.require(PUBLISH)
        await registry(DeleteImpl(account=caller.account, impl_id=impl_id))
        return {"object": "impl", "id": impl_id, "deleted": True}

    return router
