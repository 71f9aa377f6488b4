"""ExecInSandbox: write files, run one command, report its exit code and output."""

import logging
from typing import TYPE_CHECKING

from benchwright_sandbox_manager.egress import egress_env
from benchwright_sandbox_manager.ports import (
    BackendError,
    ExecResult,
    IsolationUnavailableError,
    UnsafePathError,
    safe_relative_path,
)
from benchwright_shared.bus import publish_event
from benchwright_shared.contracts import ExecInSandbox, SandboxExecFinished

if TYPE_CHECKING:
    from benchwright_sandbox_manager.manager import SandboxManager

log = logging.getLogger(__name__)


async def run_exec(manager: "SandboxManager", command: ExecInSandbox) -> None:
    """Carry out one ``ExecInSandbox``; always answers, with the result or a failure.

    Files are checked before any is written, so a bad path writes nothing. An
    empty ``argv`` only writes the files and answers exit code 0.
    """
    ids = (command.command_id, command.run_id)
    sandbox = await manager.live_sandbox(*ids, command.sandbox_id)
    if sandbox is None:
        return
    backend = manager.backend(sandbox.backend)
    try:
        for file in command.files:
            safe_relative_path(file.path)
        for file in command.files:
            data = await manager.file_content(file)
            await backend.put_file(command.sandbox_id, file.path, data)
        if command.argv:
            egress = await egress_env(backend, command.sandbox_id, command.egress)
            result = await backend.exec(
                command.sandbox_id,
                command.argv,
                stdin=command.stdin.encode() if command.stdin is not None else None,
                env={**egress, **command.env},
                timeout_s=command.timeout_s,
            )
        else:
            result = ExecResult(0, "", "", False, 0)
    except UnsafePathError as exc:
        await manager.fail(*ids, "unsafe_path", str(exc))
        return
    except IsolationUnavailableError as exc:
        await manager.fail(*ids, "isolation_unavailable", str(exc))
        return
    except BackendError as exc:
        await manager.fail(*ids, "exec_failed", str(exc))
        return
    except Exception as exc:
        log.exception("exec %s failed", command.command_id)
        await manager.fail(*ids, "exec_failed", f"{type(exc).__name__}: {exc}")
        return
    finished = SandboxExecFinished(
        command_id=command.command_id,
        run_id=command.run_id,
        sandbox_id=command.sandbox_id,
        exit_code=result.exit_code,
        stdout=result.stdout,
        stderr=result.stderr,
        timed_out=result.timed_out,
        duration_ms=result.duration_ms,
    )
    await publish_event(manager.bus(), finished, msg_id=f"{command.command_id}:exec")
