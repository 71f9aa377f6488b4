"""What a sandbox backend must do. Every backend passes the same conformance suite."""

import posixpath
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol, runtime_checkable

from benchwright_shared.contracts import EnvironmentBuild
from benchwright_shared.settings import Settings

# ``ExecInSandbox`` reports at most this much of each of stdout and stderr.
OUTPUT_LIMIT_BYTES = 64 * 1024

# A sandbox's own absolute directories (``CreateSandbox.dirs``): at most this many,
# and none in, at or over a place the system or a backend keeps for itself (``/lib*``
# is any top-level name starting with ``lib``).
MAX_SANDBOX_DIRS = 16
SYSTEM_PLACES = (
    "/usr",
    "/bin",
    "/sbin",
    "/etc",
    "/proc",
    "/sys",
    "/dev",
    "/tmp",
    "/run",
    "/opt/benchwright",
    "/work",
)


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

    def for_command(self) -> dict[str, int]:
        """The rlimits a launcher lowers before the command (``command_limits.set_limits``)."""
        return {
            "cpu_seconds": self.cpu_seconds,
            "memory_mb": self.memory_mb,
            "file_size_mb": self.file_size_mb,
            "max_procs": self.max_procs,
        }


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


def is_within(path: str, place: str) -> bool:
    """Whether the absolute ``path`` is ``place`` or lies below it."""
    return path == place or path.startswith(place.rstrip("/") + "/")


def _plain_absolute(path: str) -> bool:
    return (
        path.startswith("/")
        and not path.startswith("//")
        and posixpath.normpath(path) == path
        and not any(ch in path for ch in "\\\0")
        and all(ord(ch) >= 32 for ch in path)
    )


def sandbox_dirs(dirs: Sequence[str]) -> tuple[str, ...]:
    """``dirs`` checked as a sandbox's own absolute directories, or ``UnsafePathError``
    naming the first that is not: absolute and normalised (no ``..``, no trailing
    slash), not ``/``, apart from the system's places and from each other."""
    if len(dirs) > MAX_SANDBOX_DIRS:
        raise UnsafePathError(
            f"a sandbox presents at most {MAX_SANDBOX_DIRS} directories, not {len(dirs)}"
        )
    checked: list[str] = []
    for place in dirs:
        if not _plain_absolute(place) or place == "/":
            raise UnsafePathError(
                f"directory {place!r} is not a plain absolute path below / "
                "(normalised, no '..', no trailing slash)"
            )
        top = place.split("/")[1]
        taken = next(
            (p for p in SYSTEM_PLACES if is_within(place, p) or is_within(p, place)),
            f"/{top}" if top.startswith("lib") else None,
        )
        if taken is not None:
            raise UnsafePathError(
                f"directory {place!r} would meet {taken}, which the system or the sandbox "
                "keeps for itself"
            )
        for other in checked:
            if is_within(place, other) or is_within(other, place):
                raise UnsafePathError(
                    f"directory {place!r} overlaps {other!r}: a sandbox's directories lie apart"
                )
        checked.append(place)
    return tuple(checked)


def sandbox_path(path: str, dirs: Sequence[str]) -> str:
    """A file's path as a sandbox takes it, or ``UnsafePathError``: a plain relative
    path (``safe_relative_path``), or an absolute one strictly inside one of ``dirs``."""
    if not path.startswith("/"):
        return safe_relative_path(path)
    if not _plain_absolute(path):
        raise UnsafePathError(
            f"file path {path!r} escapes the sandbox: '..' and unnormalised paths are refused"
        )
    if not any(is_within(path, place) and path != place for place in dirs):
        where = ", ".join(dirs) if dirs else "none"
        raise UnsafePathError(
            f"file path {path!r} escapes the sandbox: an absolute path must lie in one of "
            f"the sandbox's directories ({where})"
        )
    return path


def split_path(path: str, dirs: Sequence[str]) -> tuple[str, str]:
    """An absolute ``path`` checked by ``sandbox_path``: (its directory, the rest);
    ``rest`` is "" when ``path`` is the directory itself."""
    for place in dirs:
        if is_within(path, place):
            return place, path[len(place) :].lstrip("/")
    raise UnsafePathError(f"path {path!r} is in none of the sandbox's directories")


