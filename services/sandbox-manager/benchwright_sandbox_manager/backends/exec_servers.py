"""Each task sandbox's exec server, from the sandbox-manager's side (docs/decisions/0051).

A command started the old way costs a fresh bubblewrap and a Python init, most of
a tool call's time. The exec server is started once per sandbox, on its first
command, under the same bubblewrap layout (``Bubblewrap.spawn_server``); each
command then is one message on its control socket and one fork inside
(``runtime/exec_server.py`` says what the server and its shepherds do).

The manager keeps the rest of the command's handling: it makes the pipes, reads the
head of stdout and the tail of stderr, feeds stdin, holds the wall clock and watches
the disk quota. To stop a command it writes to the command's reply socket; the
shepherd kills everything the command started and closes it.

Nothing here may hang an exec or leave a process behind: a server that cannot be
started or reached is stopped (its whole PID namespace goes) and ``ServerUnavailable``
sends the command the old way; a server that ends during a command ends that
command (exit -9, said on stderr) and is started afresh by the next one; a shepherd
that does not answer a stop takes its server with it.
"""

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchwright_sandbox_manager.backends.isolation import Bubblewrap
from benchwright_sandbox_manager.backends.processes import (
    DiskWatch,
    feed,
    kill_group,
    ms_since,
    read_head,
    read_tail,
)
from benchwright_sandbox_manager.ports import ExecResult, SandboxLimits

log = logging.getLogger(__name__)

START_TIMEOUT_S = 10.0
SEND_TIMEOUT_S = 5.0
# After the manager asks a shepherd to stop its command: how long it may take.
STOP_TIMEOUT_S = 5.0
# After a command ends (or is killed), how long its output pipes may take to close.
DRAIN_GRACE_S = 2.0
KILLED = -signal.SIGKILL
STOP = b"k"


class ServerUnavailable(Exception):
    """The sandbox's exec server cannot take a command: start it the old way."""


class ExecServer:
    """One sandbox's running server: bubblewrap's process and the control socket."""

    def __init__(self, proc: asyncio.subprocess.Process, control: socket.socket) -> None:
        self.proc = proc
        self.control = control
        self.broken = False

    @property
    def alive(self) -> bool:
        return not self.broken and self.proc.returncode is None

    async def submit(self, message: bytes, fds: Sequence[int]) -> None:
        """Hand one command to the server; ``ServerUnavailable`` when it cannot take it."""
        loop = asyncio.get_running_loop()
        fd = self.control.fileno()
        try:
            async with asyncio.timeout(SEND_TIMEOUT_S):
                while True:
                    try:
                        socket.send_fds(self.control, [message], list(fds))
                        return
                    except BlockingIOError:
                        await _writable(loop, fd)
        except (OSError, TimeoutError) as exc:
            self.broken = True
            raise ServerUnavailable(f"the exec server does not take commands: {exc!r}") from exc

    async def stop(self, bubblewrap: Bubblewrap) -> None:
        """End the server and everything in its sandbox; return once they are gone.

        The server itself is killed, not only bubblewrap: as the sandbox's PID 1 its
        death takes the namespace, and a server that is stopped (SIGSTOP) or lost
        its parent-death signal would not follow bubblewrap's.
        """
        self.broken = True
        pid = bubblewrap.init_pid(self.proc)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        kill_group(self.proc)
        self.control.close()  # a server that still runs reads the end of its commands
        if self.proc.returncode is None:
            await self.proc.wait()
        await bubblewrap.settle(self.proc)


