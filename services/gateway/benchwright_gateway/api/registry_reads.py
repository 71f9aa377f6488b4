"""The registry's reads over runs, and impls frozen from a run.

* ``GET /v1/subsets/{id}/leaderboard``: the best pass rate per model across the
  subset's public runs, under any of its impls (concepts §7);
* ``GET /v1/subsets/{id}/runs`` and ``GET /v1/impls/{id}/runs``: finished runs
  the caller may see (its own and public ones), newest first, paged;
* ``GET /v1/impls/{id}/compare``: the runs scored by one impl side by side, one
  row per (subset snapshot, trials, model), so the numbers compare;
* ``GET /v1/benchmarks/{id}/range?start=&end=``: the runs with results for task
  indices ``start`` .. ``end - 1``, with their outcomes there;
* ``POST /v1/impls/from_run``: register the scorer one of the caller's runs used.

The gateway checks scope and parameters and asks the registry over request/reply;
the registry owns the views and decides who sees what (404 as for a missing id).
"""

from typing import Annotated

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from benchwright_gateway.api.deps import Caller, Ctx
from benchwright_gateway.api.guard import MAX_POSITION
from benchwright_gateway.api.registry_calls import answered
from benchwright_gateway.context import GatewayContext
from benchwright_shared.api.registry import (
    Impl,
    ImplComparison,
    Leaderboard,
    RegistryRunAnswer,
    RegistryRunList,
    TaskRange,
    TaskRangeRun,
)
from benchwright_shared.contracts import registry_reads as reads
from benchwright_shared.contracts.registry import RegistryAnswer
from benchwright_shared.contracts.registry_reads import (
    CompareImpl,
    Comparison,
    CreateImplFromRun,
    ListRegistryRuns,
    ReadLeaderboard,
    ReadTaskRange,
    RegistryRun,
)
from benchwright_shared.refusal import Refused

READ, PUBLISH = "registry:read", "registry:publish"
TIMEOUT_S = 30.0
MAX_PAGE = 100
# The widest task range one request reads.
MAX_RANGE = 1000

Limit = Annotated[int, Query(ge=1, le=MAX_PAGE)]
PageToken = Annotated[str | None, Query(max_length=1000)]
Model = Annotated[str | None, Query(max_length=300)]


class ImplFromRunIn(BaseModel):
    """Which run's scorer to register, and where: ``subset`` (its benchmark is the
    impl's) or ``benchmark``; both must be the caller's."""

    model_config = ConfigDict(extra="forbid")

    from_run: str = Field(min_length=1, max_length=100)
    benchmark: str | None = Field(default=None, min_length=1, max_length=300)
    subset: str | None = Field(default=None, min_length=1, max_length=300)
    label: str = Field(default="", max_length=200)
    description: str = Field(default="", max_length=2000)


def _run(run: RegistryRun) -> RegistryRunAnswer:
    return RegistryRunAnswer.model_validate(run.model_dump())


router = APIRouter(prefix="/v1", tags=["registry"])


async def _run_list(ctx: GatewayContext, query: ListRegistryRuns) -> RegistryRunList:
    found = await answered(ctx, query, reads.RegistryRunList)
    runs = [_run(r) for r in found.runs]
    return RegistryRunList(data=runs, next_page_token=found.next_page_token)


@router.get("/subsets/{subset_id}/leaderboard")
async def leaderboard(subset_id: str, ctx: Ctx, caller: Caller) -> Leaderboard:
    """The best pass rate per model across the subset's public runs, under any of its
    impls. Only public runs place: a subset of a private benchmark has no entries."""
    caller.require(READ)
    found = await answered(
        ctx, ReadLeaderboard(account=caller.account, subset_id=subset_id), reads.Leaderboard
    )
    return Leaderboard(
        subset_id=found.subset_id,
        benchmark_id=found.benchmark_id,
        snapshot_ids=found.snapshot_ids,
        data=found.rows,
    )