def sandbox_cwd(cwd: str | None, dirs: Sequence[str]) -> str | None:
    """Where a command starts, checked: None for the working directory (None or "."),
    a plain relative path below it, or one of ``dirs`` or below one; else
    ``UnsafePathError``."""
    if cwd is None or cwd == ".":
        return None
    if not cwd.startswith("/"):
        return safe_relative_path(cwd)
    if _plain_absolute(cwd) and any(is_within(cwd, place) for place in dirs):
        return cwd
    where = ", ".join(dirs) if dirs else "none"
    raise UnsafePathError(
        f"working directory {cwd!r} is refused: a command starts in the sandbox's working "
        f"directory ('.'), below it, or in one of the sandbox's directories ({where})"
    )


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


class ImageBuildError(BackendError):
    """A task's environment did not build: the message names the task, the failed
    step and the build log's tail."""


@runtime_checkable
class ImageBuilder(Protocol):
    """A backend that builds a task's environment into an image of its own (e2b)."""

    async def build_image(self, build: EnvironmentBuild) -> str:
        """The image ``create(image=...)`` starts from: built once per ``build.digest``
        (a concurrent ask for the same one waits for that build), within
        ``build.timeout_s``. Raises ``ImageBuildError`` when it does not build,
        ``BackendError`` when the builder cannot be reached."""
        ...


class SandboxBackend(Protocol):
    name: str
    # What a second of one sandbox costs on this backend, in micro-dollars.
    rate_micros_per_s: int
    # Whether ``create`` starts a sandbox from a container image it is given.
    runs_images: bool

    @property
    def isolation(self) -> str:
        """What keeps a sandbox's code in: "bubblewrap", "none" (an operator opted
        out), or the backend's own kind; recorded on every ``SandboxCreated``."""

    async def start(self) -> None:
        """Get ready: probe what isolation needs. Never raises; ``create`` refuses instead."""

    async def close(self) -> None:
        """Release what the backend holds (forwarders, scratch space); sandboxes stay."""

    async def create(
        self, sandbox_id: str, *, dirs: Sequence[str] = (), image: str | None = None
    ) -> None:
        """Provision an empty sandbox; with ``dirs`` (checked by ``sandbox_dirs``), one
        that also presents those absolute directories, empty, writable and its user's;
        with ``image``, started from that container image (``runs_images`` backends
        only: the manager refuses it for the others before asking), or from the one
        its own ``build_image`` returned (an ``ImageBuilder``).

        Raises ``IsolationUnavailableError`` when the backend cannot isolate it (or
        cannot present ``dirs``), ``UnsafePathError`` for a directory it cannot place.
        """

    async def put_file(self, sandbox_id: str, path: str, data: bytes) -> None:
        """Write a file at ``path``: relative to the sandbox's working directory, or
        absolute inside one of its ``dirs``.

        Raises ``UnsafePathError`` for any other path (``sandbox_path``), or one that
        leads out through a symlink.
        """

    async def get_file(self, sandbox_id: str, path: str) -> bytes:
        """Read a file named as ``put_file`` names it."""

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
        cwd: str | None = None,
    ) -> ExecResult:
        """Run ``argv`` to its end and report exit code and (cut) output.

        A command that overruns ``timeout_s`` has its whole process tree killed
        and comes back with ``timed_out``; the sandbox stays usable. Nothing the
        command started outlives it. ``cwd`` (checked by ``sandbox_cwd``) is where it
        starts; one that cannot be entered ends the command with exit code 126.
        """

    async def snapshot(self, sandbox_id: str, dest: Path) -> None:
        """Write the sandbox's working directory to ``dest`` as a deterministic archive
        (not its ``dirs``: the manager refuses to snapshot a sandbox that has them)."""

    async def restore(self, sandbox_id: str, archive: Path) -> None:
        """Unpack an archive written by ``snapshot`` into a freshly created sandbox."""

    async def kill(self, sandbox_id: str) -> None:
        """Stop everything in the sandbox and remove it."""
