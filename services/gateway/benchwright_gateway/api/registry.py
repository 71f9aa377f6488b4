"""``/v1/benchmarks`` and ``/v1/subsets``: the registry, read and authored (impls:
``registry_impls``).

The gateway checks the caller's scope and the body, then asks the registry
service over NATS request/reply; the registry owns the data and decides who
sees what (another account's private benchmark answers 404, like a missing
one). Reads need ``registry:read``, writes ``registry:publish``. Task rows are
put in the datasets bucket and named in the request: a thousand rows can be
larger than a NATS message.

``POST /v1/benchmarks/{id}/subsets/harbor`` stores a Harbor dataset as an agentic
subset: its files checked as a launch's are (``benchwright_gateway.harbor``), one
row a task (``benchwright_shared.agentic.subset``), content-addressed like any
subset's rows. A pinned ``harness: "harbor"`` launch runs it (decision 0050).
"""

from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from benchwright_gateway.api.deps import Caller, Ctx
from benchwright_gateway.api.guard import MAX_POSITION
from benchwright_gateway.api.registry_calls import (
    answered_created,
    as_answer,
    ask_registry,
    upload_rows,
)
from benchwright_gateway.harbor import check_dataset
from benchwright_gateway.requests import TrialsIn
from benchwright_shared.agentic import dataset_rows
from benchwright_shared.api.registry import (
    Benchmark,
    BenchmarkList,
    Deleted,
    Subset,
    SubsetAppend,
    SubsetTasks,
)
from benchwright_shared.contracts.registry import (
    AppendTasks,
    BenchmarkSort,
    CreateBenchmark,
    CreateSubset,
    DeleteBenchmark,
    DeleteSubset,
    ListBenchmarks,
    ReadBenchmark,
    ReadSubset,
    UpdateBenchmark,
    UpdateSubset,
)
from benchwright_shared.refusal import Refused

READ, PUBLISH = "registry:read", "registry:publish"
MAX_TASKS = 1000
MAX_ROWS_PER_PAGE = 200

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


class HarborSubsetIn(BaseModel):
    """A Harbor dataset to store: ``{relative path: text}``, as a launch sends it. The
    slug names the dataset too (a one-task dataset's task takes it)."""

    model_config = ConfigDict(extra="forbid")

    slug: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,99}$")
    name: str = Field(default="", max_length=200)
    description: str = Field(default="", max_length=10_000)
    files: dict[str, str]


class SubsetPatch(BaseModel):
    """Rename or describe; ``rolling: false`` freezes a rolling subset, for good."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, max_length=200)
    description: str | None = Field(default=None, max_length=10_000)
    rolling: StrictBool | None = None


class AppendIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tasks: list[dict[str, Any]] = Field(min_length=1)


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


router = APIRouter(prefix="/v1", tags=["registry"])


# -- benchmarks ---------------------------------------------------------------------------
@router.post("/benchmarks", status_code=201)
async def create_benchmark(
    body: BenchmarkIn,
    ctx: Ctx,
    caller: Caller,
    response: Response,
    idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
) -> Benchmark:
    """A new benchmark, private to the caller; a repeated Idempotency-Key returns it."""
    caller.require(PUBLISH)
    answer = await ask_registry(
        ctx,
        CreateBenchmark(
            account=caller.account, idempotency_key=idempotency_key, **body.model_dump()
        ),
    )
    answered_created(answer, response)
    return as_answer(Benchmark, answer.benchmark)


@router.get("/benchmarks")
async def list_benchmarks(
    ctx: Ctx,
    caller: Caller,
    tag: Annotated[str | None, Query(max_length=100)] = None,
    sort: BenchmarkSort = "-created_at",
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    page_token: Annotated[str | None, Query(max_length=1000)] = None,
) -> BenchmarkList:
    """The caller's benchmarks, the built-in catalog and public benchmarks."""
    caller.require(READ)
    answer = await ask_registry(
        ctx,
        ListBenchmarks(
            account=caller.account, tag=tag, sort=sort, limit=limit, page_token=page_token
        ),
    )
    return BenchmarkList(
        data=[as_answer(Benchmark, b) for b in answer.benchmarks],
        next_page_token=answer.next_page_token,
    )


@router.get("/benchmarks/{benchmark_id}")
async def get_benchmark(benchmark_id: str, ctx: Ctx, caller: Caller) -> Benchmark:
    """One benchmark with its subsets and impls."""
    caller.require(READ)
    answer = await ask_registry(
        ctx, ReadBenchmark(account=caller.account, benchmark_id=benchmark_id)
    )
    return as_answer(Benchmark, answer.benchmark)


@router.patch("/benchmarks/{benchmark_id}")
async def update_benchmark(
    benchmark_id: str, body: BenchmarkPatch, ctx: Ctx, caller: Caller
) -> Benchmark:
    """Change the name, description, category or tags (owner only). Visibility is not
    patched: it follows the benchmark's runs."""
    caller.require(PUBLISH)
    answer = await ask_registry(
        ctx,
        UpdateBenchmark(account=caller.account, benchmark_id=benchmark_id, **body.model_dump()),
    )
    return as_answer(Benchmark, answer.benchmark)


@router.delete("/benchmarks/{benchmark_id}")
async def delete_benchmark(benchmark_id: str, ctx: Ctx, caller: Caller) -> Deleted:
    """Remove a benchmark (owner only); 409 while a public run references it."""
    caller.require(PUBLISH)
    await ask_registry(ctx, DeleteBenchmark(account=caller.account, benchmark_id=benchmark_id))
    return Deleted(object="benchmark", id=benchmark_id)


