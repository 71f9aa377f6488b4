"""How the registry's routes ask the registry: request/reply, a refusal raised as the
API's, and task rows put in the datasets bucket.

A thousand rows can be larger than a NATS message, so authoring routes put them
in the bucket and name them in the request; the registry reads them (and then
deletes them).
"""

import uuid
from typing import Any

from fastapi import Response
from nats.js.errors import BucketNotFoundError
from pydantic import BaseModel

from benchwright_gateway.context import GatewayContext
from benchwright_gateway.operations import raise_for
from benchwright_shared import subjects
from benchwright_shared.bus import ask, jetstream
from benchwright_shared.contracts.base import Contract
from benchwright_shared.contracts.registry import RegistryAnswer, TasksUpload
from benchwright_shared.hashing import canonical_json, sha256_hex

TIMEOUT_S = 30.0


async def answered[T: BaseModel](ctx: GatewayContext, request: BaseModel, answer: type[T]) -> T:
    """A service's answer to ``request``; the problem it answered raised as a refusal."""
    found = await ask(ctx.bus(), request, answer, timeout=TIMEOUT_S)
    raise_for(getattr(found, "problem", None))
    return found


async def ask_registry(ctx: GatewayContext, request: Contract) -> RegistryAnswer:
    """The registry's answer to an authoring request; its problem raised as a refusal."""
    return await answered(ctx, request, RegistryAnswer)


def answered_created(answer: RegistryAnswer, response: Response) -> None:
    """200 instead of 201 when a repeat found what an earlier request made."""
    if not answer.created:
        response.status_code = 200


async def upload_rows(ctx: GatewayContext, rows: list[dict[str, Any]]) -> TasksUpload | None:
    """Put ``rows`` in the datasets bucket as JSON lines; None when there are none."""
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


def as_answer[T: BaseModel](answer: type[T], view: BaseModel | None) -> T:
    """A registry view as the API answers it: the view plus its ``object``."""
    assert view is not None
    return answer.model_validate(view.model_dump())
