"""Bearer-token authentication and scope checks."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from fastapi import Request

from benchwright_shared.refusal import Refused


@dataclass(frozen=True)
class Principal:
    account: str
    scopes: tuple[str, ...]
    # "pat" for a personal access token, "session" for an account's login.
    kind: str = "pat"

    def require_session(self, what: str) -> None:
        if self.kind != "session":
            raise Refused(
                403,
                "an account session is required",
                f"{what} needs an account session (POST /v1/sessions), not an access token",
                field="Authorization",
                code="session_required",
            )

    def require(self, scope: str) -> None:
        if scope not in self.scopes and "admin" not in self.scopes:
            raise Refused(
                403,
                "missing scope",
                f"this token lacks the {scope!r} scope",
                field="scope",
                code="missing_scope",
            )


Verify = Callable[[str], Awaitable[Principal | None]]


def principal_dependency(verify: Verify) -> Callable[[Request], Awaitable[Principal]]:
    async def principal(request: Request) -> Principal:
        header = request.headers.get("authorization", "")
        if not header.lower().startswith("bearer "):
            raise Refused(
                401,
                "authentication required",
                "send Authorization: Bearer <token>",
                headers={"WWW-Authenticate": "Bearer"},
            )
        found = await verify(header[7:].strip())
        if found is None:
            raise Refused(
                401,
                "invalid token",
                "the token is unknown or revoked",
                headers={"WWW-Authenticate": "Bearer"},
            )
        return found

    return principal