class ExecServers:
    """The exec server of every sandbox that has one, started on a sandbox's first command."""

    def __init__(self, bubblewrap: Bubblewrap) -> None:
        self.bubblewrap = bubblewrap
        self._servers: dict[str, ExecServer] = {}
        self._starting: dict[str, asyncio.Lock] = {}
        self._dropped: set[str] = set()

    async def run(
        self,
        sandbox_id: str,
        *,
        workdir: Path,
        dirs: Mapping[str, Path],
        argv: Sequence[str],
        env: Mapping[str, str],
        stdin: bytes | None,
        cwd: str | None,
        limits: SandboxLimits,
        timeout_s: float,
        quota_dir: Path,
    ) -> ExecResult:
        """Run one command through the sandbox's server (started if need be, once again
        if it has died); ``ServerUnavailable`` when it cannot be."""
        request = json.dumps(
            {"argv": list(argv), "env": dict(env), "cwd": cwd, "limits": limits.for_command()}
        ).encode()
        for attempt in range(2):
            server = await self._server(sandbox_id, workdir, dirs, limits.tmp_mb)
            try:
                return await self._run_on(server, request, stdin, timeout_s, quota_dir, limits)
            except ServerUnavailable:
                await self._discard(sandbox_id, server)
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    async def _server(
        self, sandbox_id: str, workdir: Path, dirs: Mapping[str, Path], tmp_mb: int
    ) -> ExecServer:
        lock = self._starting.setdefault(sandbox_id, asyncio.Lock())
        async with lock:
            if sandbox_id in self._dropped:
                raise ServerUnavailable(f"sandbox {sandbox_id} is gone")
            server = self._servers.get(sandbox_id)
            if server is not None and server.alive:
                return server
            if server is not None:
                log.warning("the exec server of %s ended; starting it again", sandbox_id)
                await self._discard(sandbox_id, server)
            server = await self._start(sandbox_id, workdir, dirs, tmp_mb)
            if sandbox_id in self._dropped:  # killed while it started
                await server.stop(self.bubblewrap)
                raise ServerUnavailable(f"sandbox {sandbox_id} is gone")
            self._servers[sandbox_id] = server
            return server

    async def _start(
        self, sandbox_id: str, workdir: Path, dirs: Mapping[str, Path], tmp_mb: int
    ) -> ExecServer:
        here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            proc = await self.bubblewrap.spawn_server(
                sandbox_id, workdir, tmp_mb=tmp_mb, dirs=dirs, control_fd=there.fileno()
            )
        except OSError as exc:
            here.close()
            raise ServerUnavailable(f"the exec server did not start: {exc}") from exc
        finally:
            there.close()
        here.setblocking(False)
        server = ExecServer(proc, here)
        hello = b""
        with contextlib.suppress(TimeoutError, OSError):
            async with asyncio.timeout(START_TIMEOUT_S):
                hello = await asyncio.get_running_loop().sock_recv(here, 16)
        if hello != b"ready":
            await server.stop(self.bubblewrap)
            raise ServerUnavailable(f"the exec server of {sandbox_id} did not come up")
        return server

    async def _discard(self, sandbox_id: str, server: ExecServer) -> None:
        if self._servers.get(sandbox_id) is server:
            del self._servers[sandbox_id]
        await server.stop(self.bubblewrap)

    async def _run_on(
        self,
        server: ExecServer,
        request: bytes,
        stdin: bytes | None,
        timeout_s: float,
        quota_dir: Path,
        limits: SandboxLimits,
    ) -> ExecResult:
        started = time.monotonic()
        reply_here, reply_there = socket.socketpair()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        in_read, in_write = (
            os.pipe() if stdin is not None else (os.open(os.devnull, os.O_RDONLY), -1)
        )
        theirs = [reply_there.fileno(), in_read, out_write, err_write]
        ours = [out_read, err_read, *([in_write] if stdin is not None else [])]
        try:
            await server.submit(request, theirs)
        except BaseException:
            reply_here.close()
            for fd in ours:
                os.close(fd)
            raise
        finally:
            reply_there.close()
            for fd in theirs[1:]:
                os.close(fd)
        return await _follow(
            server,
            self.bubblewrap,
            reply_here,
            ours,
            stdin,
            timeout_s,
            started,
            quota_dir,
            limits.disk_mb,
        )

    async def drop(self, sandbox_id: str) -> None:
        """The sandbox is killed: end its server (and so all it runs) before returning."""
        self._dropped.add(sandbox_id)
        async with self._starting.setdefault(sandbox_id, asyncio.Lock()):
            server = self._servers.pop(sandbox_id, None)
            if server is not None:
                await server.stop(self.bubblewrap)
        self._starting.pop(sandbox_id, None)

    def forget(self, sandbox_id: str) -> None:
        """A sandbox of this id is created (again): it may have a server."""
        self._dropped.discard(sandbox_id)

    async def close(self) -> None:
        for sandbox_id in list(self._servers):
            await self.drop(sandbox_id)


