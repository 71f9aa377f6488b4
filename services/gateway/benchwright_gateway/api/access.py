"""Logins, sessions and personal access tokens.

A login opens a session (``POST /v1/sessions``); only a session mints, lists
and revokes tokens, so a leaked token cannot breed more of itself. An admin
session creates accounts; several live side by side on one deployment, and
none sees another's runs.
"""

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from benchwright_gateway.api.auth import Principal
from benchwright_gateway.context import GatewayContext
from benchwright_gateway.domain import ALL_SCOPES
from benchwright_shared.refusal import Refused


class SessionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    username: str = Field(min_length=1, max_length=100)
    password: str = Field(min_length=1, max_length=1000)


class TokenIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(default="", max_length=200)
    scopes: list[str] = Field(min_length=1)


class AccountIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    username: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.@-]+$")
    password: str = Field(min_length=12, max_length=1000)
    admin: StrictBool = False


def build_router(ctx: GatewayContext, principal: Callable[..., Awaitable[Principal]]) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["access"])
    Caller = Annotated[Principal, Depends(principal)]

    @router.post("/sessions", status_code=201)
    async def open_session(body: SessionIn) -> dict[str, Any]:
        """Log in: a session token for minting access tokens (shown once)."""
        token, session = await ctx.call(ctx.app.open_session, body.username, body.password)
        return {
            "object": "session",
            "token": token,
            "account": session.account,
            "username": session.username,
            "expires_at": session.expires_at,
        }

    @router.post("/tokens", status_code=201)
    async def create_token(body: TokenIn, caller: Caller) -> dict[str, Any]:
        """Mint a personal access token with ``scopes``; the token is shown once."""
        caller.require_session("minting a token")
        if "admin" in body.scopes and "admin" not in caller.scopes:
            raise Refused(
                403,
                "missing scope",
                "only an admin session grants 'admin'",
                field="scopes",
                code="missing_scope",
            )
        token = await ctx.call(ctx.app.mint_token, caller.account, body.scopes, body.label)
        return {
            "object": "token",
            "token": token,
            "label": body.label,
            "scopes": sorted(set(body.scopes)),
            "account": caller.account,
        }

    @router.get("/tokens")
    async def list_tokens(caller: Caller) -> dict[str, Any]:
        caller.require_session("listing tokens")
        tokens = await ctx.call(ctx.app.list_tokens, caller.account)
        return {"object": "list", "data": tokens}

    @router.delete("/tokens/{token_id}")
    async def revoke_token(token_id: str, caller: Caller) -> dict[str, Any]:
        caller.require_session("revoking a token")
        await ctx.call(ctx.app.revoke_token, caller.account, token_id)
        return {"object": "token", "id": token_id, "revoked": True}

    @router.post("/accounts", status_code=201)
    async def create_account(body: AccountIn, caller: Caller) -> dict[str, Any]:
        """A new account with its first login (admin sessions only)."""
        # The scope first: a credential without it hears what it lacks, whatever it is.
        caller.require("admin")
        caller.require_session("creating an account")
        login = await ctx.call(
            lambda: ctx.app.create_login(body.username, body.password, admin=body.admin)
        )
        return {"object": "account", "account": login.account, "username": login.username}

    @router.get("/me")
    async def me(caller: Caller) -> dict[str, Any]:
        """Who this credential speaks for, and what it may do."""
        return {
            "object": "principal",
            "account": caller.account,
            "kind": caller.kind,
            "scopes": list(caller.scopes),
            "known_scopes": list(ALL_SCOPES),
        }

    return router
