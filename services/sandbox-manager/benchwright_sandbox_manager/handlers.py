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
    """This copy's own subjects start first: a sandbox it creates can be commanded at once."""
    copy = manager.copy_id
    _run_tasks(router, manager, subjects.sandbox_copy_subject(copy, "run_tasks"), max_deliver)
    _exec(router, manager, subjects.sandbox_copy_subject(copy, "exec"), max_deliver)
    _snapshot(router, manager, subjects.sandbox_copy_subject(copy, "snapshot"), max_deliver)
    _kill(router, manager, subjects.sandbox_copy_subject(copy, "kill"), max_deliver)

    @command_subscriber(router, subjects.CREATE_SANDBOX, service=SERVICE, max_deliver=max_deliver)
    async def create_sandbox(command: CreateSandbox) -> None:
        await manager.create(command)

    _run_tasks(router, manager, subjects.RUN_TASKS, max_deliver)
    _exec(router, manager, subjects.EXEC_IN_SANDBOX, max_deliver)
    _snapshot(router, manager, subjects.SNAPSHOT_SANDBOX, max_deliver)
    _kill(router, manager, subjects.KILL_SANDBOX, max_deliver)


def _subscriber(router: NatsRouter, subject: str, max_deliver: int) -> Callable[[Handler], Handler]:
    """The shared subjects are work-shared and durable; a copy's own die with it."""
    if subject.startswith(subjects.SANDBOX_COPY_PREFIX):
        owner = subject.split(".")[4]  # bw.cmd.sandbox.copy.<copy id>.<verb>.v1
        return copy_command_listener(router, subject, owner=owner, max_deliver=max_deliver)
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
