"""What bounds a sandboxed command, for the launchers that start it; stdlib only.

Three launchers start every command in a sandbox: ``sandbox_init`` (bubblewrap's),
and the e2b and sandbox0 ones. Each lowers the same rlimits before the command
runs; the two that outlive their command also measure its working directory
against the disk quota and kill whatever it left running. This is that code, once.

A launcher imports this module by its full name, so the service, mypy and the tests
read one source; a sandbox never imports it. ``launcher_source`` (this package)
ships each launcher as one file, with this module's code standing where its import
was: a launcher runs before, or with more rights than, what a sandbox holds, so it
must load nothing from a directory a sandbox can write (where ``bench_task`` lies).
It runs on whatever python3 a sandbox has: nothing newer than Python 3.8.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import time

MIB = 1 << 20
# How many rounds of SIGKILL a tree gets before ``kill_tree`` gives up on it.
KILL_ROUNDS = 1000
KILL_ROUND_S = 0.005


def set_limits(limits: dict[str, int]) -> None:
    """Lower this process's rlimits to a command's (never above what it may use now).

    ``cpu_seconds``: SIGXCPU past it, SIGKILL a second later; ``memory_mb`` of address
    space; ``file_size_mb`` a file; ``max_procs`` processes of the user, where given
    (in a namespace of its own: outside one, the kernel would count every process of
    the user, the service's own threads included); no core files.
    """

    def lower(kind: int, soft: int, hard: int) -> None:
        _, ceiling = resource.getrlimit(kind)
        if ceiling != resource.RLIM_INFINITY:
            soft, hard = min(soft, ceiling), min(hard, ceiling)
        resource.setrlimit(kind, (soft, hard))

    cpu = int(limits["cpu_seconds"])
    lower(resource.RLIMIT_CPU, cpu, cpu + 1)
    fixed = [
        (resource.RLIMIT_AS, int(limits["memory_mb"]) * MIB),
        (resource.RLIMIT_FSIZE, int(limits["file_size_mb"]) * MIB),
        (resource.RLIMIT_CORE, 0),
    ]
    if "max_procs" in limits:
        fixed.append((resource.RLIMIT_NPROC, int(limits["max_procs"])))
    for kind, value in fixed:
        lower(kind, value, value)


def tree_size(top: str) -> int:
    """Bytes a directory's files occupy (blocks, so sparse files count as written)."""
    total = 0
    stack = [top]
    while stack:
        with contextlib.suppress(OSError), os.scandir(stack.pop()) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    else:
                        total += entry.stat(follow_symlinks=False).st_blocks * 512
    return total


def parents() -> dict[int, int]:
    """pid -> parent pid, for every process this one can see."""
    found: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
            found[int(name)] = int(stat.rpartition(")")[2].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return found


def descendants(root: int) -> list[int]:
    """Every process below ``root``: its children, theirs, and so on (zombies too)."""
    children: dict[int, list[int]] = {}
    for pid, parent in parents().items():
        children.setdefault(parent, []).append(pid)
    found: list[int] = []
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def reap(command: subprocess.Popen[bytes] | None = None) -> None:
    """Collect finished children (adopted orphans too) without stealing ``command``'s status."""
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None:
            return
        if command is not None and info.si_pid == command.pid:
            command.poll()
            continue
        with contextlib.suppress(ChildProcessError):
            os.waitpid(info.si_pid, 0)


def kill_tree(root: int, command: subprocess.Popen[bytes] | None = None) -> None:
    """SIGKILL every descendant of ``root`` and reap them, until none is left.

    Run by the tree's subreaper (``root`` itself), orphans come back to it and are
    found on the next round; ``command``'s own status is left for its ``Popen``.
    """
    for _ in range(KILL_ROUNDS):
        pids = descendants(root)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(KILL_ROUND_S)
        reap(command)
