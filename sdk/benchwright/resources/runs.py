"""``bw.runs``: launch runs, read them back, and follow their event logs."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .._errors import APIConnectionError
from .._http import SyncHTTP
from .._models import (
    AttrDict,
    DeletedRun,
    EventList,
    Run,
    RunEvent,
    RunList,
    TaskList,
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

__all__ = ["Runs"]


class Runs:
    """Operations on runs; reach it as ``Benchwright().runs``."""

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http

    def launch(
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
        """Launch a run and return it as created (usually still ``running``).

        ``sut`` is the model under test, ``{"model": ..., "provider": ...}``. Every field
        is forwarded as given and validated by the server. Without an
        ``idempotency_key`` one is generated, so the SDK's own retries can never launch
        (and bill) the same run twice; pass your own to make *your* retries safe too.
        """
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
        data = self._http.request("POST", "/v1/runs", json=body, headers={"Idempotency-Key": key})
        return parse(Run, data)

    def get(self, run_id: str) -> Run:
        """Fetch one run."""
        return parse(Run, self._http.request("GET", f"/v1/runs/{path_id(run_id)}"))

    def halt(self, run_id: str, reason: str | None = None, *, pause: bool = False) -> Run:
        """Stop a run; it stays readable, ends with ``halted`` set and shows as killed.

        With ``pause=True`` the run is parked instead (``display_status`` ``paused``)
        and :meth:`resume` carries it on from where it stopped.
        """
        body = halt_body(reason, pause)
        return parse(Run, self._http.request("POST", f"/v1/runs/{path_id(run_id)}/halt", json=body))

    def resume(self, run_id: str) -> Run:
        """Carry on a paused run. Any other halt raises a 409 ``not_paused`` error."""
        return parse(Run, self._http.request("POST", f"/v1/runs/{path_id(run_id)}/resume"))

    def fork(
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
        """Rewind ``run_id`` to ``from_phase`` and carry on with ``description`` as guidance.

        Everything upstream of the rewind point is inherited, not recomputed; a
        rewritten scorer gets a new impl id. The fork records a derived-from edge.
        """
        body = fork_body(description, from_phase, sut, driver, limits)
        key = idempotency_key or new_idempotency_key()
        path = f"/v1/runs/{path_id(run_id)}/fork"
        return parse(
            Run, self._http.request("POST", path, json=body, headers={"Idempotency-Key": key})
        )

    def update(
        self,
        run_id: str,
        *,
        visibility: str | None = None,
        review_resolution: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        if_match: str | None = None,
    ) -> Run:
        """Change a run's ``visibility`` (``private``, ``unlisted``, ``public``) and/or
        answer the review a waiting run asked for (the text guides its Driver).

        The server needs one of those two; ``metadata`` (merged, a None value removes
        a key) rides along and alone is refused with ``invalid_argument``. Publishing a
        run is what makes its benchmark visible in the registry. ``if_match`` (the
        run's ``etag``) refuses the change if the run moved on since you read it.
        A patch is idempotent, so it is retried like a GET.
        """
        path = f"/v1/runs/{path_id(run_id)}"
        body = update_body(visibility, review_resolution, metadata)
        return parse(
            Run,
            self._http.request(
                "PATCH", path, json=body, headers=if_match_header(if_match), retry_safe=True
            ),
        )

    def publish(self, run_id: str, visibility: str = "public") -> Run:
        """Make the run (and so its benchmark) visible: ``update(visibility=...)``."""
        return self.update(run_id, visibility=visibility)

    def fingerprint(self, run_id: str) -> AttrDict:
        """How the run's fingerprint was derived: its records, rules, and a recomputation."""
        return parse_dict(self._http.request("GET", f"/v1/runs/{path_id(run_id)}/fingerprint"))

    def blocked_hosts(self, run_id: str) -> list[AttrDict]:
        """Hosts this run's sandboxes were refused, with counts."""
        data = self._http.request("GET", f"/v1/runs/{path_id(run_id)}/blocked-hosts")
        return [parse_dict(b) for b in data["data"]]

    def kill(self, run_id: str) -> DeletedRun:
        """Destroy a run, irreversibly: it is stopped and removed from every listing."""
        return parse(DeletedRun, self._http.request("DELETE", f"/v1/runs/{path_id(run_id)}"))

    def list(
        self,
        filters: Mapping[str, Any] | None = None,
        sort: str | None = None,
        limit: int = 50,
        page_token: str | None = None,
        *,
        status: str | None = None,
    ) -> RunList:
        """One page of your runs; pass ``next_page_token`` on for the next.

        ``filters``: ``status``, ``benchmark`` (id or name), ``visibility``, and
        ``started_at`` / ``finished_at`` as ``{"gte": ..., "lt": ...}``. ``sort`` is
        ``-started_at`` (the default), ``started_at``, ``-finished_at`` or
        ``finished_at``.
        """
        params = list_params(filters, status=status, sort=sort, limit=limit, page_token=page_token)
        return parse(RunList, self._http.request("GET", "/v1/runs", params=params))

    def artifacts(
        self, run_id: str, type: str | None = None, include_versions: bool = False
    ) -> builtins.list[AttrDict]:
        """What each phase produced (``fetch``, ``analyze``, ``setup``, ``atomize``,
        ``model_proxy``, ``snapshot``, ``report``...): the latest of each kind, or
        every version with ``include_versions``."""
        params = {"type": type, "include_versions": include_versions or None}
        found = self._http.request("GET", f"/v1/runs/{path_id(run_id)}/artifacts", params=params)
        return [parse_dict(a) for a in found["data"]]

    def artifact(self, run_id: str, art_id: str) -> AttrDict:
        """One artifact's description and its recorded fields."""
        path = f"/v1/runs/{path_id(run_id)}/artifacts/{path_id(art_id)}"
        return parse_dict(self._http.request("GET", path))

    def artifact_content(self, run_id: str, art_id: str) -> bytes:
        """The artifact itself: the scorer's code, the LiteLLM config, a report file."""
        path = f"/v1/runs/{path_id(run_id)}/artifacts/{path_id(art_id)}/content"
        return bytes(self._http.request("GET", path, raw=True) or b"")

    def report(self, run_id: str) -> str:
        """The run's HTML report (one self-contained page)."""
        path = f"/v1/runs/{path_id(run_id)}/report"
        return bytes(self._http.request("GET", path, raw=True) or b"").decode()

    def narrate(self, run_id: str, slice: str = "recent") -> AttrDict:
        """What the run has been doing, in plain words (``slice``: recent or all)."""
        path = f"/v1/runs/{path_id(run_id)}/narrate"
        return parse_dict(self._http.request("GET", path, params={"slice": slice}))

    def wait(self, run_id: str, timeout: float | None = None, poll_interval: float = 2.0) -> Run:
        """Poll until the run is no longer ``running`` and return it.

        Raises :class:`~benchwright.WaitTimeoutError` (a ``TimeoutError``) after
        ``timeout`` seconds; the run itself carries on.
        """
        clock = WaitClock(run_id, timeout, poll_interval)
        while True:
            run = self.get(run_id)
            if run.is_terminal:
                return run
            self._http.sleep(clock.next_delay(run))

    def stream(self, run_id: str) -> Iterator[RunEvent]:
        """Yield the run's events live, from the start, until the run is terminal.

        A dropped connection is resumed (``Last-Event-ID``) up to ``max_retries`` times
        in a row; events already yielded are never yielded again.
        """
        cursor = StreamCursor(self._http.policy)
        path = f"/v1/runs/{path_id(run_id)}/stream"
        while True:
            try:
                for sse in self._http.sse(path, headers=cursor.resume_headers()):
                    event = parse_sse_event(run_id, sse)
                    if event is not None and cursor.accept(event):
                        yield event
                return
            except APIConnectionError:
                delay = cursor.next_delay()
                if delay is None:
                    raise
                self._http.sleep(delay)

    def events(
        self,
        run_id: str,
        after_seq: int | None = None,
        types: str | Iterable[str] | None = None,
        limit: int = 500,
    ) -> EventList:
        """One page of the run's event log, oldest first, after ``after_seq``."""
        params = {"after_seq": after_seq, "types": types_param(types), "limit": limit}
        data = self._http.request("GET", f"/v1/runs/{path_id(run_id)}/events", params=params)
        return parse(EventList, data)

    def tasks(
        self,
        run_id: str,
        passed: bool | None = None,
        limit: int = 100,
        page_token: str | None = None,
    ) -> TaskList:
        """One page of task rows plus the run-wide summary; ``.payload(id)`` fetches one."""
        params = {"passed": passed, "limit": limit, "page_token": page_token}
        data = self._http.request("GET", f"/v1/runs/{path_id(run_id)}/tasks", params=params)
        return parse(TaskList, data).bind(lambda row_id: self.payload(run_id, row_id))

    def iter_tasks(
        self, run_id: str, passed: bool | None = None, page_size: int = 100
    ) -> Iterator[TaskRow]:
        """Yield every task row of the run, fetching pages as needed."""
        token: str | None = None
        while True:
            page = self.tasks(run_id, passed=passed, limit=page_size, page_token=token)
            yield from page.data
            token = page.next_page_token
            if not token:
                return

    def payload(self, run_id: str, row_id: str) -> TaskPayload:
        """The full input, expected answer and output of one task row."""
        path = f"/v1/runs/{path_id(run_id)}/tasks/{path_id(row_id)}/payload"
        return parse(TaskPayload, self._http.request("GET", path))
