"""``/v1/build/subsets``: BUILT subsets, whose scorer the registry generates from a recipe.

* ``POST /v1/build/subsets``: a BUILT subset of one of your benchmarks: task rows
  and a recipe (``registry:publish``);
* ``GET /v1/build/subsets/{subset}/recipe``: the recipe, the impl generated from
  it and the history of edits with their notes (``registry:read``);
* ``PATCH /v1/build/subsets/{subset}/recipe``: change knobs; a new impl id, the
  same subset (``registry:publish``, owner or admin);
* ``PATCH /v1/build/subsets/{subset}/samples``: upsert rows by ``task_id``,
  remove others; a new subset id, the old one retired for new launches
  (``registry:publish``, owner or admin).

``{subset}`` is a subset id, or the slug of one of your own BUILT subsets. Anyone
else's answers 404 exactly like one that does not exist. Decision 0020 says why
edits move ids instead of rewriting them.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field

from benchwright_gateway.api.deps import Caller, Ctx
from benchwright_gateway.api.registry_calls import answered, upload_rows
from benchwright_shared.api.registry import BuiltSubset, BuiltSubsetEdit
from benchwright_shared.contracts.build import (
    BuildAnswer,
    CreateBuiltSubset,
    ReadRecipe,
    UpdateRecipe,
    UpdateSamples,
)
from benchwright_shared.refusal import Refused

READ, PUBLISH = "registry:read", "registry:publish"
TIMEOUT_S = 30.0
MAX_ROWS = 1000
SubsetRef = Annotated[str, Field(min_length=1, max_length=300)]


class BuiltSubsetIn(BaseModel):
    """A BUILT subset: rows ``{"task_id", "input", "expected"}`` and the recipe's knobs."""

    model_config = ConfigDict(extra="forbid")

    benchmark: str = Field(min_length=1, max_length=300)
    slug: str = Field(min_length=1, max_length=100)
    name: str = Field(default="", max_length=200)
    description: str = Field(default="", max_length=10_000)
    tasks: list[dict[str, Any]] = Field(min_length=1)
    recipe: dict[str, Any] = Field(default_factory=dict)
    note: str = Field(default="", max_length=2000)


class RecipePatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    config: dict[str, Any] = Field(min_length=1)
    note: str = Field(default="", max_length=2000)


class SamplesPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    upsert: list[dict[str, Any]] = Field(default_factory=list)
    remove: list[str] = Field(default_factory=list)
    note: str = Field(default="", max_length=2000)


def _check_rows(rows: list[dict[str, Any]], field: str) -> None:
    if len(rows) > MAX_ROWS:
        raise Refused(
            400,
            "too many tasks",
            f"{len(rows)} rows: at most {MAX_ROWS:,} per request",
            field=field,
            code="invalid_argument",
        )


def _shown(answer: BuildAnswer) -> BuiltSubset:
    assert answer.built is not None
    return BuiltSubset.model_validate(answer.built.model_dump())


def _edited(answer: BuildAnswer) -> BuiltSubsetEdit:
    assert answer.built is not None
    return BuiltSubsetEdit.model_validate({**answer.built.model_dump(), "changed": answer.changed})


router = APIRouter(prefix="/v1/build", tags=["build"])


@router.post("/subsets", status_code=201)
async def create(body: BuiltSubsetIn, ctx: Ctx, caller: Caller, response: Response) -> BuiltSubset:
    """A BUILT subset of one of your benchmarks. Its id is the content address of its
    rows, its impl is generated from the recipe; the same request again answers 200."""
    caller.require(PUBLISH)
    _check_rows(body.tasks, "tasks")
    answer = await answered(
        ctx,
        CreateBuiltSubset(
            account=caller.account,
            benchmark_id=body.benchmark,
            slug=body.slug,
            name=body.name,
            description=body.description,
            recipe=body.recipe,
            note=body.note,
            tasks=await upload_rows(ctx, body.tasks),
        ),
        BuildAnswer,
    )
    if not answer.changed:
        response.status_code = 200
    return _shown(answer)


@router.get("/subsets/{subset}/recipe")
async def read_recipe(subset: SubsetRef, ctx: Ctx, caller: Caller) -> BuiltSubset:
    """The recipe, the impl generated from it, and every edit with its note."""
    caller.require(READ)
    answer = await answered(
        ctx,
        ReadRecipe(account=caller.account, admin="admin" in caller.scopes, subset=subset),
        BuildAnswer,
    )
    return _shown(answer)


@router.patch("/subsets/{subset}/recipe")
async def update_recipe(
    subset: SubsetRef, body: RecipePatch, ctx: Ctx, caller: Caller
) -> BuiltSubsetEdit:
    """Change recipe knobs (the rest stay). The subset id stays; the next run records a
    new impl id. Owner or admin only."""
    caller.require(PUBLISH)
    answer = await answered(
        ctx,
        UpdateRecipe(
            account=caller.account,
            admin="admin" in caller.scopes,
            subset=subset,
            config=body.config,
            note=body.note,
        ),
        BuildAnswer,
    )
    return _edited(answer)


@router.patch("/subsets/{subset}/samples")
async def update_samples(
    subset: SubsetRef, body: SamplesPatch, ctx: Ctx, caller: Caller
) -> BuiltSubsetEdit:
    """Upsert rows by ``task_id`` and remove others. The edited rows are a new subset
    carrying the recipe forward; the old one stops resolving for new launches and
    keeps serving the runs that pinned it. Owner or admin only."""
    caller.require(PUBLISH)
    _check_rows(body.upsert, "upsert")
    answer = await answered(
        ctx,
        UpdateSamples(
            account=caller.account,
            admin="admin" in caller.scopes,
            subset=subset,
            upsert=await upload_rows(ctx, body.upsert),
            remove=body.remove,
            note=body.note,
        ),
        BuildAnswer,
    )
    return _edited(answer)
