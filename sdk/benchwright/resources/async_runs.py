"""``AsyncBenchwright().runs``: the async twin of :mod:`benchwright.resources.runs`."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from .._async_http import AsyncHTTP
from .._errors import APIConnectionError
from .._models import (
    AsyncTaskList,
    AttrDict,
    DeletedRun,
    EventList,
    Run,
    RunEvent,
    RunList,
    TaskPayload,
    TaskRow,
)
from ._common import (
    StreamCursor,
    WaitClock,
    fork_body,
    halt_body,
    if_match_header,
    launch_body,
    list_params,
    new_idempotency_key,
    parse,
    parse_dict,
    parse_sse_event,
    path_id,
    types_param,
    update_body,
)

__all__ = ["AsyncRuns"]


class AsyncRuns:
    """Operations on runs; every method is a coroutine (``stream`` an async iterator)."""

    def __init__(self, http: AsyncHTTP) -> None:
        self._http = http

    async def launch(
        self,
        request: str | None = None,
        *,
        benchmark: str | None = None,
        subset: str | None = None,
        impl: str | None = None,
        sut: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        replay: Mapping[str, Any] | None = None,
        driver: Any = None,
        harness: str | None = None,
        compute: str | None = None,
        limits: Mapping[str, Any] | None = None,
        trials: Mapping[str, Any] | None = None,
        constraints: Any = None,
        hints: Any = None,
        phase_models: Mapping[str, Any] | None = None,
        **extra: Any,
    ) -> Run:
        """Launch a run; see :meth:`benchwright.resources.runs.Runs.launch`."""
        body = launch_body(
            benchmark=benchmark,
            subset=subset,
            impl=impl,
            sut=sut,
            metadata=metadata,
            extra={
                "request": request,
                "replay": replay,
                "driver": driver,
                "harness": harness,
                "compute": compute,
                "limits": limits,
                "trials": trials,
                "constraints": constraints,
                "hints": hints,
                "phase_models": phase_models,
                **extra,
            },
        )
        key = idempotency_key or new_idempotency_key()
        data = await self._http.request(
            "POST", "/v1/runs", json=body, headers={"Idempotency-Key": key}
        )
        return parse(Run, data)

    async def get(self, run_id: str) -> Run:
        """Fetch one run."""
        return parse(Run, await self._http.request("GET", f"/v1/runs/{path_id(run_id)}"))

    async def halt(self, run_id: str, reason: str | None = None, *, pause: bool = False) -> Run:
        """Stop a run (or, with ``pause=True``, park it for :meth:`resume`)."""
        path = f"/v1/runs/{path_id(run_id)}/halt"
        return parse(Run, await self._http.request("POST", path, json=halt_body(reason, pause)))

    async def resume(self, run_id: str) -> Run:
        """Carry on a paused run. Any other halt raises a 409 ``not_paused`` error."""
        path = f"/v1/runs/{path_id(run_id)}/resume"
        return parse(Run, await self._http.request("POST", path))

    async def fork(
        self,
        run_id: str,
        *,
        description: str,
        from_phase: str = "atomize",
        sut: Mapping[str, Any] | None = None,
        driver: str | None = None,
        limits: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Run:
        """Rewind ``run_id`` to ``from_phase`` and carry on with ``description`` as guidance."""
        body = fork_body(description, from_phase, sut, driver, limits)
        key = idempotency_key or new_idempotency_key()
        path = f"/v1/runs/{path_id(run_id)}/fork"
        data = await self._http.request("POST", path, json=body, headers={"Idempotency-Key": key})
        return parse(Run, data)

    async def update(
        self,
        run_id: str,
        *,
        visibility: str | None = None,
        review_resolution: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        if_match: str | None = None,
    ) -> Run:
        """Change a run's ``visibility`` or answer its review; see ``Runs.update``."""
        path = f"/v1/runs/{path_id(run_id)}"
        body = update_body(visibility, review_resolution, metadata)
        found = await self._http.request(
            "PATCH", path, json=body, headers=if_match_header(if_match), retry_safe=True
        )
        return parse(Run, found)

    async def publish(self, run_id: str, visibility: str = "public") -> Run:
        """Make the run (and so its benchmark) visible: ``update(visibility=...)``."""
        return await self.update(run_id, visibility=visibility)

    async def kill(self, run_id: str) -> DeletedRun:
        """Destroy a run, irreversibly: it is stopped and removed from every listing."""
        path = f"/v1/runs/{path_id(run_id)}"
        return parse(DeletedRun, await self._http.request("DELETE", path))

    async def list(
        self,
        filters: Mapping[str, Any] | None = None,
        sort: str | None = None,
        limit: int = 50,
        page_token: str | None = None,
        *,
        status: str | None = None,
    ) -> RunList:
        """One page of your runs; filters and sort as in ``Runs.list``."""
        params = list_params(filters, status=status, sort=sort, limit=limit, page_token=page_token)
        return parse(RunList, await self._http.request("GET", "/v1/runs", params=params))

    async def artifacts(
        self, run_id: str, type: str | None = None, include_versions: bool = False
    ) -> builtins.list[AttrDict]:
        """What each phase produced; see ``Runs.artifacts``."""
        params = {"type": type, "include_versions": include_versions or None}
        found = await self._http.request(
            "GET", f"/v1/runs/{path_id(run_id)}/artifacts", params=params
        )
        return [parse_dict(a) for a in found["data"]]

    async def artifact(self, run_id: str, art_id: str) -> AttrDict:
        path = f"/v1/runs/{path_id(run_id)}/artifacts/{path_id(art_id)}"
        return parse_dict(await self._http.request("GET", path))

    async def artifact_content(self, run_id: str, art_id: str) -> bytes:
        path = f"/v1/runs/{path_id(run_id)}/artifacts/{path_id(art_id)}/content"
        return bytes(await self._http.request("GET", path, raw=True) or b"")

    async def report(self, run_id: str) -> str:
        path = f"/v1/runs/{path_id(run_id)}/report"
        return bytes(await self._http.request("GET", path, raw=True) or b"").decode()

    async def narrate(self, run_id: str, slice: str = "recent") -> AttrDict:
        path = f"/v1/runs/{path_id(run_id)}/narrate"
        return parse_dict(await self._http.request("GET", path, params={"slice": slice}))

    async def wait(
        self, run_id: str, timeout: float | None = None, poll_interval: float = 2.0
    ) -> Run:
        """Poll until the run is no longer ``running``; raises ``WaitTimeoutError``."""
        clock = WaitClock(run_id, timeout, poll_interval)
        while True:
            run = await self.get(run_id)
            if run.is_terminal:
                return run
            await self._http.sleep(clock.next_delay(run))

    async def stream(self, run_id: str) -> AsyncIterator[RunEvent]:
        """Yield the run's events live until it is terminal, resuming dropped streams."""
        cursor = StreamCursor(self._http.policy)
        path = f"/v1/runs/{path_id(run_id)}/stream"
        while True:
            try:
                async for sse in self._http.sse(path, headers=cursor.resume_headers()):
                    event = parse_sse_event(run_id, sse)
                    if event is not None and cursor.accept(event):
                        yield event
                return
            except APIConnectionError:
                delay = cursor.next_delay()
                if delay is None:
                    raise
                await self._http.sleep(delay)

    async def events(
        self,
        run_id: str,
        after_seq: int | None = None,
        types: str | Iterable[str] | None = None,
        limit: int = 500,
    ) -> EventList:
        """One page of the run's event log, oldest first, after ``after_seq``."""
        params = {"after_seq": after_seq, "types": types_param(types), "limit": limit}
        path = f"/v1/runs/{path_id(run_id)}/events"
        return parse(EventList, await self._http.request("GET", path, params=params))

    async def tasks(
        self,
        run_id: str,
        passed: bool | None = None,
        limit: int = 100,
        page_token: str | None = None,
    ) -> AsyncTaskList:
        """One page of task rows plus the summary; ``await .payload(id)`` fetches one."""
        params = {"passed": passed, "limit": limit, "page_token": page_token}
        path = f"/v1/runs/{path_id(run_id)}/tasks"
        page = parse(AsyncTaskList, await self._http.request("GET", path, params=params))
        return page.bind(lambda row_id: self.payload(run_id, row_id))

    async def iter_tasks(
        self, run_id: str, passed: bool | None = None, page_size: int = 100
    ) -> AsyncIterator[TaskRow]:
        """Yield every task row of the run, fetching pages as needed."""
        token: str | None = None
        while True:
            page = await self.tasks(run_id, passed=passed, limit=page_size, page_token=token)
            for row in page.data:
                yield row
            token = page.next_page_token
            if not token:
                return

    async def payload(self, run_id: str, row_id: str) -> TaskPayload:
        """The full input, expected answer and output of one task row."""
        path = f"/v1/runs/{path_id(run_id)}/tasks/{path_id(row_id)}/payload"
        return parse(TaskPayload, await self._http.request("GET", path))
