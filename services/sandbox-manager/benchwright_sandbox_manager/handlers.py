"""Sandbox commands in, manager calls out.

Creating a sandbox is work any copy can take (one durable, work-shared
consumer). Commands for an existing sandbox go to the copy that holds it, on
that copy's own subject; the shared subjects still take them for sandboxes
recorded before owners were.
"""

from collections.abc import Callable

from faststream.nats import NatsRouter

from benchwright_sandbox_manager.manager import SERVICE, SandboxManager
from benchwright_shared import subjects
from benchwright_shared.bus import Handler, command_subscriber, copy_command_listener
from benchwright_shared.contracts import (
    CreateSandbox,
    ExecInSandbox,
    KillSandbox,
    RunTasks,
    SnapshotSandbox,
)


def register(router: NatsRouter, manager: SandboxManager, *, max_deliver: int) -> None:
    @command_subscriber(router, subjects.CREATE_SANDBOX, service=SERVICE, max_deliver=max_deliver)
    async def create_sandbox(command: CreateSandbox) -> None:
        await manager.create(command)

    copy = manager.copy_id
    for subject in (subjects.RUN_TASKS, subjects.sandbox_copy_subject(copy, "run_tasks")):
        _run_tasks(router, manager, subject, max_deliver)
    for subject in (subjects.EXEC_IN_SANDBOX, subjects.sandbox_copy_subject(copy, "exec")):
        _exec(router, manager, subject, max_deliver)
    for subject in (subjects.SNAPSHOT_SANDBOX, subjects.sandbox_copy_subject(copy, "snapshot")):
        _snapshot(router, manager, subject, max_deliver)
    for subject in (subjects.KILL_SANDBOX, subjects.sandbox_copy_subject(copy, "kill")):
        _kill(router, manager, subject, max_deliver)


def _subscriber(router: NatsRouter, subject: str, max_deliver: int) -> Callable[[Handler], Handler]:
    """The shared subjects are work-shared and durable; a copy's own die with it."""
    if subject.startswith(subjects.SANDBOX_COPY_PREFIX):
        return copy_command_listener(router, subject)
    return command_subscriber(router, subject, service=SERVICE, max_deliver=max_deliver)


def _run_tasks(router: NatsRouter, manager: SandboxManager, subject: str, max_deliver: int) -> None:
    @_subscriber(router, subject, max_deliver)
    async def run_tasks(command: RunTasks) -> None:
        manager.run_tasks(command)


def _exec(router: NatsRouter, manager: SandboxManager, subject: str, max_deliver: int) -> None:
    @_subscriber(router, subject, max_deliver)
    async def exec_in_sandbox(command: ExecInSandbox) -> None:
        manager.exec(command)


def _snapshot(router: NatsRouter, manager: SandboxManager, subject: str, max_deliver: int) -> None:
    @_subscriber(router, subject, max_deliver)
    async def snapshot_sandbox(command: SnapshotSandbox) -> None:
        await manager.snapshot(command)


def _kill(router: NatsRouter, manager: SandboxManager, subject: str, max_deliver: int) -> None:
    @_subscriber(router, subject, max_deliver)
    async def kill_sandbox(command: KillSandbox) -> None:
        await manager.kill(command)
