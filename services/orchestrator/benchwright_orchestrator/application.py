"""The orchestrator's application: runs in, run logs out."""

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import DomainEventProtocol, MutableOrImmutableAggregate
from eventsourcing.persistence import (
    JSONTranscoder,
    Notification,
    RecordConflictError,
    Recording,
    Transcoding,
)

from benchwright_orchestrator.domain import (
    Agents,
    Artifacts,
    Lifecycle,
    PhaseProgress,
    Run,
    Sandboxes,
    TrialSweep,
)
from benchwright_orchestrator.plan import inherited_phases, replay_selection, selected_indices
from benchwright_orchestrator.ports import RecordedTrial
from benchwright_shared import subjects
from benchwright_shared.contracts import LaunchRun, RunEvent
from benchwright_shared.contracts.run_events import (
    AnalyzeArtifact,
    AtomizeArtifact,
    BenchmarkResolved,
    DatasetTasksArtifact,
    FetchArtifact,
    ModelProxyArtifact,
    SetupArtifact,
    SnapshotCreated,
    SyntheticSubsetCreated,
)
from benchwright_shared.relay import RelayedApplication
from benchwright_shared.run_log import build_run_event, run_event_table

_ENVELOPE_FIELDS = {"originator_id", "originator_version", "timestamp", "originator_topic"}


def to_run_event(domain_event: DomainEventProtocol[Any], *, check: bool = True) -> RunEvent:
    """Translate a Run event into the log entry the world sees.

    The entry is checked against its type's model (``run_log.check_run_event``: a type
    without a model, a field the model lacks or a malformed value raises
    ``RunEventError``). Without ``check`` it is not: reading back a log whose every
    entry was checked when it was saved (``RunsApplication.save``).
    """
    data = {k: v for k, v in domain_event.__dict__.items() if k not in _ENVELOPE_FIELDS}
    run_id, seq = str(domain_event.originator_id), domain_event.originator_version - 1
    ts = domain_event.timestamp  # type: ignore[attr-defined]  # every Run event has one
    name = type(domain_event).__name__
    if check:
        return build_run_event(run_id=run_id, seq=seq, event_type=name, ts=ts, data=data)
    return RunEvent(run_id=run_id, seq=seq, type=name, ts=ts, data=data)


class RunPartAsDict(Transcoding):
    """A part of a ``Run`` (a dataclass of plain JSON) in the run's snapshots."""

    def __init__(self, part: type[Any]) -> None:
        self.type = part
        self.name = f"run_{part.__name__}"

    def encode(self, obj: Any) -> dict[str, Any]:
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}

    def decode(self, data: dict[str, Any]) -> Any:
        return self.type(**data)


