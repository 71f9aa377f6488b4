"""``/v1/secrets``, ``/v1/host-policy`` and the blocked-host log.

The gateway checks the caller and the body, then asks the proxy service, which
owns the vault. Requests go over NATS request/reply, never a stream, so a
secret's value rests nowhere but the vault; answers carry only a preview.
"""

import hashlib
import re
from typing import Annotated

from fastapi import APIRouter, Header, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from benchwright_gateway.api.auth import Principal
from benchwright_gateway.api.deps import Caller, Ctx
from benchwright_gateway.api.idempotency import answer_once
from benchwright_gateway.api.lookup import load_run
from benchwright_gateway.context import GatewayContext
from benchwright_gateway.operations import raise_for
from benchwright_shared.api.account import (
    BlockedHostList,
    DeletedSecret,
    HostPolicy,
    HostPolicyRule,
    Secret,
    SecretList,
)
from benchwright_shared.bus import ask
from benchwright_shared.contracts.vault import (
    BlockedHostsView,
    DeleteSecret,
    HostAction,
    HostPolicyView,
    HostRule,
    PutSecret,
    ReadBlockedHosts,
    ReadHostPolicy,
    ReadSecrets,
    SecretAnswer,
    SecretRule,
    SecretView,
    UpdateHostPolicy,
)
from benchwright_shared.refusal import Refused

NAME = r"^[A-Za-z0-9_.-]{1,100}$"
TIMEOUT_S = 10.0


class SecretIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME)
    value: str = Field(min_length=1, max_length=20_000)
    description: str = Field(default="", max_length=1000)
    rules: list[SecretRule] = Field(default_factory=list, max_length=20)


class SecretPatch(BaseModel):
    """Rotate the value, or change the description or rules."""

    model_config = ConfigDict(extra="forbid")

    value: str | None = Field(default=None, min_length=1, max_length=20_000)
    description: str | None = Field(default=None, max_length=1000)
    rules: list[SecretRule] | None = Field(default=None, max_length=20)


class HostPolicyPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    default_mode: HostAction | None = None
    add: list[HostRule] = Field(default_factory=list, max_length=500)
    remove: list[str] = Field(default_factory=list, max_length=500)
    starter_pack: StrictBool = False


SECRET_ID = re.compile(r"^sec_[0-9a-f]{16}$")
RULE_ID = re.compile(r"^hpr_[0-9a-f]{12}$")


def secret_id(account: str, name: str) -> str:
    """A secret's id: stable for its account and name (a secret is addressed by
    either; rotating keeps it)."""
    return "sec_" + hashlib.sha256(f"{account}\x1f{name}".encode()).hexdigest()[:16]


def rule_id(pattern: str) -> str:
    """A host-policy rule's id: its pattern's (one rule per pattern)."""
    return "hpr_" + hashlib.sha256(pattern.encode()).hexdigest()[:12]


def _show(view: SecretView, account: str) -> Secret:
    return Secret(id=secret_id(account, view.name), **view.model_dump())


def _policy(view: HostPolicyView) -> HostPolicy:
    rules = [HostPolicyRule(id=rule_id(r.pattern), **r.model_dump()) for r in view.rules]
    return HostPolicy(default_mode=view.default_mode, rules=rules)


router = APIRouter(prefix="/v1", tags=["secrets"])


async def _put(ctx: GatewayContext, command: PutSecret) -> Secret:
    answer = await ask(ctx.bus(), command, SecretAnswer, timeout=TIMEOUT_S)
    raise_for(answer.problem)
    assert answer.secret is not None
    return _show(answer.secret, command.account)


async def _read(ctx: GatewayContext, caller: Principal, name: str | None) -> SecretAnswer:
    answer = await ask(
        ctx.bus(),
        ReadSecrets(account=caller.account, name=name),
        SecretAnswer,
        timeout=TIMEOUT_S,
    )
    raise_for(answer.problem)
    return answer


async def _named(ctx: GatewayContext, caller: Principal, name_or_id: str) -> str:
    """The secret's name, given its name or its ``sec_…`` id (404 when neither)."""
    if not SECRET_ID.match(name_or_id):
        return name_or_id
    for secret in (await _read(ctx, caller, None)).secrets:
        if secret_id(caller.account, secret.name) == name_or_id:
            return secret.name
    raise Refused(404, "secret not found", f"no secret {name_or_id!r}", field="name")


@router.post("/secrets", status_code=201)
async def create_secret(
    body: SecretIn,
    ctx: Ctx,
    caller: Caller,
    response: Response,
    idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
) -> Secret:
    """Store a secret (write-only) and allow the hosts its rules name. A repeated
    Idempotency-Key returns the first answer."""
    caller.require("secrets:write")
    command = PutSecret(
        account=caller.account,
        name=body.name,
        value=body.value,
        description=body.description,
        rules=body.rules,
        create_only=True,
    )

    async def create() -> dict[str, object]:
        return (await _put(ctx, command)).model_dump(mode="json")

    first = await answer_once(
        ctx,
        caller,
        "secrets.create",
        idempotency_key,
        body.model_dump(mode="json"),
        response,
        create,
    )
    return Secret.model_validate(first)


