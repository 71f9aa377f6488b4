"""``AsyncBenchwright().runs``: the async twin of :mod:`benchwright.resources.runs`.

Both build their requests with :class:`~benchwright.resources._common.RunCalls`;
this one awaits them.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any

from .._async_http import AsyncHTTP
from .._errors import APIConnectionError
from .._models import (
    Agreement,
    Artifact,
    ArtifactDetail,
    AsyncTaskList,
    AttrDict,
    BlockedHost,
    DeletedRun,
    EventList,
    Fingerprint,
    Label,
    LabelList,
    Narration,
    Run,
    RunComparison,
    RunEvent,
    RunList,
    TaskPayload,
    TaskRow,
)
from ._common import (
    RunCalls,
    StreamCursor,
    WaitClock,
    follow_pages_async,
    parse_sse_event,
    run_path,
)

__all__ = ["AsyncRuns"]


class AsyncRuns:
    """Operations on runs; every method is a coroutine (``stream`` and ``iter_tasks``
    are async iterators). Each behaves as its namesake on
    :class:`~benchwright.resources.runs.Runs`."""

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
        judge: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        metadata: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        replay: Mapping[str, Any] | None = None,
        driver: Any = None,
        harness: str | None = None,
        compute: str | None = None,
        limits: Mapping[str, Any] | None = None,
        trials: Mapping[str, Any] | None = None,
        constraints: Any = None,
        hints: str | Iterable[str] | None = None,
        phase_models: Mapping[str, str] | None = None,
        cache: str | Mapping[str, Any] | None = None,
        telemetry: Mapping[str, bool] | None = None,
        timeout: float | None = None,
        **extra: Any,
    ) -> Run:
        """Launch a run (natural language, pinned, or a replay); see ``Runs.launch``.
        A generated idempotency key keeps the SDK's retries from launching twice."""
        return await self._http.send(RunCalls.launch(locals()))

    async def estimate(
        self,
        request: str | None = None,
        *,
        benchmark: str | None = None,
        subset: str | None = None,
        impl: str | None = None,
        sut: Mapping[str, Any] | None = None,
        judge: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        metadata: Mapping[str, Any] | None = None,
        replay: Mapping[str, Any] | None = None,
        driver: Any = None,
        harness: str | None = None,
        compute: str | None = None,
        limits: Mapping[str, Any] | None = None,
        trials: Mapping[str, Any] | None = None,
        constraints: Any = None,
        hints: str | Iterable[str] | None = None,
        phase_models: Mapping[str, str] | None = None,
        cache: str | Mapping[str, Any] | None = None,
        telemetry: Mapping[str, bool] | None = None,
        timeout: float | None = None,
        **extra: Any,
    ) -> AttrDict:
        """What :meth:`launch` with the same arguments would cost, before anything runs:
        ``tasks``, ``trials``, ``calls``, ``prompt_tokens`` and ``completion_tokens`` as
        ``{low, expected, high}``, ``cost`` as the same three amounts (priced with the
        table the proxy bills with, ``priced_by``), and ``derivation``: how each figure
        was reached. Model spend only; a pinned launch or a replay (a plain-English
        request is resolved only when it runs)."""
        return await self._http.send(RunCalls.estimate(locals()))

    async def get(
        self,
        run_id: str,
        expand: str | Iterable[str] | None = None,
        fields: str | Iterable[str] | None = None,
    ) -> Run:
        """Fetch one run, with ``expand``-ed extras or only some ``fields``; see ``Runs.get``."""
        return await self._http.send(RunCalls.get(run_id, expand, fields))

    async def halt(self, run_id: str, reason: str | None = None, *, pause: bool = False) -> Run:
        """STOP a run (or, with ``pause=True``, park it for :meth:`resume`)."""
        return await self._http.send(RunCalls.halt(run_id, reason, pause))

    async def resume(self, run_id: str) -> Run:
        """Carry on a paused run. Any other halt raises a 409 ``not_paused`` error."""
        return await self._http.send(RunCalls.resume(run_id))

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
        call = RunCalls.fork(run_id, description, from_phase, sut, driver, limits, idempotency_key)
        return await self._http.send(call)

    async def rescore(
        self,
        run_id: str,
        *,
        impl: str,
        judge: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        limits: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Run:
        """Score ``run_id``'s recorded outputs again with ``impl``; see ``Runs.rescore``."""
        call = RunCalls.rescore(run_id, impl, judge, limits, idempotency_key)
        return await self._http.send(call)

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
        call = RunCalls.update(run_id, visibility, review_resolution, metadata, if_match)
        return await self._http.send(call)

    async def publish(self, run_id: str, visibility: str = "public") -> Run:
        """Make the run (and so its benchmark) visible: ``update(visibility=...)``."""
        return await self.update(run_id, visibility=visibility)

    async def fingerprint(self, run_id: str) -> Fingerprint:
        """How the run's fingerprint was derived: its records, rules, and a recomputation."""
        return await self._http.send(RunCalls.fingerprint(run_id))

    async def export(self, run_id: str, format: str = "jsonl") -> bytes:
        """The run's task results in ``format``: ``jsonl`` (one task per line, whole
        outputs), ``csv``, ``markdown`` (a report with summary, intervals, cost,
        fingerprint and the SHA-256s it was built from), ``lm-eval`` (an
        lm-evaluation-harness results JSON), ``lm-eval-samples`` (its samples
        JSONL), ``inspect`` (an Inspect AI ``.eval`` log, one sample per task and
        trial; an agent run's carry its conversations) or ``atif`` (an agent run's
        trajectories in Harbor's ATIF, one JSON line per task and trial). The server
        streams it."""
        return await self._http.send(RunCalls.export(run_id, format))

    async def compare(self, run_id: str, other: str, *, alpha: float = 0.05) -> RunComparison:
        """Run ``other`` (B) against ``run_id`` (A), paired over the tasks both ran.

        The answer has ``flips`` (fixed / regressed / unchanged), ``errored`` and the
        tasks only one run has, ``pass_rate`` and ``mean_score`` of each over the shared
        tasks (the difference with a paired bootstrap interval at ``1 - alpha``),
        ``mcnemar`` (its exact p-value), a ``verdict`` (``outcome``: worse, better,
        no_significant_difference, no_common_tasks; and ``text``), the ``changes`` task
        by task, and the ``differences`` between the runs (model, impl, tasks, phase
        fingerprints, sampling config).
        """
        return await self._http.send(RunCalls.compare(run_id, other, alpha))

    async def label(
        self,
        run_id: str,
        task: int | str,
        grade: str,
        *,
        note: str | None = None,
        trial: int | None = None,
    ) -> Label:
        """Record your grade of one task of the run: ``task`` is its index, row id
        (``t1_3``) or task id, ``grade`` on the scale of the run's grader (``pass`` /
        ``fail``, or ``C`` / ``P`` / ``I`` when its scorer grades so), ``trial`` one of
        the run's trials (0 when left out). A later label of the same task by you
        replaces this one. Needs a token with the ``runs:label`` scope."""
        return await self._http.send(RunCalls.label(run_id, task, grade, note, trial))

    async def labels(self, run_id: str) -> LabelList:
        """The run's labels, each person's latest per task, oldest first."""
        return await self._http.send(RunCalls.labels(run_id))

    async def agreement(self, run_id: str) -> Agreement:
        """How far the run's grader agrees with people over the labelled tasks: ``n``
        compared, raw agreement, Cohen's kappa with its interval, the confusion matrix
        (rows: people), which way the grader errs, and the run's pass rate or mean
        score ``corrected`` for the grader's measured error (docs/judges.md)."""
        return await self._http.send(RunCalls.agreement(run_id))

    async def blocked_hosts(self, run_id: str) -> builtins.list[BlockedHost]:
        """Hosts this run's sandboxes were refused, with counts."""
        return await self._http.send(RunCalls.blocked_hosts(run_id))

    async def kill(self, run_id: str) -> DeletedRun:
        """DESTROY a run, irreversibly: it is stopped and removed from every listing."""
        return await self._http.send(RunCalls.kill(run_id))

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
        return await self._http.send(RunCalls.list(filters, status, sort, limit, page_token))

    async def artifacts(
        self, run_id: str, type: str | None = None, include_versions: bool = False
    ) -> builtins.list[Artifact]:
        """What each phase produced; see ``Runs.artifacts``."""
        return await self._http.send(RunCalls.artifacts(run_id, type, include_versions))

    async def artifact(self, run_id: str, art_id: str) -> ArtifactDetail:
        """One artifact's description and its recorded fields."""
        return await self._http.send(RunCalls.artifact(run_id, art_id))

    async def artifact_content(self, run_id: str, art_id: str) -> bytes:
        """The artifact itself, as bytes."""
        return await self._http.send(RunCalls.artifact_content(run_id, art_id))

    async def tool_output(self, run_id: str, seq: int) -> str:
        """The whole output of the agent's tool call logged at ``seq``."""
        return await self._http.send(RunCalls.tool_output(run_id, seq))

    async def report(self, run_id: str) -> str:
        """The run's HTML report (one self-contained page)."""
        return await self._http.send(RunCalls.report(run_id))

    async def narrate(self, run_id: str, slice: str = "recent") -> Narration:
        """What the run has been doing, in plain words (``slice``: recent or all)."""
        return await self._http.send(RunCalls.narrate(run_id, slice))

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
        path = run_path(run_id, "stream")
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
        return await self._http.send(RunCalls.events(run_id, after_seq, types, limit))

    async def tasks(
        self,
        run_id: str,
        passed: bool | None = None,
        version: int | None = None,
        limit: int = 100,
        page_token: str | None = None,
        sort: str | None = None,
    ) -> AsyncTaskList:
        """One page of task rows plus the summary; ``await .payload(id)`` fetches one.
        The arguments are :meth:`Runs.tasks`'s."""
        call = RunCalls.tasks(
            run_id,
            AsyncTaskList,
            passed=passed,
            version=version,
            limit=limit,
            page_token=page_token,
            sort=sort,
        )
        page = await self._http.send(call)
        return page.bind(lambda row_id: self.payload(run_id, row_id))

    async def iter_tasks(
        self,
        run_id: str,
        passed: bool | None = None,
        page_size: int = 100,
        *,
        version: int | None = None,
        sort: str | None = None,
    ) -> AsyncIterator[TaskRow]:
        """Yield every task row of the run, fetching pages as needed."""
        async for item in follow_pages_async(
            lambda token: self.tasks(
                run_id, passed, version, limit=page_size, page_token=token, sort=sort
            )
        ):
            yield item

    async def payload(self, run_id: str, row_id: str) -> TaskPayload:
        """The full input, expected answer and output of one task row."""
        return await self._http.send(RunCalls.payload(run_id, row_id))
