"""``AsyncBenchwright().admin``: the async twin of :mod:`benchwright.resources.admin`."""

from __future__ import annotations

from .._async_http import AsyncHTTP
from .._models import ProjectionRebuild
from ._common import parse, path_id

__all__ = ["AsyncAdmin"]


class AsyncAdmin:
    """Administrative operations for the async client."""

    def __init__(self, http: AsyncHTTP) -> None:
        self._http = http

    async def rebuild(self, projection: str) -> ProjectionRebuild:
        """Replay the event log into ``projection``; see ``Admin.rebuild``."""
        # Deterministic replay: safe to retry after a lost response.
        data = await self._http.request(
            "POST", f"/v1/admin/projections/{path_id(projection)}/rebuild", retry_safe=True
        )
        return parse(ProjectionRebuild, data)
