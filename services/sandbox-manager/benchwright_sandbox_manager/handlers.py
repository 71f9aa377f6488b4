"""Sandbox commands in, manager calls out."""

from faststream.nats import NatsRouter

from benchwright_sandbox_manager.manager import SandboxManager
from benchwright_shared import subjects
from benchwright_shared.bus import command_subscriber
from benchwright_shared.contracts import (
    CreateSandbox,
    ExecInSandbox,
    KillSandbox,
    RunTasks,
    SnapshotSandbox,
)

SERVICE = "sandbox-manager"


def register(router: NatsRouter, manager: SandboxManager, *, max_deliver: int) -> None:
    @command_subscriber(router, subjects.CREATE_SANDBOX, service=SERVICE, max_deliver=max_deliver)
    async def create_sandbox(command: CreateSandbox) -> None:
        await manager.create(command)

    @command_subscriber(router, subjects.RUN_TASKS, service=SERVICE, max_deliver=max_deliver)
    async def run_tasks(command: RunTasks) -> None:
        manager.run_tasks(command)

    @command_subscriber(router, subjects.EXEC_IN_SANDBOX, service=SERVICE, max_deliver=max_deliver)
    async def exec_in_sandbox(command: ExecInSandbox) -> None:
        manager.exec(command)

    @command_subscriber(router, subjects.SNAPSHOT_SANDBOX, service=SERVICE, max_deliver=max_deliver)
    async def snapshot_sandbox(command: SnapshotSandbox) -> None:
        await manager.snapshot(command)

    @command_subscriber(router, subjects.KILL_SANDBOX, service=SERVICE, max_deliver=max_deliver)
    async def kill_sandbox(command: KillSandbox) -> None:
        await manager.kill(command)
