"""``bw.admin``: operator endpoints of a self-hosted server."""

from __future__ import annotations

from .._http import SyncHTTP
from .._models import ProjectionRebuild
from ._common import parse, path_id

__all__ = ["Admin"]


class Admin:
    """Administrative operations; reach it as ``Benchwright().admin``."""

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http

    def rebuild(self, projection: str) -> ProjectionRebuild:
        """Replay the event log into ``projection`` from scratch.

        Compare ``digest`` with ``before_digest`` (or read ``.unchanged``) to check that
        the live projection had not drifted from the log.
        """
        # A rebuild is a pure function of the log, so repeating it after a lost
        # response is harmless and worth retrying.
        data = self._http.request(
            "POST", f"/v1/admin/projections/{path_id(projection)}/rebuild", retry_safe=True
        )
        return parse(ProjectionRebuild, data)
