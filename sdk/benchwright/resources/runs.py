"""``bw.runs``: launch runs, read them back, and follow their event logs."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from .._errors import APIConnectionError
from .._http import SyncHTTP
from .._models import (
    Agreement,
    Artifact,
    ArtifactDetail,
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
    TaskList,
    TaskPayload,
    TaskRow,
)
from ._common import RunCalls, StreamCursor, WaitClock, follow_pages, parse_sse_event, run_path

__all__ = ["Runs"]


class Runs:
    """Operations on runs; reach it as ``Benchwright().runs``.

    A run is one pipeline execution: launched in natural language, pinned to a
    catalog benchmark, or replayed from an earlier run. Everything about it is read
    back by its id: the run itself, its tasks, artifacts, events and report.
    """

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
        """Launch a run and return it as created (usually still ``running``).

        Three modes: ``request="Run GSM8K on ..."`` (natural language: the pipeline
        finds, analyzes and atomizes the benchmark), ``benchmark=`` (+ ``subset=``,
        ``impl=``) to pin a catalog entry, or ``replay={"from_run": anchor_id}`` to
        reuse an anchor run's exact tasks and impl. ``sut`` is the model under test,
        ``{"model": ..., "provider": ...}``; ``judge`` (the same shape, or a list of them
        for a panel) is the model a model-graded scorer's ``self.judge`` calls reach,
        metered as ``cost.judge``; ``driver`` is what drives the pipeline,
        not what it tests. ``hints`` is guidance for the Driver (a sentence or a list
        of them: "the answer is the last number", "score case-insensitively"), part
        of the run's fingerprint; ``phase_models`` gives the LLM Driver another model
        for a phase (``{"atomize": "openai://gpt-4o"}``; phases ``find``,
        ``analyze``, ``atomize``). ``metadata`` is behavioural configuration
        (``limit``...), not a queryable tag. ``cache`` (``"read"``, ``"read_write"``
        or ``{"mode": ..., "ttl": seconds}``; off by default) lets the proxy answer a
        model call it answered before, for the same account, model, request and
        trial, at no cost. ``telemetry`` (``{"traces": False}`` or
        ``{"message_content": True}``) shapes this run's OpenTelemetry traces where the
        deployment exports them (``OTEL_EXPORTER_OTLP_ENDPOINT``). ``harness="inspect"``
        runs an Inspect AI task instead of a scorer: ``metadata={"inspect_harness":
        {"task": "arith.py@arith", "args": {...}, "files": {"arith.py": ...,
        "data/arith.jsonl": ...}}}`` (a task file and its local data), or ``{"task":
        "inspect_evals/mmlu_0_shot", "args": {...}}`` (fed the catalog's rows).
        ``harness="harbor"`` runs agents on a Harbor-format dataset of tasks:
        ``metadata=benchwright.harbor.harbor_metadata("./my-tasks", agent="oracle")``
        (``agent`` ``"benchwright"``, ``"oracle"``, ``"nop"`` or ``"product"``, or Harbor's
        own through the bridge: ``"harbor:oracle"``, ``"harbor:nop"``,
        ``"harbor:terminus-2"``, and ``"harbor:claude-code"`` or ``"harbor:codex"``
        where the task's sandbox holds their CLI). Every
        field is forwarded as given and validated by the server; ``timeout`` bounds
        this request (seconds), not the run (see :meth:`wait`).

        Without an ``idempotency_key`` one is generated, so the SDK's own retries can
        never launch (and bill) the same run twice; pass your own to make *your*
        retries safe too: the same key answers the run it first launched.
        """
        return self._http.send(RunCalls.launch(locals()))

    def estimate(
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
        return self._http.send(RunCalls.estimate(locals()))

    def get(
        self,
        run_id: str,
        expand: str | Iterable[str] | None = None,
        fields: str | Iterable[str] | None = None,
    ) -> Run:
        """Fetch one run.

        ``expand`` adds what would otherwise take more calls: ``tasks_summary`` (the
        live aggregate over its tasks), ``artifacts`` (latest of each kind),
        ``recent_events`` (the tail of its log), ``blocked_hosts``. ``fields`` answers
        only the named top-level fields (plus ``id`` and ``object``), e.g.
        ``fields=["status", "cost"]``. An unknown name is a
        :class:`~benchwright.BadRequestError` naming it.
        """
        return self._http.send(RunCalls.get(run_id, expand, fields))

    def halt(self, run_id: str, reason: str | None = None, *, pause: bool = False) -> Run:
        """STOP a run; it stays readable, ends with ``halted`` set and shows as killed.

        With ``pause=True`` the run is parked instead (``display_status`` ``paused``)
        and :meth:`resume` carries it on from where it stopped. A run that already
        finished raises :class:`~benchwright.ConflictError` (``run_finished``).
        """
        return self._http.send(RunCalls.halt(run_id, reason, pause))

    def resume(self, run_id: str) -> Run:
        """Carry on a paused run. Any other halt raises a 409 ``not_paused`` error."""
        return self._http.send(RunCalls.resume(run_id))

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
        Use it to fix a scorer or a task_impl; treat the fork as the new anchor
        (replays of the parent keep the parent's impl).
        """
        call = RunCalls.fork(run_id, description, from_phase, sut, driver, limits, idempotency_key)
        return self._http.send(call)

    def rescore(
        self,
        run_id: str,
        *,
        impl: str,
        judge: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        limits: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Run:
        """Score ``run_id``'s recorded outputs again with ``impl``, in a new run.

        ``impl`` is a scorer of the same subset (an impl id); ``judge`` (``{model,
        provider, api_base?}``, or a list for a panel) replaces the parent's judges for
        the scorer's judge calls. The new run's
        ``parent_run_id`` is ``run_id``; it inherits the dataset, selection, trials and
        model, and the model under test is never called: each task's output is the one
        the parent recorded (a trial the parent recorded none for ends ``err``,
        ``rescore:no_output``). ``compare(run_id, new.id)`` then lists exactly the tasks
        the scorer grades differently. Refused: a run not finished ``ok``
        (:class:`~benchwright.ConflictError`), one with no recorded output or an impl of
        another subset (:class:`~benchwright.UnprocessableEntityError`, naming the field).
        """
        call = RunCalls.rescore(run_id, impl, judge, limits, idempotency_key)
        return self._http.send(call)

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
        run's ``etag``) refuses the change with
        :class:`~benchwright.PreconditionFailedError` if the run moved on since you
        read it. A patch is idempotent, so it is retried like a GET.
        """
        call = RunCalls.update(run_id, visibility, review_resolution, metadata, if_match)
        return self._http.send(call)

    def publish(self, run_id: str, visibility: str = "public") -> Run:
        """Make the run (and so its benchmark) visible: ``update(visibility=...)``."""
        return self.update(run_id, visibility=visibility)

    def fingerprint(self, run_id: str) -> Fingerprint:
        """How the run's fingerprint was derived: its records, rules, and a recomputation."""
        return self._http.send(RunCalls.fingerprint(run_id))

    def export(self, run_id: str, format: str = "jsonl") -> bytes:
        """The run's task results in ``format``: ``jsonl`` (one task per line, whole
        outputs), ``csv``, ``markdown`` (a report with summary, intervals, cost,
        fingerprint and the SHA-256s it was built from), ``lm-eval`` (an
        lm-evaluation-harness results JSON), ``lm-eval-samples`` (its samples
        JSONL), ``inspect`` (an Inspect AI ``.eval`` log, one sample per task and
        trial; an agent run's carry its conversations) or ``atif`` (an agent run's
        trajectories in Harbor's ATIF, one JSON line per task and trial). The server
        streams it."""
        return self._http.send(RunCalls.export(run_id, format))

    def compare(self, run_id: str, other: str, *, alpha: float = 0.05) -> RunComparison:
        """Run ``other`` (B) against ``run_id`` (A), paired over the tasks both ran.

        The answer has ``flips`` (fixed / regressed / unchanged), ``errored`` and the
        tasks only one run has, ``pass_rate`` and ``mean_score`` of each over the shared
        tasks (the difference with a paired bootstrap interval at ``1 - alpha``),
        ``mcnemar`` (its exact p-value), a ``verdict`` (``outcome``: worse, better,
        no_significant_difference, no_common_tasks; and ``text``), the ``changes`` task
        by task, and the ``differences`` between the runs (model, impl, tasks, phase
        fingerprints, sampling config).
        """
        return self._http.send(RunCalls.compare(run_id, other, alpha))

    def label(
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
        return self._http.send(RunCalls.label(run_id, task, grade, note, trial))

    def labels(self, run_id: str) -> LabelList:
        """The run's labels, each person's latest per task, oldest first."""
        return self._http.send(RunCalls.labels(run_id))

    def agreement(self, run_id: str) -> Agreement:
        """How far the run's grader agrees with people over the labelled tasks: ``n``
        compared, raw agreement, Cohen's kappa with its interval, the confusion matrix
        (rows: people), which way the grader errs, and the run's pass rate or mean
        score ``corrected`` for the grader's measured error (docs/judges.md)."""
        return self._http.send(RunCalls.agreement(run_id))

    def blocked_hosts(self, run_id: str) -> builtins.list[BlockedHost]:
        """Hosts this run's sandboxes were refused, with counts (see ``bw.host_policy``)."""
        return self._http.send(RunCalls.blocked_hosts(run_id))

    def kill(self, run_id: str) -> DeletedRun:
        """DESTROY a run, irreversibly: it is stopped and removed from every listing.

        Rarely what you want: runs are history that keeps leaderboards honest; hide
        one with ``update(visibility="private")`` or stop it with :meth:`halt`.
        """
        return self._http.send(RunCalls.kill(run_id))

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
        ``started_at`` / ``finished_at`` as ``{"gte": ..., "lt": ...}``; anything else
        (``metadata.*`` included: launch metadata is not a tag) is a ``ValueError``.
        ``sort`` is ``-started_at`` (the default), ``started_at``, ``-finished_at`` or
        ``finished_at``.
        """
        return self._http.send(RunCalls.list(filters, status, sort, limit, page_token))

    def artifacts(
        self, run_id: str, type: str | None = None, include_versions: bool = False
    ) -> builtins.list[Artifact]:
        """What each phase produced (``fetch``, ``analyze``, ``setup``, ``atomize``,
        ``model_proxy``, ``snapshot``, ``report``...): the latest of each kind, or
        every version with ``include_versions``."""
        return self._http.send(RunCalls.artifacts(run_id, type, include_versions))

    def artifact(self, run_id: str, art_id: str) -> ArtifactDetail:
        """One artifact's description and its recorded fields."""
        return self._http.send(RunCalls.artifact(run_id, art_id))

    def artifact_content(self, run_id: str, art_id: str) -> bytes:
        """The artifact itself: the scorer's code, the LiteLLM config, a report file."""
        return self._http.send(RunCalls.artifact_content(run_id, art_id))

    def tool_output(self, run_id: str, seq: int) -> str:
        """The whole output of the agent's tool call logged at ``seq`` (its event, an
        ``AgentToolResult`` marked ``truncated``, holds the start)."""
        return self._http.send(RunCalls.tool_output(run_id, seq))

    def report(self, run_id: str) -> str:
        """The run's HTML report (one self-contained page)."""
        return self._http.send(RunCalls.report(run_id))

    def narrate(self, run_id: str, slice: str = "recent") -> Narration:
        """What the run has been doing, in plain words (``slice``: recent or all)."""
        return self._http.send(RunCalls.narrate(run_id, slice))

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
        path = run_path(run_id, "stream")
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
        """One page of the run's event log, oldest first, after ``after_seq``: the same
        events :meth:`stream` yields live. Page on with ``next_after_seq``."""
        return self._http.send(RunCalls.events(run_id, after_seq, types, limit))

    def tasks(
        self,
        run_id: str,
        passed: bool | None = None,
        version: int | None = None,
        limit: int = 100,
        page_token: str | None = None,
        sort: str | None = None,
    ) -> TaskList:
        """One page of slim task rows plus the ``summary`` of the same sweep (over every
        task, not just this page); ``.payload(row_id)`` fetches one row's full
        input/expected/output and each trial's result. ``passed=False`` lists the
        failures.

        ``version`` picks a Materialize invocation (a run that restarted Materialize
        has several, listed in ``.versions``); by default the latest, the one the
        run's summary covers. ``sort`` is ``index`` (the default), ``score``,
        ``duration_ms`` or ``task_id``, with ``-`` first for descending. Rows of a run
        launched with more than one trial a task carry each trial's result in
        ``trials``.
        """
        call = RunCalls.tasks(
            run_id,
            TaskList,
            passed=passed,
            version=version,
            limit=limit,
            page_token=page_token,
            sort=sort,
        )
        return self._http.send(call).bind(lambda row_id: self.payload(run_id, row_id))

    def iter_tasks(
        self,
        run_id: str,
        passed: bool | None = None,
        page_size: int = 100,
        *,
        version: int | None = None,
        sort: str | None = None,
    ) -> Iterator[TaskRow]:
        """Yield every task row of the run, fetching pages as needed."""
        return follow_pages(
            lambda token: self.tasks(
                run_id, passed, version, limit=page_size, page_token=token, sort=sort
            )
        )

    def payload(self, run_id: str, row_id: str) -> TaskPayload:
        """The full input, expected answer and output of one task row."""
        return self._http.send(RunCalls.payload(run_id, row_id))
