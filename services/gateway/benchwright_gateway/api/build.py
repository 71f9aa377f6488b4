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

import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Response
from nats.js.errors import BucketNotFoundError
from pydantic import BaseModel, ConfigDict, Field

from benchwright_gateway.api.auth import Principal
from benchwright_gateway.context import GatewayContext
from benchwright_shared import subjects
from benchwright_shared.bus import ask, jetstream
from benchwright_shared.contracts.base import Contract
from benchwright_shared.contracts.build import (
    BuildAnswer,
    CreateBuiltSubset,
    ReadRecipe,
    UpdateRecipe,
    UpdateSamples,
)
from benchwright_shared.contracts.registry import TasksUpload
from benchwright_shared.hashing import canonical_json, sha256_hex
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


def _shown(answer: BuildAnswer) -> dict[str, Any]:
    assert answer.built is not None
    return {"object": "built_subset", **answer.built.model_dump(mode="json")}


def build_router(ctx: GatewayContext, principal: Callable[..., Awaitable[Principal]]) -> APIRouter:
    router = APIRouter(prefix="/v1/build", tags=["build"])
    Caller = Annotated[Principal, Depends(principal)]

    async def registry(request: Contract) -> BuildAnswer:
        answer = await ask(ctx.bus(), request, BuildAnswer, timeout=TIMEOUT_S)
        if answer.problem is not None:
            p = answer.problem
            code = (p.extra or {}).get("code")
            raise Refused(
                p.status, p.title, p.detail, field=p.field, code=str(code) if code else None
            )
        return answer

    async def upload(rows: list[dict[str, Any]]) -> TasksUpload | None:
        """Rows into the datasets bucket for the registry to read (and then delete)."""
        if not rows:
            return None
        js = jetstream(ctx.bus())
        try:
            bucket = await js.object_store(subjects.DATASETS_BUCKET)
        except BucketNotFoundError:
            bucket = await js.create_object_store(subjects.DATASETS_BUCKET)
        data = "".join(canonical_json(row) + "\n" for row in rows).encode()
        name = f"{subjects.UPLOADS_PREFIX}{uuid.uuid4()}.jsonl"
        await bucket.put(name, data)
        return TasksUpload(object_name=name, sha256=sha256_hex(data), count=len(rows))

    @router.post("/subsets", status_code=201)
    async def create(body: BuiltSubsetIn, caller: Caller, response: Response) -> dict[str, Any]:
        """A BUILT subset of one of your benchmarks. Its id is the content address of its
        rows, its impl is generated from the recipe; the same request again answers 200."""
        caller.require(PUBLISH)
        _check_rows(body.tasks, "tasks")
        answer = await registry(
            CreateBuiltSubset(
                account=caller.account,
                benchmark_id=body.benchmark,
                slug=body.slug,
                name=body.name,
                description=body.description,
                recipe=body.recipe,
                note=body.note,
                tasks=await upload(body.tasks),
            )
        )
        if not answer.changed:
            response.status_code = 200
        return _shown(answer)

    @router.get("/subsets/{subset}/recipe")
    async def read_recipe(subset: SubsetRef, caller: Caller) -> dict[str, Any]:
        """The recipe, the impl generated from it, and every edit with its note."""
        caller.require(READ)
        answer = await registry(
            ReadRecipe(account=caller.account, admin="admin" in caller.scopes, subset=subset)
        )
        return _shown(answer)

    @router.patch("/subsets/{subset}/recipe")
    async def update_recipe(subset: SubsetRef, body: RecipePatch, caller: Caller) -> dict[str, Any]:
        """Change recipe knobs (the rest stay). The subset id stays; the next run records a
        new impl id. Owner or admin only."""
        caller.require(PUBLISH)
        answer = await registry(
            UpdateRecipe(
                account=caller.account,
                admin="admin" in caller.scopes,
                subset=subset,
                config=body.config,
                note=body.note,
            )
        )
        return {**_shown(answer), "changed": answer.changed}

    @router.patch("/subsets/{subset}/samples")
    async def update_samples(
        subset: SubsetRef, body: SamplesPatch, caller: Caller
    ) -> dict[str, Any]:
        """Upsert rows by ``task_id`` and remove others. The edited rows are a new subset
        carrying the recipe forward; the old one stops resolving for new launches and
        keeps serving the runs that pinned it. Owner or admin only."""
        caller.require(PUBLISH)
        _check_rows(body.upsert, "upsert")
        answer = await registry(
            UpdateSamples(
                account=caller.account,
                admin="admin" in caller.scopes,
                subset=subset,
                upsert=await upload(body.upsert),
                remove=body.remove,
                note=body.note,
            )
        )
        return {**_shown(answer), "changed": answer.changed}

    return router
