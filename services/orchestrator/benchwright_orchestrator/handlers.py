"""Messages in, application calls out. Thin by design."""

from typing import Any

from faststream import AckPolicy
from faststream.nats import JStream, NatsRouter
from nats.js.api import DeliverPolicy

from benchwright_orchestrator.runner import Orchestrator
from benchwright_shared import subjects
from benchwright_shared.bus import command_subscriber, event_listener
from benchwright_shared.contracts import (
    Contract,
    DeleteRun,
    GetRunEvents,
    HaltRun,
    LaunchRun,
    ModelAttached,
    ResolveRunHalt,
    RunEventsPage,
    SandboxCommandFailed,
    SandboxCreated,
    SandboxExecFinished,
    SandboxKilled,
    SandboxSnapshotted,
    UpdateRun,
)

# The events that answer the orchestrator's commands; it listens to these only.
# A sweep's results are not among them: the pipeline reads those from the
# run's own sweep subject (adapters/feed.py).
REPLY_TYPES: tuple[type[Contract], ...] = (
    SandboxCreated,
    SandboxKilled,
    SandboxCommandFailed,
    SandboxExecFinished,
    SandboxSnapshotted,
    ModelAttached,
)


def register(router: NatsRouter, orchestrator: Orchestrator, *, max_deliver: int) -> None:
    @command_subscriber(
        router, subjects.LAUNCH_RUN, service="orchestrator", max_deliver=max_deliver
    )
    async def launch_run(command: LaunchRun) -> None:
        await orchestrator.launch(command)

    @router.subscriber(
        subjects.HALT_RUN,
        stream=JStream(subjects.COMMANDS_STREAM, declare=False),
        deliver_policy=DeliverPolicy.NEW,
        ack_policy=AckPolicy.ACK_FIRST,
    )
    async def halt_run(command: HaltRun) -> None:
        # Every orchestrator process hears a halt; the one driving the run acts.
        await orchestrator.halt(command)

    @command_subscriber(
        router, subjects.RESOLVE_RUN_HALT, service="orchestrator", max_deliver=max_deliver
    )
    async def resolve_halt(command: ResolveRunHalt) -> None:
        await orchestrator.resolve_halt(command)

    @command_subscriber(
        router, subjects.UPDATE_RUN, service="orchestrator", max_deliver=max_deliver
    )
    async def update_run(command: UpdateRun) -> None:
        await orchestrator.update(command)

    @command_subscriber(
        router, subjects.DELETE_RUN, service="orchestrator", max_deliver=max_deliver
    )
    async def delete_run(command: DeleteRun) -> None:
        await orchestrator.delete(command)

    for reply_type in REPLY_TYPES:
        _listen_for_replies(router, orchestrator, reply_type)

    @router.subscriber(subjects.GET_RUN_EVENTS, queue="orchestrator")
    async def run_events(query: GetRunEvents) -> RunEventsPage:
        return await orchestrator.run_events(query)


def _listen_for_replies(
    router: NatsRouter, orchestrator: Orchestrator, reply_type: type[Contract]
) -> None:
    async def deliver(body: dict[str, Any]) -> None:
        event = reply_type.model_validate(body)
        orchestrator.replies.deliver(event.command_id, event)  # type: ignore[attr-defined]

    event_listener(router, reply_type.subject)(deliver)
