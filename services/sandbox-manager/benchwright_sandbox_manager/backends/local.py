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
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

from benchwright_sandbox_manager.ports import BackendError
from benchwright_shared.process import die_with_parent

# Only these reach the sandboxed process; everything else is dropped.
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1"}


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

    def _path(self, sandbox_id: str, relative: str) -> Path:
        base = self._dir(sandbox_id)
        target = (base / relative).resolve()
        if not target.is_relative_to(base):
            raise BackendError(f"path {relative!r} escapes the sandbox")
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

    async def exec_lines(
        self,
        sandbox_id: str,
        argv: Sequence[str],
        *,
        stdin_lines: Sequence[str],
        env: Mapping[str, str],
        timeout_s: float,
    ) -> AsyncIterator[str]:
        workdir = self._dir(sandbox_id)
        command = [sys.executable if argv[0] == "python" else argv[0], *argv[1:]]
        proc = await asyncio.create_subprocess_exec(
            *command,
            cwd=workdir,
            env={**BASE_ENV, "HOME": str(workdir), **env},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its own process group, so a kill takes the whole tree
            preexec_fn=die_with_parent,
            limit=2**24,
        )
        self._procs.setdefault(sandbox_id, set()).add(proc)
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

    async def kill(self, sandbox_id: str) -> None:
        for proc in self._procs.pop(sandbox_id, set()):
            _kill_group(proc)
        await asyncio.to_thread(shutil.rmtree, self._dir(sandbox_id), True)


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
