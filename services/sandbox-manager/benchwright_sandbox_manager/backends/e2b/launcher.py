"""The first program of every command in an e2b sandbox; stdlib only, never imported.

The backend runs it through envd (E2B's agent inside the sandbox) as
``python3 -I -S -c <this file> <config json> <argv...>`` in the sandbox's
working directory. In order, it:

0. enters the command's directory (``cwd``, when given; exit 126 when it cannot);

1. gives the command namespaces of its own where the kernel lets an unprivileged
   user create a user namespace: a ``/tmp`` (and ``/dev/shm``) of ``tmp_mb``, a PID
   namespace whose small init ends with the command (and the kernel then kills
   whatever it left, daemons included) and, where the kernel allows it, a ``/proc``
   showing only that namespace; the command runs as the sandbox user's own uid with
   no capabilities. Without user namespaces the command gets a session of its own,
   this launcher becomes its subreaper, and what the command leaves behind is swept.
   Killed itself, the launcher takes the command's init (or the command) with it;
2. sets the rlimits (CPU seconds, address space, file size, processes, no core files);
3. runs the command with only ``base_env`` and the variables named in ``env`` (their
   values arrive in this process's environment, from envd, never on a command line);
4. kills the command's whole tree at ``timeout_s``, or once the working directory
   and the sandbox's own directories (``disk``) hold more than ``disk_mb``;
5. ends stderr with one line, ``<nonce> <json>``, saying how the command ended.

It runs on whatever python3 the template has: nothing newer than Python 3.8. The
rlimits, the disk measure and the sweep of what is left are ``runtime.command_limits``,
inlined into the source the backend sends (``runtime.launcher_source``).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import sys
import time
from typing import Any, NoReturn

from benchwright_sandbox_manager.runtime.command_limits import (
    MIB,
    kill_tree,
    set_limits,
    tree_size,
)

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
DISK_CHECK_S = 0.5
# These names in argv[0] mean the interpreter running this launcher.
PYTHON_NAMES = ("python", "python3")

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _enter_user_namespace(flags: int, inside_uid: int, inside_gid: int) -> None:
    """Unshare a new user namespace (and ``flags``) where this process is ``inside_uid``."""
    outside_uid, outside_gid = os.geteuid(), os.getegid()
    _check(_libc.unshare(CLONE_NEWUSER | flags), "unshare")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{inside_uid} {outside_uid} 1")
    _write("/proc/self/gid_map", f"{inside_gid} {outside_gid} 1")


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    _check(
        _libc.mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def _isolate(tmp_mb: int) -> tuple[bool, bool]:
    """(own namespaces, own /tmp): enter a user and mount namespace, mount a sized /tmp."""
    try:
        _enter_user_namespace(CLONE_NEWNS, 0, 0)
    except OSError:
        return False, False
    try:
        _mount("none", "/", None, MS_REC | MS_PRIVATE, None)
        options = f"size={tmp_mb * MIB},mode=1777"
        _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, options)
        if os.path.isdir("/dev/shm"):
            with contextlib.suppress(OSError):
                _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, options)
    except OSError:
        return True, False
    return True, True


def _command(argv: list[str], env: dict[str, str], limits: dict[str, int], ids: Any) -> NoReturn:
    """Become the command: back to the user's own uid, in a session of its own, limited."""
    try:
        if ids is not None:
            # A user namespace where this process is the sandbox user again, not
            # root: whatever capabilities it held end at exec.
            _enter_user_namespace(0, *ids)
        os.setsid()
        set_limits(limits)
        # Python ignores these; the command should not inherit that.
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        os.execvpe(argv[0], argv, env)
    except FileNotFoundError as exc:
        print(f"cannot run {argv[0]!r}: {exc}", file=sys.stderr, flush=True)
        os._exit(127)
    except OSError as exc:
        print(f"cannot run {argv[0]!r}: {exc}", file=sys.stderr, flush=True)
        os._exit(126)


