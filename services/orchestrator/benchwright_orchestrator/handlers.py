"""Messages in, application calls out. Thin by design."""

from typing import Any

from faststream.nats import NatsMessage, NatsRouter

from benchwright_orchestrator.runner import Orchestrator
from benchwright_shared import subjects
from benchwright_shared.bus import command_subscriber, event_listener
from benchwright_shared.contracts import (
    Contract,
    GetRunEvents,
    LaunchRun,
    ModelAttached,
    RunEventsPage,
    SandboxCommandFailed,
    SandboxCreated,
    SandboxKilled,
    SandboxTaskResults,
    SandboxTasksFinished,
)

REPLY_TYPES: dict[str, type[Contract]] = {
    cls.subject: cls
    for cls in (
        SandboxCreated,
        SandboxKilled,
        SandboxCommandFailed,
        SandboxTaskResults,
        SandboxTasksFinished,
        ModelAttached,
    )
}


def register(router: NatsRouter, orchestrator: Orchestrator, *, max_deliver: int) -> None:
    @command_subscriber(
        router, subjects.LAUNCH_RUN, service="orchestrator", max_deliver=max_deliver
    )
    async def launch_run(command: LaunchRun) -> None:
        await orchestrator.launch(command)

    @event_listener(router, "bw.evt.>")
    async def command_reply(body: dict[str, Any], msg: NatsMessage) -> None:
        reply_type = REPLY_TYPES.get(msg.raw_message.subject)
        if reply_type is None:
            return
        event = reply_type.model_validate(body)
        orchestrator.replies.deliver(event.command_id, event)  # type: ignore[attr-defined]

    @router.subscriber(subjects.GET_RUN_EVENTS, queue="orchestrator")
    async def run_events(query: GetRunEvents) -> RunEventsPage:
        return await orchestrator.run_events(query)