class RunsApplication(RelayedApplication):
    """Creates runs and stores their logs."""

    name = "orchestrator"
    is_snapshotting_enabled = True
    # Loading a long run stays cheap: a snapshot every few thousand events.
    snapshotting_intervals = {Run: 2000}

    def register_transcodings(self, transcoder: JSONTranscoder) -> None:
        super().register_transcodings(transcoder)
        for part in (Agents, Artifacts, Lifecycle, PhaseProgress, Sandboxes, TrialSweep):
            transcoder.register(RunPartAsDict(part))

    # Told each saved run's new events once they are stored (the run's trace, when
    # tracing is on: ``traces.RunTraces.observe``).
    observe: Callable[[Run, Sequence[DomainEventProtocol[Any]]], None] | None = None

    def save(
        self,
        *objs: MutableOrImmutableAggregate[Any] | DomainEventProtocol[Any] | None,
        **kwargs: Any,
    ) -> list[Recording[Any]]:
        """Store the objects' new events, each Run event first checked as the log entry
        it becomes (``to_run_event``): what the log's readers cannot read is refused
        (``RunEventError``) before anything is stored."""
        saved = [(obj, list(obj.pending_events)) for obj in objs if isinstance(obj, Run)]
        for _, pending in saved:
            for domain_event in pending:
                to_run_event(domain_event)
        recordings = super().save(*objs, **kwargs)
        if self.observe is not None:
            for run, pending in saved:
                self.observe(run, pending)
        return recordings

    def launch(self, command: LaunchRun, default_backend: str = "local") -> tuple[Run, bool]:
        """Create the run for ``command``; (run, created). A repeat returns the stored run.

        A replay, fork or rescore copies what it inherits from its parent into its own
        log before anything else happens, so the run reads whole on its own. A replay
        whose ``subset_id`` is a newer snapshot than its parent's (a rolling subset
        that grew) records the parent's snapshot as ``replay.from_subset_id`` and
        inherits only the scorer: it fetches and sets up the current rows itself.
        """
        existing = self.find_run(command.run_id)
        if existing is not None:
            return existing, False
        parent = self.find_run(command.parent_run_id) if command.parent_run_id else None
        if parent is not None and parent.account != command.account:
            parent = None
        sut = command.sut.model_dump() if command.sut else None
        judges = [judge.model_dump() for judge in command.judges] if command.judges else None
        trials = command.trials
        replay, impl_id = command.replay, command.impl_id
        harness = command.harness
        events = self._artifact_events(parent.run_id) if parent is not None else []
        if parent is not None:
            sut = sut or parent.sut
            # A replay or fork grades as its parent did unless it names its own judges.
            judges = judges or getattr(parent, "judges", None)
            trials = parent.sweep.trials  # frozen on the parent: replays reproduce its shape
            if command.mode == "replay" and harness is None:
                # A Harbor run's tasks, agent and verifier are its harness: a replay
                # runs the parent's, as it runs a scored run's scorer.
                harness = parent.harness
            if command.mode == "replay" and command.subset_id not in (None, parent.subset_id):
                replay = {**(command.replay or {}), "from_subset_id": parent.subset_id}
                # A registry impl the parent's Setup installed is installed again by ours.
                impl_id = pinned_impl(events)
        run = Run(
            run_id=command.run_id,
            account=command.account,
            mode=command.mode,
            benchmark_id=command.benchmark_id or (parent.benchmark_id if parent else None),
            benchmark_name=command.benchmark_name or (parent.benchmark_name if parent else None),
            subset_id=command.subset_id or (parent.subset_id if parent else None),
            subset_slug=command.subset_slug or (parent.subset_slug if parent else None),
            impl_id=impl_id,
            sut=sut,
            judges=judges,
            limit=command.limit,
            metadata=command.metadata,
            idempotency_key=command.idempotency_key,
            trials=trials,
            request=command.request or (parent.request if parent else None),
            driver=command.driver,
            limits=command.limits,
            parent_run_id=command.parent_run_id,
            replay=replay,
            fork=command.fork,
            compute=command.compute,
            hints=command.hints or None,
            phase_models=command.phase_models or None,
            cache=command.cache,
            harness=harness,
            telemetry=command.telemetry,
            # A replay or fork that names no compute stays where its parent ran.
            backend=(
                parent.backend
                if parent is not None and command.compute is None
                else default_backend
            ),
        )
        if parent is not None:
            inherit(run, parent, events, command)
        try:
            self.save(run)
        except RecordConflictError:
            return self.get_run(command.run_id), False
        return run, True

    def inherit_scorer(self, run: Run) -> None:
        """A replay's second helping: the parent's Atomize artifacts, after its own Attach.

        On a newer snapshot only the code: the parent's post-Atomize sandbox holds
        the parent's rows, so the replay keeps its own Setup snapshot.
        """
        parent = self.find_run(run.parent_run_id) if run.parent_run_id else None
        if parent is None or parent.account != run.account:
            return
        events = self._artifact_events(parent.run_id)
        if run.on_new_snapshot:
            events = [e for e in events if e.type == "AtomizeArtifact"]
        copy_artifacts(run, parent.run_id, events, {"atomize"})

    def copy_cell(self, run: Run, source_id: str, phase: str, types: tuple[str, ...]) -> bool:
        """A cache hit: ``phase``'s artifacts and snapshot as ``source_id`` recorded them."""
        source = self.find_run(source_id)
        needs_snapshot = phase != "analyze"
        if (
            source is None
            or source.deleted
            or (needs_snapshot and phase not in source.artifacts.snapshots)
        ):
            return False
        events = [
            e
            for e in self._artifact_events(source_id)
            if e.type in types or (e.type == "SnapshotCreated" and e.data.get("phase") == phase)
        ]
        if not any(e.type == types[0] for e in events):
            return False
        copy_artifacts(run, source_id, events, {phase}, by_type=True)
        return True

    def recorded_outputs(self, run: Run) -> dict[tuple[int, int], RecordedTrial]:
        """What a rescore scores: each (index, trial) of its parent's latest sweep, its
        output (None where the parent recorded none) and the parent's error type."""
        parent = self.find_run(run.parent_run_id) if run.parent_run_id else None
        if parent is None or parent.account != run.account:
            return {}
        events, _, _ = self.run_events(
            parent.run_id, types=["MaterializeTaskResult"], limit=10_000_000
        )
        latest = max((int(e.data.get("invocation", 1)) for e in events), default=0)
        found: dict[tuple[int, int], RecordedTrial] = {}
        for event in events:
            data = event.data
            if int(data.get("invocation", 1)) != latest:
                continue
            found[(int(data["index"]), int(data.get("trial", 0)))] = RecordedTrial(
                task_id=str(data["task_id"]),
                output=data.get("output"),
                error_type=data.get("error_type"),
            )
        return found

    def _artifact_events(self, run_id: str) -> list[RunEvent]:
        events, _, _ = self.run_events(run_id, types=sorted(INHERITABLE), limit=100_000)
        return events

    def get_run(self, run_id: str) -> Run:
        run: Run = self.repository.get(Run.create_id(run_id))
        return run

    def find_run(self, run_id: str) -> Run | None:
        try:
            return self.get_run(run_id)
        except (AggregateNotFoundError, ValueError):
            return None

    def run_events(
        self,
        run_id: str,
        *,
        after_seq: int | None = None,
        types: Sequence[str] | None = None,
        limit: int = 500,
        task_index: int | None = None,
    ) -> tuple[list[RunEvent], bool, int | None]:
        """A page of a run's log: (events, has_more, the seq it looked through)."""
        try:
            originator_id = Run.create_id(run_id)
        except ValueError:
            return [], False, None
        # seq = version - 1, so "after seq s" is "version greater than s + 1".
        gt = None if after_seq is None else after_seq + 1
        wanted = set(types) if types else None
        page: list[RunEvent] = []
        scanned: int | None = None
        for domain_event in self.repository.event_store.get(originator_id, gt=gt):
            if wanted and type(domain_event).__name__ not in wanted:
                scanned = domain_event.originator_version - 1
                continue
            if task_index is not None and getattr(domain_event, "index", None) != task_index:
                scanned = domain_event.originator_version - 1
                continue
            if len(page) == limit:
                return page, True, scanned
            page.append(to_run_event(domain_event, check=False))
            scanned = page[-1].seq
        return page, False, scanned


