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
from benchwright_sandbox_manager.backends.processes import DiskWatch, kill_group, ms_since
from benchwright_sandbox_manager.ports import OUTPUT_LIMIT_BYTES, ExecResult, SandboxLimits

log = logging.getLogger(__name__)

START_TIMEOUT_S = 10.0
SEND_TIMEOUT_S = 5.0
# After the manager asks a shepherd to stop its command: how long it may take.
STOP_TIMEOUT_S = 5.0
# After a command ends (or is killed), how long its output pipes may take to close.
DRAIN_GRACE_S = 2.0
KILLED = -signal.SIGKILL
# A command's answer went missing: how long to watch whether its server is dying.
OUTLIVE_WAIT_S = 0.5
OUTLIVE_POLL_S = 0.01
CHUNK = 1 << 16
# The shepherd's answer: one short JSON line.
ANSWER_LIMIT_BYTES = 4096
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
    """Read the command's output and answer until it ends, is stopped, or its server goes.

    The pipes and the reply socket are read by the event loop's reader callbacks, not
    by tasks over transports: nothing to set up with an ``await``, so a busy loop
    (the embedded platform runs every service on one) adds no round to a command.
    """
    loop = asyncio.get_running_loop()
    reply.setblocking(False)
    out = _Drain(loop, ours[0], OUTPUT_LIMIT_BYTES, keep="head")
    err = _Drain(loop, ours[1], OUTPUT_LIMIT_BYTES, keep="tail")
    answer = _Drain(loop, os.dup(reply.fileno()), ANSWER_LIMIT_BYTES, keep="head")
    feeder = _Feed(loop, ours[2], stdin) if stdin is not None else None
    running = True

    def stop() -> None:
        with contextlib.suppress(OSError):
            reply.send(STOP)

    disk = DiskWatch(None, quota_dir, disk_mb, running=lambda: running, kill=stop)
    timed_out = False
    try:
        await asyncio.wait([answer.done], timeout=timeout_s)
        if not answer.done.done() and not disk.breached:
            timed_out = True
            stop()
        if not answer.done.done():
            await asyncio.wait([answer.done], timeout=STOP_TIMEOUT_S)  # closed once all is dead
            if not answer.done.done():
                log.warning("a shepherd did not stop its command; ending its exec server")
                await server.stop(bubblewrap)
        await asyncio.wait([out.done, err.done], timeout=DRAIN_GRACE_S)
    finally:
        running = False
        disk.stop()
        for drain in (out, err, answer):
            drain.close()
        if feeder is not None:
            feeder.close()
        reply.close()
    code = _exit_code(bytes(answer.data).partition(b"\n")[0])
    stderr = err.data.decode(errors="replace")
    if disk.breached:
        stderr += f"\n[sandbox] {disk.message}\n"
    elif code is None and not timed_out:
        if await _outlives(server, bubblewrap):
            # Its shepherd alone failed (it kills what it ran before it goes): the
            # server and the sandbox's other commands go on.
            stderr += "\n[sandbox] the command's shepherd ended without its exit code\n"
        else:
            server.broken = True
            stderr += "\n[sandbox] the sandbox's exec server ended during the command\n"
    return ExecResult(
        exit_code=KILLED if code is None else code,
        stdout=out.data.decode(errors="replace"),
        stderr=stderr,
        timed_out=timed_out,
        duration_ms=ms_since(started),
    )


async def _outlives(server: ExecServer, bubblewrap: Bubblewrap) -> bool:
    """Whether the server still runs a moment after a command's answer went missing: a
    server killed as its sandbox's PID 1 takes a moment to die (the kernel ends every
    other process of the namespace first), so a first look could see it alive."""
    for _ in range(int(OUTLIVE_WAIT_S / OUTLIVE_POLL_S)):
        if not (server.alive and bubblewrap.init_alive(server.proc)):
            return False
        await asyncio.sleep(OUTLIVE_POLL_S)
    return server.alive and bubblewrap.init_alive(server.proc)


class _Drain:
    """Reads one descriptor to its end from the loop's reader callback; keeps the first
    (``head``) or last (``tail``) ``limit`` bytes and drains the rest, so the writer
    never blocks. ``done`` is set at the end (or on ``close``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, limit: int, keep: str) -> None:
        self.loop = loop
        self.fd = fd
        self.limit = limit
        self.tail = keep == "tail"
        self.data = bytearray()
        self.done: asyncio.Future[None] = loop.create_future()
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._read)

    def _read(self) -> None:
        try:
            chunk = os.read(self.fd, CHUNK)
        except BlockingIOError:
            return
        except OSError:  # a reset reply socket: its shepherd is gone
            chunk = b""
        if not chunk:
            self.close()
        elif self.tail:
            self.data += chunk
            if len(self.data) > self.limit:
                del self.data[: len(self.data) - self.limit]
        elif (room := self.limit - len(self.data)) > 0:
            self.data += chunk[:room]

    def close(self) -> None:
        if self.fd >= 0:
            self.loop.remove_reader(self.fd)
            os.close(self.fd)
            self.fd = -1
        if not self.done.done():
            self.done.set_result(None)


class _Feed:
    """Writes ``data`` to the command's stdin as it takes it, then closes it."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, data: bytes) -> None:
        self.loop = loop
        self.fd = fd
        self.rest = memoryview(data)
        os.set_blocking(fd, False)
        self._write()
        if self.fd >= 0:
            loop.add_writer(fd, self._write)

    def _write(self) -> None:
        try:
            while self.rest:
                self.rest = self.rest[os.write(self.fd, self.rest[:CHUNK]) :]
        except BlockingIOError:
            return
        except OSError:  # the command closed its stdin, or ended
            pass
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            self.loop.remove_writer(self.fd)
            os.close(self.fd)
            self.fd = -1


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
