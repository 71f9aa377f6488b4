"""Process plumbing the local backend shares between its isolated and unisolated modes."""

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from benchwright_sandbox_manager.ports import OUTPUT_LIMIT_BYTES, SandboxLimits
from benchwright_sandbox_manager.runtime.command_limits import MIB, set_limits, tree_size
from benchwright_shared.process import die_with_parent


def kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def unisolated_preexec(limits: SandboxLimits) -> Callable[[], None]:
    """For the opted-out mode: die with the parent, and per-process rlimits.

    No process-count limit: without a user namespace the kernel would count
    every process of the service's user, the service's own threads included.
    """

    def preexec() -> None:
        die_with_parent()
        set_limits(
            {
                "cpu_seconds": limits.cpu_seconds,
                "memory_mb": limits.memory_mb,
                "file_size_mb": limits.file_size_mb,
            }
        )

    return preexec


async def read_head(stream: asyncio.StreamReader, buf: bytearray) -> None:
    """Keep the first ``OUTPUT_LIMIT_BYTES``; drain the rest so the writer never blocks."""
    while chunk := await stream.read(1 << 16):
        room = OUTPUT_LIMIT_BYTES - len(buf)
        if room > 0:
            buf += chunk[:room]


async def read_tail(stream: asyncio.StreamReader, buf: bytearray) -> None:
    """Keep the last ``OUTPUT_LIMIT_BYTES``: where a traceback ends up."""
    while chunk := await stream.read(1 << 16):
        buf += chunk
        if len(buf) > OUTPUT_LIMIT_BYTES:
            del buf[: len(buf) - OUTPUT_LIMIT_BYTES]


async def feed(stream: asyncio.StreamWriter, data: bytes) -> None:
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stream.write(data)
        await stream.drain()
        stream.close()


class DiskWatch:
    """Kills a command once its sandbox's directory holds more than ``limit_mb``.

    ``proc``: the command's process (its group is killed); or, for a command the
    sandbox's exec server runs, ``running`` and ``kill`` say how to tell and do it.
    """

    INTERVAL_S = 0.5

    def __init__(
        self,
        proc: asyncio.subprocess.Process | None,
        workdir: Path,
        limit_mb: int,
        *,
        running: Callable[[], bool] | None = None,
        kill: Callable[[], None] | None = None,
    ) -> None:
        self.limit_mb = limit_mb
        self.breached = False
        if proc is not None:
            running = running or (lambda: proc.returncode is None)
            kill = kill or (lambda: kill_group(proc))
        assert running is not None and kill is not None
        self._task = asyncio.create_task(self._watch(running, kill, workdir, limit_mb * MIB))

    async def _watch(
        self, running: Callable[[], bool], kill: Callable[[], None], workdir: Path, limit: int
    ) -> None:
        while running():
            if await asyncio.to_thread(tree_size, str(workdir)) > limit:
                self.breached = True
                kill()
                return
            await asyncio.sleep(self.INTERVAL_S)

    def stop(self) -> None:
        self._task.cancel()

    @property
    def message(self) -> str:
        return f"the sandbox passed its disk quota of {self.limit_mb} MiB; the command was killed"