class UnfinishedRuns:
    """The runs without ``PipelineFinished``, kept up to date from the notification log.

    The first call reads the whole log (two topics only); each later one reads what
    was recorded since, so an orchestrator can ask every couple of seconds.
    """

    def __init__(self) -> None:
        self.position = 0
        self.unfinished: set[str] = set()

    def catch_up(self, app: Application[Any]) -> set[str]:
        launched = f"{Run.__module__}:Run.RunLaunched"
        finished = f"{Run.__module__}:Run.PipelineFinished"
        while True:
            batch = app.recorder.select_notifications(
                start=self.position,
                limit=1000,
                topics=[launched, finished],
                inclusive_of_start=False,
            )
            if not batch:
                return set(self.unfinished)
            for notification in batch:
                run_id = str(notification.originator_id)
                if notification.topic == launched:
                    self.unfinished.add(run_id)
                else:
                    self.unfinished.discard(run_id)
            self.position = batch[-1].id


# Which phase produced each inheritable event (DatasetTasksArtifact: see ``inherit``).
INHERITABLE = run_event_table(
    {
        BenchmarkResolved: "find",
        FetchArtifact: "fetch",
        AnalyzeArtifact: "analyze",
        SyntheticSubsetCreated: "analyze",
        DatasetTasksArtifact: "fetch",
        SetupArtifact: "setup",
        ModelProxyArtifact: "attach",
        AtomizeArtifact: "atomize",
        SnapshotCreated: "",
    }
)


