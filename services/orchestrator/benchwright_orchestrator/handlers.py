"""Messages in, application calls out. Thin by design."""

from typing import Any

from faststream.nats import NatsRouter

from benchwright_orchestrator.runner import Orchestrator
from benchwright_shared import subjects
from benchwright_shared.bus import command_subscriber, copy_command_listener, event_listener
from benchwright_shared.contracts import (
    Contract,
    DeleteRun,
    GetRunEvents,
    HaltRun,
    LabelTask,
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
    """Subscribers in the order they start: this copy's own first (replies to its
    commands, commands forwarded to it, halts), then the work it shares with other
    copies, so that no shared work is taken before its answers can be heard."""
    copy = orchestrator.copy_id or "orchestrator"
    for reply_type in REPLY_TYPES:
        _listen_for_replies(router, orchestrator, reply_type, copy)

    if orchestrator.copy_id is not None:

        @copy_command_listener(
            router, subjects.orchestrator_copy_subject(copy, "resolve_halt"), owner=copy
        )
        async def resolve_halt_here(command: ResolveRunHalt) -> None:
            await orchestrator.resolve_halt(command)

        @copy_command_listener(
            router, subjects.orchestrator_copy_subject(copy, "update_run"), owner=copy
        )
        async def update_run_here(command: UpdateRun) -> None:
            await orchestrator.update(command)

        @copy_command_listener(
            router, subjects.orchestrator_copy_subject(copy, "delete_run"), owner=copy
        )
        async def delete_run_here(command: DeleteRun) -> None:
            await orchestrator.delete(command)

        @copy_command_listener(
            router, subjects.orchestrator_copy_subject(copy, "label_task"), owner=copy
        )
        async def label_task_here(command: LabelTask) -> None:
            await orchestrator.label(command)

    @copy_command_listener(
        router, subjects.HALT_RUN, owner=copy, max_deliver=max_deliver, own=False
    )
    async def halt_run(command: HaltRun) -> None:
        # Every orchestrator copy hears a halt; the one driving the run acts.
        await orchestrator.halt(command)

    @command_subscriber(
        router, subjects.LAUNCH_RUN, service="orchestrator", max_deliver=max_deliver
    )
    async def launch_run(command: LaunchRun) -> None:
        await orchestrator.launch(command)

    # A command about one run goes to the copy driving it (Orchestrator.route); a
    # copy's own subject takes the ones forwarded to it.
    @command_subscriber(
        router, subjects.RESOLVE_RUN_HALT, service="orchestrator", max_deliver=max_deliver
    )
    async def resolve_halt(command: ResolveRunHalt) -> None:
        await orchestrator.route(command, "resolve_halt", orchestrator.resolve_halt)

    @command_subscriber(
        router, subjects.UPDATE_RUN, service="orchestrator", max_deliver=max_deliver
    )
    async def update_run(command: UpdateRun) -> None:
        await orchestrator.route(command, "update_run", orchestrator.update)

    @command_subscriber(
        router, subjects.DELETE_RUN, service="orchestrator", max_deliver=max_deliver
    )
    async def delete_run(command: DeleteRun) -> None:
        await orchestrator.route(command, "delete_run", orchestrator.delete)

    @command_subscriber(
        router, subjects.LABEL_TASK, service="orchestrator", max_deliver=max_deliver
    )
    async def label_task(command: LabelTask) -> None:
        await orchestrator.route(command, "label_task", orchestrator.label)

    @router.subscriber(subjects.GET_RUN_EVENTS, queue="orchestrator")
    async def run_events(query: GetRunEvents) -> RunEventsPage:
        return await orchestrator.run_events(query)


def _listen_for_replies(
    router: NatsRouter, orchestrator: Orchestrator, reply_type: type[Contract], copy: str
) -> None:
    async def deliver(body: dict[str, Any]) -> None:
        event = reply_type.model_validate(body)
        orchestrator.replies.deliver(event.command_id, event)  # type: ignore[attr-defined]

    event_listener(router, reply_type.subject, owner=copy)(deliver)
