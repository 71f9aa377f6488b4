"""The pages as a client of ``/v1``, in the same process.

Whatever the API already answers (a task's payload, a comparison, leaderboards,
tokens, secrets, billing) and every change a form makes (halt, resume, publish,
tokens, secrets, host policy) goes through the API's own route with the browser's
session token as its bearer: one set of scope, ownership and validation rules, the
API's. Only ASGI calls, no socket: nothing leaves the process.
"""

from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import FastAPI

from benchwright_shared.refusal import Refused


@dataclass(frozen=True)
class Answer:
    """An API answer: its status and its JSON body (a problem+json on failure)."""

    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return self.status < 400

    def problem(self) -> str:
        """The refusal's detail in a sentence, for a page to show."""
        if self.ok or not isinstance(self.body, dict):
            return ""
        return str(self.body.get("detail") or self.body.get("title") or f"HTTP {self.status}")


class InProcessApi:
    """Calls ``/v1`` routes of ``http`` as the given session would over the network."""

    def __init__(self, http: FastAPI) -> None:
        self._client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=http), base_url="http://gateway.internal"
        )

    async def call(
        self,
        method: str,
        path: str,
        session_token: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
    ) -> Answer:
        response = await self._client.request(
            method,
            path,
            json=json,
            # ``with_`` stands for ``with``, a Python keyword.
            params={k.rstrip("_"): v for k, v in (params or {}).items() if v not in (None, "")},
            headers={"Authorization": f"Bearer {session_token}"},
            timeout=30.0,
        )
        try:
            body = response.json()
        except ValueError:
            body = response.text
        return Answer(response.status_code, body)

    async def get(self, path: str, session_token: str, **params: Any) -> Any:
        """The JSON of a read that must succeed; a refusal is raised as the API's own."""
        answer = await self.call("GET", path, session_token, params=params)
        if not answer.ok:
            body = answer.body if isinstance(answer.body, dict) else {}
            raise Refused(
                answer.status,
                str(body.get("title") or "request failed"),
                answer.problem(),
                field=body.get("field"),
            )
        return answer.body

    async def close(self) -> None:
        await self._client.aclose()
