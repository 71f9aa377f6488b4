"""Logins, sessions and personal access tokens.

A login opens a session (``POST /v1/sessions``); only a session mints, lists
and revokes tokens, so a leaked token cannot breed more of itself. An admin
session creates accounts; several live side by side on one deployment, and
none sees another's runs.
"""

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from benchwright_gateway.api.deps import Caller, Ctx
from benchwright_gateway.domain import ALL_SCOPES
from benchwright_shared.api.account import (
    AccountCreated,
    Me,
    RevokedToken,
    Session,
    Token,
    TokenCreated,
    TokenList,
)
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


router = APIRouter(prefix="/v1", tags=["access"])


@router.post("/sessions", status_code=201)
async def open_session(body: SessionIn, ctx: Ctx) -> Session:
    """Log in: a session token for minting access tokens (shown once)."""
    token, session = await ctx.call(ctx.app.open_session, body.username, body.password)
    return Session(
        token=token,
        account=session.account,
        username=session.username,
        expires_at=session.expires_at,
    )


@router.post("/tokens", status_code=201)
async def create_token(body: TokenIn, ctx: Ctx, caller: Caller) -> TokenCreated:
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
    return TokenCreated(
        token=token, label=body.label, scopes=sorted(set(body.scopes)), account=caller.account
    )


@router.get("/tokens")
async def list_tokens(ctx: Ctx, caller: Caller) -> TokenList:
    """The account's access tokens (never the tokens themselves)."""
    caller.require_session("listing tokens")
    tokens = await ctx.call(ctx.app.list_tokens, caller.account)
    return TokenList(data=[Token.model_validate(t) for t in tokens])


@router.delete("/tokens/{token_id}")
async def revoke_token(token_id: str, ctx: Ctx, caller: Caller) -> RevokedToken:
    """Revoke a token: it stops working at once."""
    caller.require_session("revoking a token")
    await ctx.call(ctx.app.revoke_token, caller.account, token_id)
    return RevokedToken(id=token_id)


@router.post("/accounts", status_code=201)
async def create_account(body: AccountIn, ctx: Ctx, caller: Caller) -> AccountCreated:
    """A new account with its first login (admin sessions only)."""
    # The scope first: a credential without it hears what it lacks, whatever it is.
    caller.require("admin")
    caller.require_session("creating an account")
    login = await ctx.call(
        lambda: ctx.app.create_login(body.username, body.password, admin=body.admin)
    )
    return AccountCreated(account=login.account, username=login.username)


@router.get("/me")
async def me(caller: Caller) -> Me:
    """Who this credential speaks for, and what it may do."""
    return Me(
        account=caller.account,
        kind=caller.kind,
        scopes=list(caller.scopes),
        known_scopes=list(ALL_SCOPES),
    )
