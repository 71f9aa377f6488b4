"""Typed views of the API's response bodies: the gateway's own answer types.

The gateway declares ``benchwright_shared.api``'s types as its response models, so
the SDK reads the very types the server writes; nothing here re-declares a field.
What the SDK adds is behaviour only (``TaskList.payload``). Every type keeps the
fields a newer server adds, as attributes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic import PrivateAttr

from benchwright_shared.api.account import BlockedHost
from benchwright_shared.api.admin import ProjectionRebuild
from benchwright_shared.api.artifacts import Artifact, ArtifactDetail, ArtifactList
from benchwright_shared.api.base import Answer as _Model
from benchwright_shared.api.base import AttrDict
from benchwright_shared.api.compare import RunComparison
from benchwright_shared.api.labels import Agreement, Label, LabelList
from benchwright_shared.api.runs import (
    BenchmarkRef,
    DeletedRun,
    EventList,
    Fingerprint,
    FingerprintRecord,
    Interval,
    LLMSpend,
    Money,
    Narration,
    Run,
    RunCost,
    RunEvent,
    RunLinks,
    RunList,
    SubsetRef,
    SummaryIntervals,
    SutRef,
    TaskPage,
    TaskPayload,
    TaskRow,
    TaskSummary,
    TrialResult,
    TrialVariance,
)

__all__ = [
    "Agreement",
    "Artifact",
    "ArtifactDetail",
    "ArtifactList",
    "AsyncTaskList",
    "AttrDict",
    "BenchmarkRef",
    "BlockedHost",
    "DeletedRun",
    "EventList",
    "Fingerprint",
    "FingerprintRecord",
    "Interval",
    "LLMSpend",
    "Label",
    "LabelList",
    "Money",
    "Narration",
    "ProjectionRebuild",
    "Run",
    "RunComparison",
    "RunCost",
    "RunEvent",
    "RunLinks",
    "RunList",
    "SubsetRef",
    "SummaryIntervals",
    "SutRef",
    "TaskList",
    "TaskPayload",
    "TaskRow",
    "TaskSummary",
    "TrialResult",
    "TrialVariance",
    "_Model",
]


class TaskList(TaskPage):
    """One page of a run's task rows plus the run-wide summary; ``payload`` fetches a
    row's full input and output."""

    _fetch_payload: Callable[[str], TaskPayload] | None = PrivateAttr(default=None)

    def bind(self, fetch_payload: Callable[[str], TaskPayload]) -> TaskList:
        """Attach the callable ``payload`` uses; the client does this for you."""
        self._fetch_payload = fetch_payload
        return self

    def payload(self, row_id: str) -> TaskPayload:
        """Fetch the full payload of one of this run's task rows (by its row ``id``)."""
        if self._fetch_payload is None:
            raise RuntimeError("this TaskList is not bound to a client")
        return self._fetch_payload(row_id)


class AsyncTaskList(TaskPage):
    """:class:`TaskList` for the async client: ``await tasks.payload(row_id)``."""

    _fetch_payload: Callable[[str], Awaitable[TaskPayload]] | None = PrivateAttr(default=None)

    def bind(self, fetch_payload: Callable[[str], Awaitable[TaskPayload]]) -> AsyncTaskList:
        """Attach the coroutine function ``payload`` uses; the client does this for you."""
        self._fetch_payload = fetch_payload
        return self

    async def payload(self, row_id: str) -> TaskPayload:
        """Fetch the full payload of one of this run's task rows (by its row ``id``)."""
        if self._fetch_payload is None:
            raise RuntimeError("this AsyncTaskList is not bound to a client")
        return await self._fetch_payload(row_id)
