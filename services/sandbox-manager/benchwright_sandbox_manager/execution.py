"""ExecInSandbox: write files, run one command, return its exit code and output."""

from collections.abc import Awaitable, Callable, Sequence

from benchwright_sandbox_manager.egress import egress_env
from benchwright_sandbox_manager.ports import (
    ExecResult,
    SandboxBackend,
    sandbox_cwd,
    sandbox_path,
)
from benchwright_shared.contracts import ExecInSandbox, SandboxFile

FileContent = Callable[[SandboxFile], Awaitable[bytes]]


async def run_exec(
    backend: SandboxBackend,
    command: ExecInSandbox,
    file_content: FileContent,
    dirs: Sequence[str] = (),
) -> ExecResult:
    """Carry out one ``ExecInSandbox`` and return how it ended.

    Files (and ``cwd``) are checked before any is written against the sandbox's own
    directories ``dirs``, so a bad path writes nothing. An empty ``argv`` only writes
    the files and answers exit code 0. Backend errors propagate: the manager turns
    them into the command's failure.
    """
    for file in command.files:
        sandbox_path(file.path, dirs)
    sandbox_cwd(command.cwd, dirs)
    for file in command.files:
        await backend.put_file(command.sandbox_id, file.path, await file_content(file))
    if not command.argv:
        return ExecResult(0, "", "", False, 0)
    egress = await egress_env(backend, command.sandbox_id, command.egress)
    return await backend.exec(
        command.sandbox_id,
        command.argv,
        stdin=command.stdin.encode() if command.stdin is not None else None,
        env={**egress, **command.env},
        timeout_s=command.timeout_s,
        cwd=command.cwd,
    )