# -- subsets ------------------------------------------------------------------------------
@router.post("/benchmarks/{benchmark_id}/subsets", status_code=201)
async def create_subset(
    benchmark_id: str, body: SubsetIn, ctx: Ctx, caller: Caller, response: Response
) -> Subset:
    """A subset whose id is the content address of its tasks: the same tasks under the
    same slug are the same subset (200 on a repeat)."""
    caller.require(PUBLISH)
    _check_tasks(body.tasks)
    answer = await ask_registry(
        ctx,
        CreateSubset(
            account=caller.account,
            benchmark_id=benchmark_id,
            slug=body.slug,
            name=body.name,
            description=body.description,
            rolling=body.rolling,
            grader=body.grader,
            default_trials=body.default_trials.model_dump() if body.default_trials else None,
            tasks=await upload_rows(ctx, body.tasks),
        ),
    )
    answered_created(answer, response)
    return as_answer(Subset, answer.subset)


@router.post("/benchmarks/{benchmark_id}/subsets/harbor", status_code=201)
async def create_harbor_subset(
    benchmark_id: str, body: HarborSubsetIn, ctx: Ctx, caller: Caller, response: Response
) -> Subset:
    """Store a Harbor dataset as an agentic subset of one of your benchmarks: one task a
    row, frozen. The files are checked as a launch's are (the same caps, each refusal
    naming ``files["<path>"]``); the id is the content address of the tasks, so the same
    files under the same slug are the same subset (200 on a repeat). Launch it pinned
    with ``harness: "harbor"``."""
    caller.require(PUBLISH)
    dataset = check_dataset(body.files, body.slug, where="")
    answer = await ask_registry(
        ctx,
        CreateSubset(
            account=caller.account,
            benchmark_id=benchmark_id,
            slug=body.slug,
            name=body.name,
            description=body.description,
            tasks=await upload_rows(ctx, dataset_rows(dataset)),
        ),
    )
    answered_created(answer, response)
    return as_answer(Subset, answer.subset)


@router.get("/subsets/{subset_id}")
async def get_subset(subset_id: str, ctx: Ctx, caller: Caller) -> Subset:
    """A subset by its id or any of its snapshot ids."""
    caller.require(READ)
    answer = await ask_registry(ctx, ReadSubset(account=caller.account, subset_id=subset_id))
    return as_answer(Subset, answer.subset)


@router.get("/subsets/{subset_id}/tasks")
async def subset_tasks(
    subset_id: str,
    ctx: Ctx,
    caller: Caller,
    offset: Annotated[int, Query(ge=0, le=MAX_POSITION)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_ROWS_PER_PAGE)] = 100,
) -> SubsetTasks:
    """A page of the task rows of a subset (its latest snapshot) or of one snapshot."""
    caller.require(READ)
    answer = await ask_registry(
        ctx,
        ReadSubset(
            account=caller.account, subset_id=subset_id, rows_offset=offset, rows_limit=limit
        ),
    )
    view = answer.subset
    assert view is not None
    # The subset's own id means its latest snapshot; a snapshot id, that snapshot.
    wanted = view.snapshot_id if subset_id == view.id else subset_id
    snapshot = next((s for s in view.snapshots if s.id == wanted), None)
    total = snapshot.task_count if snapshot is not None else view.task_count
    return SubsetTasks(
        subset_id=view.id,
        snapshot_id=snapshot.id if snapshot is not None else view.snapshot_id,
        total=total,
        offset=offset,
        data=answer.rows,
        has_more=offset + len(answer.rows) < total,
    )


@router.patch("/subsets/{subset_id}")
async def update_subset(subset_id: str, body: SubsetPatch, ctx: Ctx, caller: Caller) -> Subset:
    """Rename, describe, or freeze (``rolling: false``, one way) a subset."""
    caller.require(PUBLISH)
    answer = await ask_registry(
        ctx, UpdateSubset(account=caller.account, subset_id=subset_id, **body.model_dump())
    )
    return as_answer(Subset, answer.subset)


@router.post("/subsets/{subset_id}/tasks", status_code=201)
async def append_tasks(
    subset_id: str,
    body: AppendIn,
    ctx: Ctx,
    caller: Caller,
    response: Response,
    idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
) -> SubsetAppend:
    """Append rows to a rolling subset: a new snapshot. A repeated Idempotency-Key
    answers the first append's result and adds nothing; a frozen subset answers 409
    ``subset_frozen``."""
    caller.require(PUBLISH)
    _check_tasks(body.tasks)
    rows = await upload_rows(ctx, body.tasks)
    assert rows is not None  # AppendIn holds at least one row
    answer = await ask_registry(
        ctx,
        AppendTasks(
            account=caller.account,
            subset_id=subset_id,
            tasks=rows,
            idempotency_key=idempotency_key,
        ),
    )
    answered_created(answer, response)
    return as_answer(SubsetAppend, answer.append)


@router.delete("/subsets/{subset_id}")
async def delete_subset(subset_id: str, ctx: Ctx, caller: Caller) -> Deleted:
    """Remove a subset (owner only); 409 while a public run pinned one of its snapshots."""
    caller.require(PUBLISH)
    await ask_registry(ctx, DeleteSubset(account=caller.account, subset_id=subset_id))
    return Deleted(object="subset", id=subset_id)