@router.get("/subsets/{subset_id}/runs")
async def subset_runs(
    subset_id: str,
    ctx: Ctx,
    caller: Caller,
    model: Model = None,
    limit: Limit = 50,
    page_token: PageToken = None,
) -> RegistryRunList:
    """Finished runs against the subset (any of its snapshots) that the caller may
    see: its own and public ones, newest first."""
    caller.require(READ)
    return await _run_list(
        ctx,
        ListRegistryRuns(
            account=caller.account,
            subset_id=subset_id,
            model=model,
            limit=limit,
            page_token=page_token,
        ),
    )


@router.get("/impls/{impl_id}/runs")
async def impl_runs(
    impl_id: str,
    ctx: Ctx,
    caller: Caller,
    model: Model = None,
    limit: Limit = 50,
    page_token: PageToken = None,
) -> RegistryRunList:
    """Finished runs scored by the impl that the caller may see, newest first."""
    caller.require(READ)
    return await _run_list(
        ctx,
        ListRegistryRuns(
            account=caller.account,
            impl_id=impl_id,
            model=model,
            limit=limit,
            page_token=page_token,
        ),
    )


@router.get("/impls/{impl_id}/compare")
async def compare(
    impl_id: str,
    ctx: Ctx,
    caller: Caller,
    subset: Annotated[str | None, Query(max_length=300)] = None,
) -> ImplComparison:
    """Runs that share the impl, side by side by model: one row per (subset snapshot,
    trials, model), so every row of a group was measured the same way."""
    caller.require(READ)
    found = await answered(
        ctx, CompareImpl(account=caller.account, impl_id=impl_id, subset_id=subset), Comparison
    )
    return ImplComparison(impl_id=found.impl_id, benchmark_id=found.benchmark_id, data=found.rows)


@router.get("/benchmarks/{benchmark_id}/range")
async def task_range(
    benchmark_id: str,
    ctx: Ctx,
    caller: Caller,
    start: Annotated[int, Query(ge=0, le=MAX_POSITION)],
    end: Annotated[int, Query(ge=1, le=MAX_POSITION)],
    subset: Annotated[str | None, Query(max_length=300)] = None,
    limit: Limit = 50,
    page_token: PageToken = None,
) -> TaskRange:
    """Finished runs of the benchmark with results for task indices ``start`` ..
    ``end - 1`` (like Python's ``range``), with each run's outcomes there."""
    caller.require(READ)
    if end <= start or end - start > MAX_RANGE:
        raise Refused(
            400,
            "invalid range",
            f"end must be greater than start, and a range spans at most {MAX_RANGE} tasks "
            "(the range is start .. end - 1)",
            field="end",
            code="invalid_argument",
        )
    found = await answered(
        ctx,
        ReadTaskRange(
            account=caller.account,
            benchmark_id=benchmark_id,
            start=start,
            end=end,
            subset_id=subset,
            limit=limit,
            page_token=page_token,
        ),
        reads.TaskRange,
    )
    return TaskRange(
        benchmark_id=found.benchmark_id,
        start=found.start,
        end=found.end,
        data=[TaskRangeRun.model_validate(r.model_dump()) for r in found.runs],
        next_page_token=found.next_page_token,
    )


@router.post("/impls/from_run", status_code=201)
async def impl_from_run(body: ImplFromRunIn, ctx: Ctx, caller: Caller, response: Response) -> Impl:
    """Register the scorer one of the caller's runs used (its Setup or Atomize code) as
    an impl of ``subset`` (or ``benchmark``). Content-addressed like ``POST /v1/impls``:
    the same code again is the same impl (200)."""
    caller.require(PUBLISH)
    if body.subset is None and body.benchmark is None:
        raise Refused(
            400,
            "no subset",
            "name the subset (or the benchmark) the impl is for",
            field="subset",
            code="invalid_argument",
        )
    answer = await answered(
        ctx,
        CreateImplFromRun(
            account=caller.account,
            admin="admin" in caller.scopes,
            run_id=body.from_run,
            benchmark_id=body.benchmark,
            subset_id=body.subset,
            label=body.label,
            description=body.description,
        ),
        RegistryAnswer,
    )
    if not answer.created:
        response.status_code = 200
    assert answer.impl is not None
    return Impl.model_validate(answer.impl.model_dump())
