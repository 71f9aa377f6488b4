"""A task sandbox's exec server: one per sandbox, commands forked from it; stdlib only.

bubblewrap starts it once, as ``python -I -S /run/bw/init.py <config json>`` and as
the sandbox's PID 1 (``--as-pid-1``), inside the same namespaces and mounts a
command started by ``sandbox_init`` gets (docs/decisions/0051). It drops to the
sandbox's uid, makes itself undumpable (no process of the sandbox may trace it or
take its descriptors), says ``ready`` on its control socket, then serves.

The control socket is a ``SOCK_SEQPACKET`` pair inherited from the sandbox-manager:
it has no name anywhere, so only the manager can send requests. Each request is one
message, a JSON object (``argv``, ``env``, ``cwd``, ``limits``), with four
descriptors: the reply socket, the command's stdin, stdout and stderr. For each, the
server forks a shepherd and goes back to listening. The shepherd:

1. becomes the subreaper of what it starts, so everything the command leaves behind
   (a double-forked daemon too) comes back to it;
2. starts the command: its own session and process group, stdio from the request,
   no other descriptor, in ``cwd`` (exit 126 when it cannot be entered), under the
   request's rlimits, with exactly the request's environment (127 when the program
   is not found, 126 when it cannot be run: as a shell would). It takes the cwd and
   the rlimits itself and starts the command with ``posix_spawn``, which does not
   copy the shepherd: a second ``fork`` of a Python process cost most of a command's
   start (about 5 ms of 7 here);
3. waits for the command to end, or for the reply socket to close or speak (the
   manager's wall clock ran out, the disk quota was passed, or the manager is gone);
4. kills every process below itself, then writes ``{"exit_code": n}`` (128 + the
   signal that ended it, as bubblewrap reports one) and ends.

When a shepherd ends, the server kills whatever no live shepherd accounts for: a
command (the sandbox's uid, as its shepherd) that killed its shepherd leaves nothing
behind either. The server ends when the control socket closes; as PID 1, everything
in the sandbox goes with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import select
import signal
import socket
import sys
from typing import Any

from benchwright_sandbox_manager.runtime.command_limits import (
    kill_tree,
    parents,
    reap,
    set_limits,
)

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
REQUEST_MAX_BYTES = 1 << 20
FDS_PER_REQUEST = 4


def _drop_privileges(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)  # from root: every capability goes with it


_libc = ctypes.CDLL(None, use_errno=True)  # once: each shepherd inherits it loaded


def _prctl(option: int, value: int) -> None:
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option})")


def _say(fd: int, text: str) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, text.encode(errors="replace") + b"\n")


def _spawn_in_path(argv: list[str], env: dict[str, str], actions: list[Any]) -> int:
    """``posix_spawn`` the program ``argv[0]`` names, looked up in ``env``'s ``PATH`` as
    ``os.execvpe`` does (the first error other than not-found wins); its pid."""
    program = argv[0]
    if os.path.dirname(program):
        candidates = [program]
    else:
        candidates = [os.path.join(folder, program) for folder in os.get_exec_path(env)]
    first: OSError | None = None
    last: OSError = FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    for path in candidates:
        try:
            return os.posix_spawn(path, argv, env, file_actions=actions, setsid=True)
        except (FileNotFoundError, NotADirectoryError) as exc:
            last = exc
        except OSError as exc:
            last = exc
            first = first or exc
    raise first or last


def _start_command(request: dict[str, Any], stdio: list[int]) -> tuple[int | None, int]:
    """Start the command: (its pid, 0); or (None, the exit code a shell would give),
    the reason on the command's stderr."""
    # Only the command's stdio goes across: every descriptor here closes on exec.
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            os.set_inheritable(int(name), False)
    # Out of the way of 0-2, so that no move below lands on a descriptor it still needs.
    sources = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3) for fd in stdio]
    actions = [(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(sources)]
    try:
        cwd = request.get("cwd")
        if cwd:
            try:
                os.chdir(cwd)
            except OSError as exc:
                _say(stdio[2], f"cannot enter {cwd!r}: {exc}")
                return None, 126
        argv = request["argv"]
        try:
            set_limits(request["limits"])  # the command inherits them
            return _spawn_in_path(argv, request["env"], actions), 0
        except FileNotFoundError as exc:
            _say(stdio[2], f"cannot run {argv[0]!r}: {exc}")
            return None, 127
        except (OSError, ValueError, IndexError, KeyError) as exc:
            _say(stdio[2], f"cannot run {argv[0] if argv else ''!r}: {exc}")
            return None, 126
    finally:
        for fd in sources:
            os.close(fd)


def _shepherd(request: dict[str, Any], reply: socket.socket, stdio: list[int]) -> None:
    """In the forked shepherd: run one command to its end, then leave nothing behind."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    child, failed = _start_command(request, stdio)
    for fd in stdio:
        os.close(fd)
    if child is None:
        with contextlib.suppress(OSError):
            reply.sendall(json.dumps({"exit_code": failed}).encode() + b"\n")
        return
    pidfd = os.pidfd_open(child)
    code: int | None = None
    while code is None:
        ready, _, _ = select.select([pidfd, reply.fileno()], [], [])
        if reply.fileno() in ready:
            break  # the manager said stop, or closed its end: kill, report nothing
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            code = code if code >= 0 else 128 - code  # as bubblewrap reports a signal
    kill_tree(os.getpid())
    reap()
    if code is not None:
        with contextlib.suppress(OSError):  # the manager is gone: nobody to tell
            reply.sendall(json.dumps({"exit_code": code}).encode() + b"\n")


def _sweep(shepherds: set[int]) -> None:
    """Kill every process no live shepherd accounts for.

    A command runs as the sandbox's uid, as its shepherd does, so it may kill its
    shepherd; what it started then falls to PID 1, this server. Any process whose
    line of parents reaches the server without passing a live shepherd is such an
    orphan, and goes.
    """
    me = os.getpid()
    tree = parents()
    for pid in tree:
        above = pid
        while above not in shepherds and above != me and above in tree:
            above = tree[above]
        if above == me and pid != me:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _fork_shepherd(message: bytes, fds: list[int], control: socket.socket) -> int:
    shepherd = os.fork()
    if shepherd == 0:
        code = 0
        try:
            control.close()
            reply = socket.socket(fileno=fds[0])
            _shepherd(json.loads(message), reply, fds[1:])
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    for fd in fds:
        os.close(fd)
    return shepherd


def serve(control: socket.socket) -> None:
    """Fork a shepherd per request until the manager closes the control socket; when
    a shepherd ends, sweep what it may have left (``_sweep``)."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # shepherds are reaped by the kernel
    control.sendall(b"ready")
    live: dict[int, int] = {}  # a shepherd's pidfd -> its pid
    while True:
        ready, _, _ = select.select([control.fileno(), *live], [], [])
        ended = [fd for fd in ready if fd in live]
        for fd in ended:
            os.close(fd)
            del live[fd]
        if ended:
            _sweep(set(live.values()))
        if control.fileno() not in ready:
            continue
        try:
            message, fds, _, _ = socket.recv_fds(control, REQUEST_MAX_BYTES, FDS_PER_REQUEST)
        except InterruptedError:
            continue
        if not message:
            return
        if len(fds) != FDS_PER_REQUEST:
            for fd in fds:
                os.close(fd)
            continue
        shepherd = _fork_shepherd(message, fds, control)
        try:
            live[os.pidfd_open(shepherd)] = shepherd
        except ProcessLookupError:  # over and reaped already
            _sweep(set(live.values()))


def main() -> None:
    config: dict[str, Any] = json.loads(sys.argv[1])
    if config.get("uid") is not None:
        _drop_privileges(int(config["uid"]), int(config["gid"]))
    # A change of uid clears the parent-death signal bubblewrap set: set it again, so
    # that the server (and, as PID 1, its sandbox) dies with bubblewrap. Had bubblewrap
    # died in between, the manager's end of the control socket ends the server too.
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    _prctl(PR_SET_DUMPABLE, 0)
    control = socket.socket(fileno=int(config["control_fd"]))
    control.set_inheritable(False)
    os.chdir("/")
    serve(control)


if __name__ == "__main__":
    main()