@router.patch("/secrets/{name}")
async def update_secret(name: str, body: SecretPatch, ctx: Ctx, caller: Caller) -> Secret:
    """Rotate: new runs get the new value, running runs keep the one they started with.
    ``name`` may be the secret's name or its id."""
    caller.require("secrets:write")
    name = await _named(ctx, caller, name)
    await _read(ctx, caller, name)
    return await _put(
        ctx,
        PutSecret(
            account=caller.account,
            name=name,
            value=body.value,
            description=body.description,
            rules=body.rules,
        ),
    )


@router.get("/secrets")
async def list_secrets(ctx: Ctx, caller: Caller) -> SecretList:
    """The account's secrets (masked previews, never values)."""
    caller.require("secrets:read")
    answer = await _read(ctx, caller, None)
    return SecretList(data=[_show(s, caller.account) for s in answer.secrets])


@router.get("/secrets/{name}")
async def get_secret(name: str, ctx: Ctx, caller: Caller) -> Secret:
    """One secret (a masked preview, never the value), by name or id."""
    caller.require("secrets:read")
    answer = await _read(ctx, caller, await _named(ctx, caller, name))
    assert answer.secret is not None
    return _show(answer.secret, caller.account)


@router.delete("/secrets/{name}")
async def delete_secret(name: str, ctx: Ctx, caller: Caller) -> DeletedSecret:
    """Delete a secret (by name or id): new runs no longer get it."""
    caller.require("secrets:write")
    name = await _named(ctx, caller, name)
    answer = await ask(
        ctx.bus(),
        DeleteSecret(account=caller.account, name=name),
        SecretAnswer,
        timeout=TIMEOUT_S,
    )
    raise_for(answer.problem)
    return DeletedSecret(name=name)


async def _read_policy(ctx: GatewayContext, caller: Principal) -> HostPolicyView:
    view = await ask(ctx.bus(), ReadHostPolicy(account=caller.account), HostPolicyView)
    raise_for(view.problem)
    return view


@router.get("/host-policy")
async def host_policy(ctx: Ctx, caller: Caller) -> HostPolicy:
    """The hosts the account's sandboxes may reach: the default and the rules."""
    caller.require("secrets:read")
    return _policy(await _read_policy(ctx, caller))


async def _patterns(ctx: GatewayContext, caller: Principal, entries: list[str]) -> list[str]:
    """``remove`` names rules by pattern or by ``hpr_…`` id."""
    if not any(RULE_ID.match(e) for e in entries):
        return entries
    by_id = {rule_id(r.pattern): r.pattern for r in (await _read_policy(ctx, caller)).rules}
    unknown = [e for e in entries if RULE_ID.match(e) and e not in by_id]
    if unknown:
        raise Refused(404, "rule not found", f"no rule {unknown[0]!r}", field="remove")
    return [by_id.get(e, e) for e in entries]


@router.patch("/host-policy")
async def update_host_policy(
    body: HostPolicyPatch,
    ctx: Ctx,
    caller: Caller,
    response: Response,
    idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
) -> HostPolicy:
    """Flip the default mode, allow or block host patterns, add the starter pack. A
    repeated Idempotency-Key returns the first answer."""
    caller.require("secrets:write")

    async def change() -> dict[str, object]:
        view = await ask(
            ctx.bus(),
            UpdateHostPolicy(
                account=caller.account,
                default_mode=body.default_mode,
                upsert=body.add,
                remove=await _patterns(ctx, caller, body.remove),
                starter_pack=body.starter_pack,
            ),
            HostPolicyView,
            timeout=TIMEOUT_S,
        )
        raise_for(view.problem)
        return _policy(view).model_dump(mode="json")

    first = await answer_once(
        ctx,
        caller,
        "host_policy.update",
        idempotency_key,
        body.model_dump(mode="json"),
        response,
        change,
    )
    return HostPolicy.model_validate(first)


async def _blocked(ctx: GatewayContext, account: str, run_id: str | None) -> BlockedHostList:
    view = await ask(ctx.bus(), ReadBlockedHosts(account=account, run_id=run_id), BlockedHostsView)
    raise_for(view.problem)
    return BlockedHostList.model_validate(view.model_dump(include={"data"}))


@router.get("/blocked-hosts")
async def blocked_hosts(ctx: Ctx, caller: Caller) -> BlockedHostList:
    """Every host the account's sandboxes were refused, with counts."""
    caller.require("secrets:read")
    return await _blocked(ctx, caller.account, None)


@router.get("/runs/{run_id}/blocked-hosts")
async def run_blocked_hosts(run_id: str, ctx: Ctx, caller: Caller) -> BlockedHostList:
    """The hosts one run's sandboxes were refused."""
    caller.require("runs:read")
    await load_run(ctx, caller, run_id)
    return await _blocked(ctx, caller.account, run_id)
