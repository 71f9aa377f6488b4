"""What every page route shares: who is asking, the in-process API, and how a refusal
looks in a browser (an HTML page with the API's status, or the sign-in form)."""

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from fastapi.routing import APIRoute

from benchwright_gateway.api import lookup
from benchwright_gateway.api.auth import Principal
from benchwright_gateway.context import GatewayContext
from benchwright_gateway.web.inproc import InProcessApi
from benchwright_gateway.web.sessions import (
    SECURITY_HEADERS,
    Browser,
    SignInRequired,
    sign_in_url,
)
from benchwright_gateway.web.templating import page
from benchwright_shared.refusal import Refused


@dataclass
class Web:
    """The pages' view of the gateway."""

    ctx: GatewayContext
    browser: Browser
    api: InProcessApi

    async def readable_run(
        self, request: Request, run_id: str
    ) -> tuple[Principal, str, dict[str, Any]]:
        """The signed-in caller, their token and the run they may read (the API's rule:
        another account's run reads as missing unless it is shared)."""
        caller, token = await self.browser.required(request)
        caller.require("runs:read")
        return caller, token, await lookup.load_run(self.ctx, caller, run_id, reading=True)


class PageRoute(APIRoute):
    """A route answering browsers: no session sends to sign-in, a refusal is a page.

    A run another account owns answers as a missing one does (404), as in the API."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handler(request)
            except SignInRequired:
                if request.method != "GET":
                    return error_page(request, Refused(401, "sign in first", "sign in again"))
                return RedirectResponse(sign_in_url(request), 303, headers=SECURITY_HEADERS)
            except Refused as refused:
                return error_page(request, refused)
            except RequestValidationError as invalid:
                # A hand-edited query string: say which parameter, as a page.
                first = invalid.errors()[0] if invalid.errors() else {}
                where = ".".join(str(part) for part in first.get("loc", ())[1:])
                detail = f"{where}: {first.get('msg', 'invalid')}" if where else "invalid request"
                return error_page(request, Refused(400, "invalid request", detail))

        return answer


def error_page(request: Request, refused: Refused) -> Response:
    return page(
        request,
        "error.html",
        refused.status,
        title=refused.title,
        detail=refused.detail or "",
        status=refused.status,
        me=None,
    )


def see_other(url: str) -> RedirectResponse:
    """After a form: the page to show next (303, so a reload does not post again)."""
    return RedirectResponse(url, 303, headers=SECURITY_HEADERS)
