"""What a sandbox backend must do. Every backend passes the same conformance suite."""

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol

from benchwright_shared.settings import Settings

# ``ExecInSandbox`` reports at most this much of each of stdout and stderr.
OUTPUT_LIMIT_BYTES = 64 * 1024


class BackendError(Exception):
    """A backend could not do what was asked."""


class UnsafePathError(BackendError):
    """A file path that would land outside the sandbox's working directory."""


class IsolationUnavailableError(BackendError):
    """The backend cannot isolate untrusted code here, and nobody opted out of isolation."""


@dataclass(frozen=True)
class SandboxLimits:
    """What one command in a sandbox may use.

    CPU seconds, address space and file size bound each process; ``max_procs``
    bounds the processes (threads included) of one sandbox; ``disk_mb`` bounds
    what the sandbox's directory holds; ``tmp_mb`` sizes its in-memory ``/tmp``.
    """

    cpu_seconds: int
    memory_mb: int
    file_size_mb: int
    max_procs: int
    disk_mb: int
    tmp_mb: int

    @classmethod
    def from_settings(cls, settings: Settings) -> "SandboxLimits":
        return cls(
            cpu_seconds=settings.sandbox_cpu_seconds,
            memory_mb=settings.sandbox_memory_mb,
            file_size_mb=settings.sandbox_file_size_mb,
            max_procs=settings.sandbox_max_procs,
            disk_mb=settings.sandbox_disk_mb,
            tmp_mb=settings.sandbox_tmp_mb,
        )


def safe_relative_path(path: str) -> str:
    """``path`` as a plain relative POSIX path, or ``UnsafePathError``.

    Absolute paths and any ``..`` component are refused outright, even when
    they would resolve back inside: a scorer's files name places in its own
    tree, never relative to where the sandbox happens to live.
    """
    if not path or "\0" in path or "\\" in path:
        raise UnsafePathError(f"file path {path!r} is not a plain relative path")
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts:
        raise UnsafePathError(
            f"file path {path!r} escapes the sandbox: absolute paths and '..' are refused"
        )
    if pure.parts in ((), (".",)):
        raise UnsafePathError(f"file path {path!r} names no file")
    return pure.as_posix()


@dataclass(frozen=True)
class ExecResult:
    """How one command in a sandbox ended; output already cut to the limit.

    A command killed by signal N reports ``-N`` or, when a sandbox's init saw
    it die, ``128 + N`` as a shell would.
    """

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool
    duration_ms: int


class SandboxBackend(Protocol):
    name: str
    # What a second of one sandbox costs on this backend, in micro-dollars.
    rate_micros_per_s: int

    @property
    def isolation(self) -> str:
        """What keeps a sandbox's code in: "bubblewrap", "none" (an operator opted
        out), or the backend's own kind; recorded on every ``SandboxCreated``."""

    async def start(self) -> None:
        """Get ready: probe what isolation needs. Never raises; ``create`` refuses instead."""

    async def close(self) -> None:
        """Release what the backend holds (forwarders, scratch space); sandboxes stay."""

    async def create(self, sandbox_id: str) -> None:
        """Provision an empty sandbox.

        Raises ``IsolationUnavailableError`` when the backend cannot isolate it.
        """

    async def put_file(self, sandbox_id: str, path: str, data: bytes) -> None:
        """Write a file at ``path`` relative to the sandbox's working directory.

        Raises ``UnsafePathError`` for a path that is absolute or contains ``..``.
        """

    async def get_file(self, sandbox_id: str, path: str) -> bytes:
        """Read a file relative to the sandbox's working directory."""

    def inside_path(self, sandbox_id: str, path: str) -> str:
        """The absolute path a command in the sandbox sees for ``path`` (relative to
        the working directory): what an environment variable naming a file holds."""

    def exec_lines(
        self,
        sandbox_id: str,
        argv: Sequence[str],
        *,
        stdin_lines: Sequence[str],
        env: Mapping[str, str],
        timeout_s: float,
        limits: SandboxLimits | None = None,
    ) -> AsyncIterator[str]:
        """Run ``argv`` in the sandbox, feeding lines on stdin, yielding stdout lines.

        Raises ``BackendError`` when the command exits non-zero, overruns
        ``timeout_s`` or passes a limit (the whole process tree is killed first).
        ``limits`` default to the backend's own (from settings).
        """

    async def exec(
        self,
        sandbox_id: str,
        argv: Sequence[str],
        *,
        stdin: bytes | None,
        env: Mapping[str, str],
        timeout_s: float,
        limits: SandboxLimits | None = None,
    ) -> ExecResult:
        """Run ``argv`` to its end and report exit code and (cut) output.

        A command that overruns ``timeout_s`` has its whole process tree killed
        and comes back with ``timed_out``; the sandbox stays usable. Nothing the
        command started outlives it.
        """

    async def snapshot(self, sandbox_id: str, dest: Path) -> None:
        """Write the sandbox's filesystem to ``dest`` as a deterministic archive."""

    async def restore(self, sandbox_id: str, archive: Path) -> None:
        """Unpack an archive written by ``snapshot`` into a freshly created sandbox."""

    async def kill(self, sandbox_id: str) -> None:
        """Stop everything in the sandbox and remove it."""
