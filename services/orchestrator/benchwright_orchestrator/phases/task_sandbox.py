"""The agent loop's ``TaskSandbox`` port over one of the run's sandboxes.

Every call is one ``ExecInSandbox`` to the sandbox-manager that holds the sandbox.
Files are read and written by commands in the sandbox (``cat``), not by the
manager's file placement: the agent may write wherever the sandbox's user may
(``/tmp``, ``/app``, its home), and a mistake (no such file, a directory, no
permission) comes back as the ``OSError`` the tools turn into a message the model
sees. Anything else (the sandbox lost, the manager silent) propagates and ends the
attempt as the platform's failure.
"""

import errno
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from benchwright_orchestrator.agents.ports import APP_DIR, ExecResult
from benchwright_orchestrator.ports import Workspace

__all__ = ["MAX_READ_BYTES", "WorkspaceTaskSandbox"]

# An exec's output comes back cut at 64 KiB: a file read whole must fit below that,
# or an edit would write back a truncated file.
MAX_READ_BYTES = 60_000
TOO_LARGE_EXIT = 27
READ_SCRIPT = (
    's=$(stat -c %s -- "$1") || exit 1; '
    f'if [ "$s" -gt {MAX_READ_BYTES} ]; then echo "$s" >&2; exit {TOO_LARGE_EXIT}; fi; '
    'exec cat -- "$1"'
)
WRITE_SCRIPT = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
# How long reading or writing one file may take.
FILE_TIMEOUT_S = 30.0
# What ``cat``/``stat``/``mkdir`` say, and the error each stands for.
_ERRORS = (
    ("No such file or directory", errno.ENOENT),
    ("Is a directory", errno.EISDIR),
    ("Not a directory", errno.ENOTDIR),
    ("Permission denied", errno.EACCES),
    ("Read-only file system", errno.EROFS),
    ("No space left on device", errno.ENOSPC),
)


def _os_error(stderr: str, path: str) -> OSError:
    for text, code in _ERRORS:
        if text in stderr:
            return OSError(code, text, path)
    return OSError(errno.EIO, stderr.strip()[-300:] or "the command failed", path)


@dataclass
class WorkspaceTaskSandbox:
    """One task sandbox, with the environment and network the task's plan gives."""

    work: Workspace
    sandbox_id: str
    env: Mapping[str, str] = field(default_factory=dict)
    network: bool = False

    async def exec(
        self,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        cwd: str = APP_DIR,
        timeout_s: float | None = None,
    ) -> ExecResult:
        done = await self.work.exec_in(
            self.sandbox_id,
            list(argv),
            stdin=stdin,
            cwd=cwd,
            env=dict(self.env),
            timeout_s=timeout_s or 600.0,
            network=self.network,
        )
        if done.timed_out:
            raise TimeoutError(f"{argv[0]} did not finish within {timeout_s} s")
        return ExecResult(done.exit_code, done.stdout, done.stderr, done.duration_ms)

    async def write(self, path: str, content: str) -> None:
        done = await self.exec(
            ["sh", "-c", WRITE_SCRIPT, "sh", path], stdin=content, timeout_s=FILE_TIMEOUT_S
        )
        if done.exit_code != 0:
            raise _os_error(done.stderr, path)

    async def read(self, path: str) -> str:
        done = await self.exec(["sh", "-c", READ_SCRIPT, "sh", path], timeout_s=FILE_TIMEOUT_S)
        if done.exit_code == TOO_LARGE_EXIT:
            raise OSError(
                errno.EFBIG,
                f"{done.stderr.strip()} bytes: too large to read whole; use the shell "
                "(head, sed -n, grep) to read parts of it",
                path,
            )
        if done.exit_code != 0:
            raise _os_error(done.stderr, path)
        return done.stdout
