"""The account page: tokens (create, revoke), secrets (masked, write-only), the host
policy and blocked hosts, the billing balance and ledger.

Every section is the API's answer for the browser's session and every form posts
through the API's route (``inproc``). A new token is shown once, in the page that
answers the form, never in a URL; a secret's value is never read back.
"""

import asyncio
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse

from benchwright_gateway.api.auth import Principal
from benchwright_gateway.domain import ALL_SCOPES
from benchwright_gateway.web.inproc import Answer
from benchwright_gateway.web.routing import PageRoute, Web, see_other
from benchwright_gateway.web.runs import viewer
from benchwright_gateway.web.sessions import Form
from benchwright_gateway.web.templating import page

# The sections of the page: where each reads, and the name the template uses.
SECTIONS = {
    "tokens": "/v1/tokens",
    "secrets": "/v1/secrets",
    "policy": "/v1/host-policy",
    "blocked": "/v1/blocked-hosts",
    "balance": "/v1/billing/balance",
    "ledger": "/v1/billing/transactions",
}
NOTICES = {
    "token_revoked": "The token is revoked.",
    "secret_saved": "The secret is saved.",
    "secret_deleted": "The secret is deleted.",
    "policy_saved": "The host policy is saved.",
}


def _form_change(action: str, fields: Form) -> tuple[str, str, Any, str]:
    """(method, path, body, notice) of the API call a form on the page asks for."""
    name = quote(fields.get("name", ""), safe="")
    match action:
        case "revoke-token":
            token_id = quote(fields.get("token_id", ""), safe="")
            return "DELETE", f"/v1/tokens/{token_id}", None, "token_revoked"
        case "save-secret":
            body: dict[str, Any] = {
                "name": fields.get("name", ""),
                "value": fields.get("value", ""),
                "description": fields.get("description", ""),
            }
            return "POST", "/v1/secrets", body, "secret_saved"
        case "delete-secret":
            return "DELETE", f"/v1/secrets/{name}", None, "secret_deleted"
        case "host-rule":
            rule = {"pattern": fields.get("pattern", ""), "action": fields.get("rule_action")}
            return "PATCH", "/v1/host-policy", {"add": [rule]}, "policy_saved"
        case "remove-rule":
            body = {"remove": [fields.get("pattern", "")]}
            return "PATCH", "/v1/host-policy", body, "policy_saved"
        case "default-mode":
            body = {"default_mode": fields.get("mode")}
            return "PATCH", "/v1/host-policy", body, "policy_saved"
    raise LookupError(action)


def build_router(web: Web) -> APIRouter:
    router = APIRouter(route_class=PageRoute, include_in_schema=False)

    async def account_page(
        request: Request,
        caller: Principal,
        token: str,
        *,
        status: int = 200,
        new_token: str = "",
        notice: str = "",
        problem: str = "",
    ) -> HTMLResponse:
        sections: dict[str, Any] = {}
        unavailable: dict[str, str] = {}
        answers = await asyncio.gather(
            *(web.api.call("GET", path, token) for path in SECTIONS.values())
        )
        for name, answer in zip(SECTIONS, answers, strict=True):
            if answer.ok:
                sections[name] = answer.body
            else:
                unavailable[name] = answer.problem()
        return page(
            request, "account.html", status, me=viewer(caller, token), s=sections,
            unavailable=unavailable, new_token=new_token, notice=notice, problem=problem,
            scopes=[s for s in ALL_SCOPES if s != "admin" or "admin" in caller.scopes],
        )  # fmt: skip

    @router.get("/account", response_class=HTMLResponse)
    async def account(request: Request, done: str | None = None) -> Response:
        caller, token = await web.browser.required(request)
        return await account_page(request, caller, token, notice=NOTICES.get(done or "", ""))

    @router.post("/account/tokens", response_class=HTMLResponse)
    async def create_token(request: Request) -> Response:
        """Mint a token; the page that answers shows it once (it never goes in a URL)."""
        caller, token, fields = await web.browser.posted(request)
        body = {"label": fields.get("label", ""), "scopes": fields.values_of("scopes")}
        answer = await web.api.call("POST", "/v1/tokens", token, json=body)
        if not answer.ok:
            return await account_page(
                request, caller, token, status=answer.status, problem=answer.problem()
            )
        return await account_page(request, caller, token, new_token=answer.body["token"])

    @router.post("/account/{action}", response_class=HTMLResponse)
    async def change(request: Request, action: str) -> Response:
        caller, token, fields = await web.browser.posted(request)
        try:
            method, path, body, notice = _form_change(action, fields)
        except LookupError:
            return await account_page(
                request, caller, token, status=404, problem=f"no form {action!r}"
            )
        answer: Answer = await web.api.call(method, path, token, json=body)
        if not answer.ok:
            return await account_page(
                request, caller, token, status=answer.status, problem=answer.problem()
            )
        return see_other(f"/account?done={notice}")

    return router
