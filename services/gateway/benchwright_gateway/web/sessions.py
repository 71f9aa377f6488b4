"""Browser sessions: the cookie, who it speaks for, and the checks on every form.

The cookie holds an ordinary session token (``Session``, the one ``POST /v1/sessions``
opens), so a browser is a session principal and every scope and ownership rule of the
API applies to it unchanged. It is HttpOnly, SameSite=Lax, and Secure whenever the
page was served over TLS. A state-changing form carries a CSRF token derived from the
session token (HMAC), so only a page the session itself rendered can post it; before
sign-in, the sign-in forms use a double-submit cookie instead (login CSRF). A form
from another origin is refused on its ``Origin`` / ``Sec-Fetch-Site`` headers too.
"""

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable, Mapping
from urllib.parse import parse_qsl, quote

from fastapi import Request, Response

from benchwright_gateway.api.auth import Principal
from benchwright_gateway.domain import SESSION_TTL_S
from benchwright_shared.refusal import Refused

SESSION_COOKIE = "bw_session"
# Before sign-in: the double-submit value the sign-in forms echo.
PRE_SESSION_COOKIE = "bw_csrf"
CSRF_FIELD = "csrf"
# What a page may load and do: its own scripts and styles only, nothing inline, no
# frames, forms post only here. Untrusted text (model outputs, task inputs) is
# escaped by the templates; this is the second wall if an escape were ever missed.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}

Verify = Callable[[str], Awaitable[Principal | None]]


class SignInRequired(Exception):
    """The page needs a signed-in browser; the handler redirects to the sign-in form."""


def served_securely(request: Request, public_url: str) -> bool:
    """Whether the browser reached us over TLS (directly, or the public URL says so)."""
    return request.url.scheme == "https" or public_url.startswith("https://")


def csrf_token(session_token: str) -> str:
    """The token a signed-in page puts in its forms: bound to the session, unguessable."""
    return hmac.new(session_token.encode(), b"benchwright-csrf", hashlib.sha256).hexdigest()


def set_session_cookie(response: Response, token: str, *, secure: bool) -> None:
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=SESSION_TTL_S,
        path="/",
        httponly=True,
        secure=secure,
        samesite="lax",
    )


def clear_session_cookie(response: Response, *, secure: bool) -> None:
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, secure=secure, samesite="lax")


def pre_session_token(request: Request) -> str:
    """The double-submit value of this browser, or a new one (set it with ``keep_pre_session``)."""
    return request.cookies.get(PRE_SESSION_COOKIE) or secrets.token_urlsafe(24)


def keep_pre_session(response: Response, value: str, *, secure: bool) -> None:
    response.set_cookie(
        PRE_SESSION_COOKIE, value, path="/", httponly=True, secure=secure, samesite="strict"
    )


def safe_next(target: str | None) -> str:
    """Where to go after sign-in: a path on this site only (never ``//host`` or a URL)."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return "/runs"
    return target


def sign_in_url(request: Request) -> str:
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return "/sign-in?next=" + quote(here, safe="")


class Form(dict[str, str]):
    """A posted form: each name's last value, and ``values(name)`` for all of them."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        super().__init__(pairs)
        self._pairs = pairs

    def values_of(self, name: str) -> list[str]:
        return [value for key, value in self._pairs if key == name]


async def form_fields(request: Request) -> Form:
    """An urlencoded form body (the only kind these pages post)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip()
    if kind != "application/x-www-form-urlencoded":
        raise Refused(415, "unsupported form", "forms are posted urlencoded", field="body")
    body = (await request.body()).decode(errors="replace")
    return Form(parse_qsl(body, keep_blank_values=True))


def same_origin(request: Request) -> bool:
    """False when the browser says the request came from another site."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site not in (None, "same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    if origin == "null":
        # A page with ``Referrer-Policy: no-referrer`` (the sign-in link's) posts
        # ``Origin: null``; the browser's own Sec-Fetch-Site still says where from.
        return fetch_site == "same-origin"
    return origin.split("://", 1)[-1] == request.headers.get("host", "")


def check_form(request: Request, fields: Mapping[str, str], expected: str) -> None:
    """Refuse a state-changing form that this site's page did not render (403)."""
    sent = fields.get(CSRF_FIELD, "")
    if not same_origin(request) or not expected or not hmac.compare_digest(sent, expected):
        raise Refused(
            403, "form refused", "the form is stale or came from another site; reload the page",
            field=CSRF_FIELD, code="csrf_failed",
        )  # fmt: skip


class Browser:
    """Who the browser's session cookie speaks for, and the CSRF token of its forms."""

    def __init__(self, verify: Verify) -> None:
        self._verify = verify

    async def optional(self, request: Request) -> tuple[Principal, str] | None:
        token = request.cookies.get(SESSION_COOKIE, "")
        if not token:
            return None
        found = await self._verify(token)
        # Only a session belongs in the cookie: a PAT never rides in a browser.
        if found is None or found.kind != "session":
            return None
        return found, token

    async def required(self, request: Request) -> tuple[Principal, str]:
        found = await self.optional(request)
        if found is None:
            raise SignInRequired
        return found

    async def posted(self, request: Request) -> tuple[Principal, str, Form]:
        """A signed-in form post: who sent it, its session token and its fields, CSRF
        checked."""
        caller, token = await self.required(request)
        fields = await form_fields(request)
        check_form(request, fields, csrf_token(token))
        return caller, token, fields
