"""The orchestrator's application: runs in, run logs out."""

import uuid
from collections.abc import Sequence
from typing import Any

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import Notification, RecordConflictError

from benchwright_orchestrator.domain import Run
from benchwright_shared import subjects
from benchwright_shared.contracts import LaunchRun, RunEvent
from benchwright_shared.relay import RelayedApplication

_ENVELOPE_FIELDS = {"originator_id", "originator_version", "timestamp", "originator_topic"}


def to_run_event(domain_event: DomainEventProtocol[Any]) -> RunEvent:
    """Translate a stored Run event into the log entry the world sees."""
    data = {k: v for k, v in domain_event.__dict__.items() if k not in _ENVELOPE_FIELDS}
    return RunEvent(
        run_id=str(domain_event.originator_id),
        seq=domain_event.originator_version - 1,
        type=type(domain_event).__name__,
        ts=domain_event.timestamp,  # type: ignore[attr-defined]  # every Run event has one
        data=data,
    )


class RunsApplication(RelayedApplication):
    """Creates runs and stores their logs."""

    name = "orchestrator"
    is_snapshotting_enabled = True
    # Loading a long run stays cheap: a snapshot every few thousand events.
    snapshotting_intervals = {Run: 2000}

    def launch(self, command: LaunchRun) -> tuple[Run, bool]:
        """Create the run for ``command``; (run, created). A repeat returns the stored run."""
        run = Run(
            run_id=command.run_id,
            account=command.account,
            mode="pinned",
            benchmark_id=command.benchmark_id,
            benchmark_name=command.benchmark_name,
            subset_id=command.subset_id,
            subset_slug=command.subset_slug,
            impl_id=command.impl_id,
            sut=command.sut.model_dump(),
            limit=command.limit,
            metadata=command.metadata,
            idempotency_key=command.idempotency_key,
            trials=command.trials,
        )
        try:
            self.save(run)
        except RecordConflictError:
            return self.get_run(command.run_id), False
        return run, True

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
    ) -> tuple[list[RunEvent], bool]:
        """A page of a run's log; (events, has_more)."""
        try:
            originator_id = Run.create_id(run_id)
        except ValueError:
            return [], False
        # seq = version - 1, so "after seq s" is "version greater than s + 1".
        gt = None if after_seq is None else after_seq + 1
        wanted = set(types) if types else None
        page: list[RunEvent] = []
        for domain_event in self.repository.event_store.get(originator_id, gt=gt):
            if wanted and type(domain_event).__name__ not in wanted:
                continue
            if len(page) == limit:
                return page, True
            page.append(to_run_event(domain_event))
        return page, False

    def unfinished_run_ids(self) -> list[str]:
        """Runs whose log has no ``PipelineFinished`` (interrupted by a crash)."""
        launched = self._originators_with_topic("RunLaunched")
        finished = self._originators_with_topic("PipelineFinished")
        return sorted(str(i) for i in launched - finished)

    def _originators_with_topic(self, event_name: str) -> set[uuid.UUID]:
        topic = f"{Run.__module__}:Run.{event_name}"
        found: set[uuid.UUID] = set()
        start = 0
        while True:
            batch = self.recorder.select_notifications(
                start=start, limit=1000, topics=[topic], inclusive_of_start=False
            )
            if not batch:
                return found
            found.update(uuid.UUID(str(n.originator_id)) for n in batch)
            start = batch[-1].id


def translate_notification(app: Application[Any], notification: Notification) -> tuple[str, bytes]:
    """Relay translator: stored Run event -> (subject, RunEvent JSON)."""
    domain_event = app.mapper.to_domain_event(notification)
    run_event = to_run_event(domain_event)
    return subjects.run_log_subject(run_event.run_id), run_event.model_dump_json().encode()