def _init(argv: list[str], env: dict[str, str], limits: dict[str, int], ids: Any) -> NoReturn:
    """PID 1 of the command's namespace: start the command, reap, end with it.

    The command is not PID 1 itself, which would ignore every signal it has no
    handler for. When this process ends, the kernel kills what is left.
    """
    # A /proc of this PID namespace only; a sandbox whose /proc has parts covered
    # (a container's, bubblewrap's) refuses that and the command sees the outer one.
    with contextlib.suppress(OSError):
        _check(_libc.unshare(CLONE_NEWNS), "unshare")
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    command = os.fork()
    if command == 0:
        _command(argv, env, limits, ids)
    while True:
        pid, status = os.wait()
        if pid == command:
            os._exit(_exit_code(status))


def _exit_code(status: int) -> int:
    """A wait status as a shell reports it: the exit code, or 128 + the signal."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _kill(child: int, own_pid_ns: bool) -> None:
    # The init of a PID namespace takes the namespace with it; a session leader its group.
    with contextlib.suppress(OSError):
        if own_pid_ns:
            os.kill(child, signal.SIGKILL)
        else:
            os.killpg(child, signal.SIGKILL)


def _watch(child: int, config: dict[str, Any], own_pid_ns: bool, own_tmp: bool) -> tuple[int, str]:
    """Wait for the command: (its wait status, "" or why it was killed)."""
    limits = config["limits"]
    disk = config["disk"]
    deadline = time.monotonic() + float(config["timeout_s"])
    try:
        pidfd: int | None = os.pidfd_open(child)
    except (AttributeError, OSError):
        pidfd = None
    next_check = 0.0
    verdict = ""
    while True:
        pid, status = os.waitpid(child, 0 if verdict else os.WNOHANG)
        if pid:
            if pidfd is not None:
                os.close(pidfd)
            return status, verdict
        now = time.monotonic()
        if now >= deadline:
            verdict = "timeout"
        elif now >= next_check:
            next_check = now + DISK_CHECK_S
            if sum(tree_size(place) for place in disk) > limits["disk_mb"] * MIB:
                verdict = "disk"
            elif not own_tmp and tree_size("/tmp") > limits["tmp_mb"] * MIB:
                verdict = "tmp"
        if verdict:
            _kill(child, own_pid_ns)
            continue
        wait = max(0.0, min(deadline, next_check) - now)
        if pidfd is not None:
            select.select([pidfd], [], [], wait)
        else:
            time.sleep(min(wait, 0.05))


def _end(config: dict[str, Any], code: int, verdict: str, isolated: bool) -> NoReturn:
    ending = {"exit_code": code, "killed_for": verdict, "isolated": isolated}
    sys.stderr.write(f"\n{config['nonce']} {json.dumps(ending)}\n")
    sys.stderr.flush()
    os._exit(code)


def main() -> None:
    config: dict[str, Any] = json.loads(sys.argv[1])
    argv = sys.argv[2:]
    # Absolute: the disk measure, taken here, must not depend on where the command starts.
    config["disk"] = [os.path.abspath(place) for place in config.get("disk") or ["."]]
    if config.get("cwd"):
        try:
            os.chdir(config["cwd"])
        except OSError as exc:
            print(f"cannot enter {config['cwd']!r}: {exc}", file=sys.stderr, flush=True)
            _end(config, 126, "", False)
    if argv[0] in PYTHON_NAMES:
        argv[0] = sys.executable
    env = {**config["base_env"]}
    env.update({name: os.environ[name] for name in config["env"] if name in os.environ})
    limits: dict[str, int] = config["limits"]
    ids = (os.geteuid(), os.getegid())
    namespaced, own_tmp = _isolate(limits["tmp_mb"])
    own_pid_ns = namespaced and _libc.unshare(CLONE_NEWPID) == 0
    if not own_pid_ns:
        with contextlib.suppress(OSError):
            _check(_libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "prctl")
    child = os.fork()
    if child == 0:
        # Killed from outside (envd's SIGKILL reaches this launcher only), the
        # launcher takes its child along, and with it the command's PID namespace.
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if own_pid_ns:
            _init(argv, env, limits, ids)
        _command(argv, env, limits, ids if namespaced else None)
    status, verdict = _watch(child, config, own_pid_ns, own_tmp)
    if not own_pid_ns:
        _kill(child, own_pid_ns)
        kill_tree(os.getpid())  # this launcher is their subreaper: all come back to it
    _end(config, _exit_code(status), verdict, own_pid_ns)


if __name__ == "__main__":
    main()
