"""``/v1/impls``: scorer code, registered, read, relabelled and removed.

An impl is immutable and content-addressed: the same code again is the same impl.
The registry owns them; the gateway checks scope and body and asks it over
request/reply (another account's private impl answers 404, like a missing one).
"""

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from benchwright_gateway.api.auth import Principal
from benchwright_gateway.api.deps import Caller, Ctx
from benchwright_gateway.api.registry_calls import answered_created, as_answer, ask_registry
from benchwright_gateway.context import GatewayContext
from benchwright_shared.api.registry import Deleted, Impl, ImplCode
from benchwright_shared.contracts.registry import CreateImpl, DeleteImpl, ReadImpl, UpdateImpl
from benchwright_shared.refusal import Refused

READ, PUBLISH = "registry:read", "registry:publish"
MAX_CODE_CHARS = 256 * 1024


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


router = APIRouter(prefix="/v1", tags=["registry"])


# -- impls --------------------------------------------------------------------------------
async def _create_impl(
    ctx: GatewayContext,
    caller: Principal,
    body: ImplIn,
    benchmark: str | None,
    response: Response,
) -> Impl:
    caller.require(PUBLISH)
    _check_language(body.language)
    answer = await ask_registry(
        ctx,
        CreateImpl(
            account=caller.account,
            admin="admin" in caller.scopes,
            benchmark_id=benchmark,
            subset_id=body.subset,
            label=body.label,
            description=body.description,
            code=body.code,
            official=body.official,
        ),
    )
    answered_created(answer, response)
    return as_answer(Impl, answer.impl)


@router.post("/impls", status_code=201)
async def create_impl_for_subset(
    body: ImplIn, ctx: Ctx, caller: Caller, response: Response
) -> Impl:
    """Register scorer code for ``subset`` (or ``benchmark``). Impls are immutable: the
    same code again is the same impl (200). Only an admin sets ``official``."""
    return await _create_impl(ctx, caller, body, body.benchmark, response)


@router.post("/benchmarks/{benchmark_id}/impls", status_code=201)
async def create_benchmark_impl(
    benchmark_id: str, body: ImplIn, ctx: Ctx, caller: Caller, response: Response
) -> Impl:
    """Register scorer code under a benchmark (``subset`` optional)."""
    if body.benchmark not in (None, benchmark_id):
        raise Refused(400, "two benchmarks", "the body names another benchmark", field="benchmark")
    return await _create_impl(ctx, caller, body, benchmark_id, response)


@router.get("/impls/{impl_id}")
async def get_impl(impl_id: str, ctx: Ctx, caller: Caller) -> Impl:
    """One impl (its code: ``/code``)."""
    caller.require(READ)
    answer = await ask_registry(ctx, ReadImpl(account=caller.account, impl_id=impl_id))
    return as_answer(Impl, answer.impl)


@router.get(
    "/impls/{impl_id}/code",
    response_model=None,
    responses={
        200: {
            "description": "The code as Python source, or as JSON when asked for it.",
            "content": {
                "text/x-python": {"schema": {"type": "string"}},
                "application/json": {"schema": ImplCode.model_json_schema()},
            },
        }
    },
)
async def impl_code(
    impl_id: str, ctx: Ctx, caller: Caller, request: Request
) -> PlainTextResponse | JSONResponse:
    """The impl's ``task_impl.py``: as text, or as JSON when only JSON is accepted."""
    caller.require(READ)
    answer = await ask_registry(
        ctx, ReadImpl(account=caller.account, impl_id=impl_id, with_code=True)
    )
    assert answer.impl is not None and answer.code is not None
    if _wants_json(request):
        code = ImplCode(
            id=answer.impl.id,
            sha256=answer.impl.sha256,
            language=answer.impl.language,
            code=answer.code,
        )
        return JSONResponse(code.model_dump(mode="json"))
    return PlainTextResponse(
        answer.code,
        media_type="text/x-python; charset=utf-8",
        headers={"ETag": f'"{answer.impl.sha256}"'},
    )


@router.patch("/impls/{impl_id}")
async def update_impl(impl_id: str, body: ImplPatch, ctx: Ctx, caller: Caller) -> Impl:
    """Relabel an impl, or (admin) mark it official. The code never changes."""
    caller.require(PUBLISH)
    answer = await ask_registry(
        ctx,
        UpdateImpl(
            account=caller.account,
            admin="admin" in caller.scopes,
            impl_id=impl_id,
            **body.model_dump(),
        ),
    )
    return as_answer(Impl, answer.impl)


@router.delete("/impls/{impl_id}")
async def delete_impl(impl_id: str, ctx: Ctx, caller: Caller) -> Deleted:
    """Remove an impl (owner only); 409 while a public run was scored by it."""
    caller.require(PUBLISH)
    await ask_registry(ctx, DeleteImpl(account=caller.account, impl_id=impl_id))
    return Deleted(object="impl", id=impl_id)