def inherit(run: Run, parent: Run, events: list[RunEvent], command: LaunchRun) -> None:
    """Copy the parent's artifacts up to the rewind point into ``run``'s log.

    Replay rewinds to Materialize but swaps the model, so it takes everything
    except the model binding; a fork takes the phases before ``from_phase``; a
    rescore takes the dataset and its selection, and sets up its own scorer.
    Only the last record of each kind counts (a restarted Atomize wrote several).
    A replay on a newer snapshot takes only the analysis now (so a fork of it can
    still rewind to Atomize): its Fetch and Setup record the current rows, and
    its selection is made when they are fetched.
    """
    if run.on_new_snapshot:
        analysis = [e for e in events if e.type == "AnalyzeArtifact"]
        copy_artifacts(run, parent.run_id, analysis, set(), by_type=True)
        return
    if command.mode == "replay":
        # Atomize's artifacts follow the new ModelProxyArtifact, as they followed the
        # parent's: a replay of the same model then has the parent's fingerprint.
        phases = {"find", "fetch", "analyze", "setup"}
    elif command.mode == "rescore":
        phases = {"find", "fetch", "analyze"}
    else:
        phases = {"find", *inherited_phases(str((command.fork or {}).get("from_phase")))}
    copy_artifacts(run, parent.run_id, events, phases)
    replay = command.replay or {}
    if command.mode == "replay" and (replay.get("indices") is not None or command.limit):
        narrow(run, replay.get("indices"), command.limit)


def copy_artifacts(
    run: Run, parent_id: str, events: list[RunEvent], phases: set[str], *, by_type: bool = False
) -> None:
    """Re-record the parent's artifacts of ``phases`` on ``run``, marked as inherited.

    With ``by_type`` the caller already picked the events (a cache cell).
    """
    latest: dict[str, RunEvent] = {}
    for event in events:
        phase = INHERITABLE[event.type]
        if event.type == "SnapshotCreated":
            phase = str(event.data.get("phase"))
        elif event.type == "DatasetTasksArtifact" and "AnalyzeArtifact" in latest:
            phase = "analyze"
        if by_type or phase in phases:
            key = f"{event.type}:{event.data.get('phase', '')}"
            latest[key] = event
    for event in sorted(latest.values(), key=lambda e: e.seq):
        data = {k: v for k, v in event.data.items() if k != "inherited_from"}
        if event.type == "BenchmarkResolved":
            continue  # the identity is already on RunLaunched
        method = getattr(run, _APPLY[event.type])
        method(**data, inherited_from=parent_id)


def pinned_impl(events: list[RunEvent]) -> str | None:
    """The registry impl a run's Setup installed, unless an Atomize wrote its scorer since."""
    if any(e.type == "AtomizeArtifact" for e in events):
        return None
    setups = [e for e in events if e.type == "SetupArtifact"]
    found = setups[-1].data.get("impl_id") if setups else None
    return str(found) if found else None


def narrow(run: Run, indices: list[int] | None, limit: int | None) -> None:
    """A replay slice: the parent's selection cut to ``indices`` and ``limit``."""
    total = int(run.dataset.get("total_tasks") or 0)
    selection = replay_selection(run.artifacts.selection or {"kind": "all"}, total, indices, limit)
    run.dataset_tasks(
        benchmark_id=run.benchmark_id or "",
        subset_id=run.subset_id or "",
        total_tasks=total,
        selected_tasks=len(selected_indices(selection, total)),
        content_sha256=str(run.dataset.get("content_sha256") or ""),
        selection=selection,
    )


# Each inheritable artifact -> the Run method that records it again.
_APPLY = run_event_table(
    {
        FetchArtifact: "fetch_done",
        AnalyzeArtifact: "analyze_done",
        SyntheticSubsetCreated: "synthetic_subset",
        DatasetTasksArtifact: "dataset_tasks",
        SetupArtifact: "setup_done",
        ModelProxyArtifact: "model_proxy",
        AtomizeArtifact: "atomize_done",
        SnapshotCreated: "snapshot_created",
    }
)


def translate_notification(app: Application[Any], notification: Notification) -> tuple[str, bytes]:
    """Relay translator: stored Run event -> (subject, RunEvent JSON), checked against
    its type's model on the way out (``to_run_event``)."""
    domain_event = app.mapper.to_domain_event(notification)
    run_event = to_run_event(domain_event)
    return subjects.run_log_subject(run_event.run_id), run_event.model_dump_json().encode()
