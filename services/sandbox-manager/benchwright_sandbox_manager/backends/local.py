"""The ``local`` backend: a subprocess in its own directory with a scrubbed environment.

This is process separation, not isolation: the scorer runs as the same user
and can read what that user can. Namespaces, rlimits and network confinement
(bubblewrap) are a later step; until then treat the local backend as suitable
only for scorers you trust.
"""

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

from benchwright_sandbox_manager.ports import (
    OUTPUT_LIMIT_BYTES,
    BackendError,
    ExecResult,
    UnsafePathError,
    safe_relative_path,
)
from benchwright_sandbox_manager.snapshots import pack, unpack
from benchwright_shared.process import die_with_parent

# Only these reach the sandboxed process; everything else is dropped.
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1"}
# These names in argv[0] mean the sandbox's own interpreter.
PYTHON_NAMES = frozenset({"python", "python3"})
# After a command ends (or is killed), how long its output pipes may take to close.
DRAIN_GRACE_S = 2.0


class LocalBackend:
    name = "local"
    rate_micros_per_s = 0

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self._procs: dict[str, set[asyncio.subprocess.Process]] = {}

    def _dir(self, sandbox_id: str) -> Path:
        path = (self.root / sandbox_id).resolve()
        if path.parent != self.root.resolve():
            raise BackendError(f"bad sandbox id {sandbox_id!r}")
        return path

    def _live_dir(self, sandbox_id: str) -> Path:
        path = self._dir(sandbox_id)
        if not path.is_dir():
            raise BackendError(f"sandbox {sandbox_id} has no working directory")
        return path

    def _path(self, sandbox_id: str, relative: str) -> Path:
        base = self._dir(sandbox_id)
        target = (base / safe_relative_path(relative)).resolve()
        if not target.is_relative_to(base):  # through a symlink, say
            raise UnsafePathError(f"path {relative!r} escapes the sandbox")
        return target

    async def create(self, sandbox_id: str) -> None:
        await asyncio.to_thread(self._dir(sandbox_id).mkdir, parents=True)
        self._procs[sandbox_id] = set()

    async def put_file(self, sandbox_id: str, path: str, data: bytes) -> None:
        target = self._path(sandbox_id, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(target.write_bytes, data)

    async def get_file(self, sandbox_id: str, path: str) -> bytes:
        return await asyncio.to_thread(self._path(sandbox_id, path).read_bytes)

    async def _spawn(
        self, sandbox_id: str, argv: Sequence[str], env: Mapping[str, str], *, stdin: int
    ) -> asyncio.subprocess.Process:
        """Start ``argv`` in the sandbox: its directory, its own process group, a clean env."""
        workdir = self._live_dir(sandbox_id)
        command = [sys.executable if argv[0] in PYTHON_NAMES else argv[0], *argv[1:]]
        proc = await asyncio.create_subprocess_exec(
            *command,
            cwd=workdir,
            env={
                **BASE_ENV,
                "HOME": str(workdir),
                # The runtime (bench_task, bench_runner) sits at the top of the sandbox.
                "PYTHONPATH": str(workdir),
                "PYTHONDONTWRITEBYTECODE": "1",
                **env,
            },
            stdin=stdin,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its own process group, so a kill takes the whole tree
            preexec_fn=die_with_parent,
            limit=2**24,
        )
        self._procs.setdefault(sandbox_id, set()).add(proc)
        return proc

    async def exec_lines(
        self,
        sandbox_id: str,
        argv: Sequence[str],
        *,
        stdin_lines: Sequence[str],
        env: Mapping[str, str],
        timeout_s: float,
    ) -> AsyncIterator[str]:
        proc = await self._spawn(sandbox_id, argv, env, stdin=asyncio.subprocess.PIPE)
        assert proc.stdin and proc.stdout and proc.stderr
        stderr_task = asyncio.create_task(proc.stderr.read())
        try:
            proc.stdin.write("".join(line + "\n" for line in stdin_lines).encode())
            await proc.stdin.drain()
            proc.stdin.close()
            async with asyncio.timeout(timeout_s):
                while line := await proc.stdout.readline():
                    yield line.decode()
                code = await proc.wait()
        except TimeoutError:
            _kill_group(proc)
            raise BackendError(f"command overran its {timeout_s:.0f}s wall clock") from None
        finally:
            if proc.returncode is None:
                _kill_group(proc)
                await proc.wait()
            self._procs.get(sandbox_id, set()).discard(proc)
        stderr = (await stderr_task).decode(errors="replace")
        if code != 0:
            raise BackendError(f"exit code {code}: {stderr[-2000:]}")

    async def exec(
        self,
        sandbox_id: str,
        argv: Sequence[str],
        *,
        stdin: bytes | None,
        env: Mapping[str, str],
        timeout_s: float,
    ) -> ExecResult:
        """Run ``argv`` to its end; keep the head of stdout and the tail of stderr.

        When the command ends, whatever it left running in its process group is
        killed too: nothing outlives the command it belongs to.
        """
        started = time.monotonic()
        try:
            proc = await self._spawn(
                sandbox_id,
                argv,
                env,
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            )
        except OSError as exc:  # no such program, not executable: what a shell calls 127
            return ExecResult(127, "", f"cannot run {argv[0]!r}: {exc}", False, _ms(started))
        assert proc.stdout and proc.stderr
        out, err = bytearray(), bytearray()
        io_tasks = [
            asyncio.create_task(_read_head(proc.stdout, out)),
            asyncio.create_task(_read_tail(proc.stderr, err)),
        ]
        if stdin is not None:
            assert proc.stdin
            io_tasks.append(asyncio.create_task(_feed(proc.stdin, stdin)))
        timed_out = False
        try:
            async with asyncio.timeout(timeout_s):
                await proc.wait()
        except TimeoutError:
            timed_out = True
        finally:
            _kill_group(proc)
            if proc.returncode is None:
                await proc.wait()
            self._procs.get(sandbox_id, set()).discard(proc)
            # A process that left the group may still hold the pipes: stop waiting.
            _, pending = await asyncio.wait(io_tasks, timeout=DRAIN_GRACE_S)
            for task in pending:
                task.cancel()
        assert proc.returncode is not None
        return ExecResult(
            exit_code=proc.returncode,
            stdout=out.decode(errors="replace"),
            stderr=err.decode(errors="replace"),
            timed_out=timed_out,
            duration_ms=_ms(started),
        )

    async def snapshot(self, sandbox_id: str, dest: Path) -> None:
        await asyncio.to_thread(pack, self._live_dir(sandbox_id), dest)

    async def restore(self, sandbox_id: str, archive: Path) -> None:
        await asyncio.to_thread(unpack, archive, self._live_dir(sandbox_id))

    async def kill(self, sandbox_id: str) -> None:
        for proc in self._procs.pop(sandbox_id, set()):
            _kill_group(proc)
        await asyncio.to_thread(shutil.rmtree, self._dir(sandbox_id), True)


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


async def _read_head(stream: asyncio.StreamReader, buf: bytearray) -> None:
    """Keep the first ``OUTPUT_LIMIT_BYTES``; drain the rest so the writer never blocks."""
    while chunk := await stream.read(1 << 16):
        room = OUTPUT_LIMIT_BYTES - len(buf)
        if room > 0:
            buf += chunk[:room]


async def _read_tail(stream: asyncio.StreamReader, buf: bytearray) -> None:
    """Keep the last ``OUTPUT_LIMIT_BYTES``: where a traceback ends up."""
    while chunk := await stream.read(1 << 16):
        buf += chunk
        if len(buf) > OUTPUT_LIMIT_BYTES:
            del buf[: len(buf) - OUTPUT_LIMIT_BYTES]


async def _feed(stream: asyncio.StreamWriter, data: bytes) -> None:
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stream.write(data)
        await stream.drain()
        stream.close()