async def _follow(
    server: ExecServer,
    bubblewrap: Bubblewrap,
    reply: socket.socket,
    ours: list[int],
    stdin: bytes | None,
    timeout_s: float,
    started: float,
    quota_dir: Path,
    disk_mb: int,
) -> ExecResult:
    """Read the command's output and answer until it ends, is stopped, or its server goes."""
    transports: list[asyncio.BaseTransport] = []
    out, err = bytearray(), bytearray()
    try:
        out_reader = await _read_pipe(ours[0], transports)
        err_reader = await _read_pipe(ours[1], transports)
        io_tasks = [
            asyncio.create_task(read_head(out_reader, out)),
            asyncio.create_task(read_tail(err_reader, err)),
        ]
        if stdin is not None:
            writer = await _write_pipe(ours[2], transports)
            io_tasks.append(asyncio.create_task(feed(writer, stdin)))
    except BaseException:
        for transport in transports:
            transport.close()
        reply.close()
        raise
    answers, asks = await asyncio.open_unix_connection(sock=reply)
    running = True

    def stop() -> None:
        with contextlib.suppress(OSError, RuntimeError):
            asks.write(STOP)

    disk = DiskWatch(None, quota_dir, disk_mb, running=lambda: running, kill=stop)
    timed_out, code = False, None
    try:
        with contextlib.suppress(TimeoutError, ConnectionError):
            async with asyncio.timeout(timeout_s):
                code = _exit_code(await answers.readline())
        if code is None and not disk.breached and not answers.at_eof():
            timed_out = True
            stop()
        if code is None:
            try:
                async with asyncio.timeout(STOP_TIMEOUT_S):
                    with contextlib.suppress(ConnectionError):
                        await answers.read()  # the shepherd closes it once all is dead
            except TimeoutError:
                log.warning("a shepherd did not stop its command; ending its exec server")
                await server.stop(bubblewrap)
    finally:
        running = False
        disk.stop()
        asks.close()
        _, pending = await asyncio.wait(io_tasks, timeout=DRAIN_GRACE_S)
        for task in pending:
            task.cancel()
        for transport in transports:
            transport.close()
    stderr = err.decode(errors="replace")
    if disk.breached:
        stderr += f"\n[sandbox] {disk.message}\n"
    elif code is None and not timed_out:
        server.broken = True
        stderr += "\n[sandbox] the sandbox's exec server ended during the command\n"
    return ExecResult(
        exit_code=KILLED if code is None else code,
        stdout=out.decode(errors="replace"),
        stderr=stderr,
        timed_out=timed_out,
        duration_ms=ms_since(started),
    )


async def _writable(loop: asyncio.AbstractEventLoop, fd: int) -> None:
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_writer(fd, wake)
    try:
        await ready
    finally:
        loop.remove_writer(fd)


def _exit_code(line: bytes) -> int | None:
    try:
        answer: Any = json.loads(line)
        code = answer["exit_code"]
    except (ValueError, KeyError, TypeError):
        return None
    return code if isinstance(code, int) else None


async def _read_pipe(fd: int, transports: list[asyncio.BaseTransport]) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**24)
    pipe = os.fdopen(fd, "rb", buffering=0)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    transports.append(transport)
    return reader


async def _write_pipe(fd: int, transports: list[asyncio.BaseTransport]) -> asyncio.StreamWriter:
    loop = asyncio.get_running_loop()
    pipe = os.fdopen(fd, "wb", buffering=0)
    protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader())
    transport, _ = await loop.connect_write_pipe(lambda: protocol, pipe)
    transports.append(transport)
    return asyncio.StreamWriter(transport, protocol, None, loop)
