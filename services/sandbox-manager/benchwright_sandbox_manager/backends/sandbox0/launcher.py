"""What every sandbox0 exec runs inside the pod; stdlib only, Python 3.8 or later.

The exec's command line is constant (``BOOT`` under a clean ``env -i``): this
source, a JSON config and any payload all arrive on the exec's stdin, each
preceded by its length, so nothing a command is given (environment values,
proxy keys) lands on an exec URL or in the cluster's audit log, and stdin has
a known end although ``v4.channel.k8s.io`` cannot close it.

``run`` (a command) does, in order: read the command's stdin whole; become a
child subreaper, so that whatever the command starts stays a descendant of this
process even after a double fork and ``setsid``; start the command in its own
session with its rlimits, in ``cwd``; then wait for it, killing every descendant
at the wall clock (``timeout_s``) or when the working directory and the sandbox's
own directories (``disk``) pass its disk quota.
When the command ends, whatever it left running is killed too. It exits with
the command's exit code (128 + N for signal N); a kill for a timeout or the
quota leaves a last ``[sandbox]`` line on stderr.

``put``/``get`` move one file as a one-member tar (like ``kubectl cp``);
``pack``/``unpack`` a gzipped tar of the working directory; ``reap`` kills the
process tree of a ``run`` whose exec stream went away (found by its token).
Every path must resolve inside ``root`` (exit ``EXIT_UNSAFE``): the working
directory, or the sandbox's own directory a file lies in.

The rlimits, the disk measure and the kill of a tree are ``runtime.command_limits``,
inlined into the source the pod gets (``runtime.launcher_source``).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from typing import IO, Any

from benchwright_sandbox_manager.runtime.command_limits import (
    MIB,
    descendants,
    kill_tree,
    parents,
    reap,
    set_limits,
    tree_size,
)

# Reads the launcher's source from stdin; ``python3 -I -S -c BOOT <tag> <token>``.
BOOT = "import sys;r=sys.stdin.buffer;exec(compile(r.read(int(r.readline())),'bw-launcher','exec'))"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
EXIT_BAD_REQUEST = 64
EXIT_UNSAFE = 65
EXIT_MISSING = 66
EXIT_KILLED = 128 + signal.SIGKILL
TIMEOUT_NOTE = "[sandbox] timed out after"
DISK_NOTE = "[sandbox] the sandbox passed its disk quota of"
CHUNK = 1 << 16
POLL_S = 0.05
DISK_EVERY_S = 0.5
FEED_JOIN_S = 2.0


class Unsafe(Exception):
    """A path that would land outside the working directory."""


class Exact:
    """A reader of exactly ``size`` bytes of ``stream`` (then end of file)."""

    def __init__(self, stream: IO[bytes], size: int) -> None:
        self.stream = stream
        self.left = size

    def read(self, size: int = -1) -> bytes:
        if self.left <= 0:
            return b""
        want = self.left if size is None or size < 0 else min(size, self.left)
        data = self.stream.read(want)
        if len(data) < want:
            raise EOFError("stdin ended before the payload did")
        self.left -= len(data)
        return data

    def drain(self) -> None:
        while self.read(CHUNK):
            pass


def read_header(stream: IO[bytes]) -> dict[str, Any]:
    size = int(stream.readline())
    config: dict[str, Any] = json.loads(Exact(stream, size).read())
    return config


# -- paths ------------------------------------------------------------------------
def inside(root: str, relative: str) -> str:
    """``root/relative`` with symlinks resolved; ``Unsafe`` when it leads out of ``root``."""
    parts = relative.split("/")
    if not relative or relative.startswith("/") or ".." in parts or "\0" in relative:
        raise Unsafe(f"file path {relative!r} is not a plain relative path")
    base = os.path.realpath(root)
    target = os.path.realpath(os.path.join(base, relative))
    if target == base or not target.startswith(base + os.sep):
        raise Unsafe(f"path {relative!r} escapes the sandbox")
    return target


def put(config: dict[str, Any], payload: Exact) -> int:
    relative = str(config["path"])
    target = inside(config["root"], relative)
    with tarfile.open(fileobj=payload, mode="r|") as tar:  # type: ignore[call-overload]
        member = tar.next()
        if member is None or not member.isreg() or member.name != relative:
            print("put expects one regular file named as the path", file=sys.stderr)
            return EXIT_BAD_REQUEST
        source = tar.extractfile(member)
        assert source is not None
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as sink:
            shutil.copyfileobj(source, sink, CHUNK)
    payload.drain()
    return 0


def get(config: dict[str, Any]) -> int:
    relative = str(config["path"])
    target = inside(config["root"], relative)
    if not os.path.isfile(target):
        print(f"no file {relative!r} in the sandbox", file=sys.stderr)
        return EXIT_MISSING
    out = sys.stdout.buffer
    with open(target, "rb") as source, tarfile.open(fileobj=out, mode="w|") as tar:
        info = tar.gettarinfo(fileobj=source, arcname=relative)
        tar.addfile(info, source)
    out.flush()
    return 0


def pack(config: dict[str, Any]) -> int:
    """The working directory's files, directories and symlinks as a tar.gz on stdout."""
    root = os.path.realpath(config["root"])
    skip = set(config.get("skip", []))
    out = sys.stdout.buffer
    # Nested: the parenthesised form of one ``with`` needs Python 3.10 in the image.
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=1) as gz:  # noqa: SIM117
        with tarfile.open(fileobj=gz, mode="w|") as tar:
            _pack_into(tar, root, skip)
    out.flush()
    return 0


def _pack_into(tar: tarfile.TarFile, root: str, skip: set[str]) -> None:
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in skip)
        for name in sorted(dirs + files):
            path = os.path.join(top, name)
            info = tar.gettarinfo(path, os.path.relpath(path, root))
            if info.isreg():
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            elif info.isdir() or info.issym():  # symlinked directories are not followed
                tar.addfile(info)


def unpack(config: dict[str, Any], payload: Exact) -> int:
    """Unpack a tar.gz from stdin into the working directory (no special files)."""
    root = config["root"]
    with tarfile.open(fileobj=payload, mode="r|gz") as tar:  # type: ignore[call-overload]
        for member in tar:
            name = member.name[2:] if member.name.startswith("./") else member.name
            target = inside(root, name)
            if member.isdir():
                os.makedirs(target, exist_ok=True)
            elif member.issym():
                os.makedirs(os.path.dirname(target), exist_ok=True)
                if os.path.lexists(target):
                    os.unlink(target)
                os.symlink(member.linkname, target)
            elif member.isreg():
                source = tar.extractfile(member)
                assert source is not None
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "wb") as sink:
                    shutil.copyfileobj(source, sink, CHUNK)
                os.chmod(target, 0o755 if member.mode & 0o100 else 0o644)
            else:
                print(f"skipped {name!r}: not a file, directory or symlink", file=sys.stderr)
    payload.drain()
    return 0


# -- processes --------------------------------------------------------------------
def become_subreaper() -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass  # not Linux: a daemon may escape, the pod's deletion still ends it


def feed(pipe: IO[bytes], data: bytes) -> None:
    try:
        pipe.write(data)
        pipe.close()
    except (BrokenPipeError, ConnectionResetError, ValueError):
        pass


def run(config: dict[str, Any], stdin: bytes | None) -> int:
    argv: list[str] = list(config["argv"])
    env: dict[str, str] = dict(config["env"])
    env.setdefault("PATH", os.environ.get("PATH") or DEFAULT_PATH)
    limits: dict[str, int] = config["limits"]
    cwd = config["cwd"]
    disk = config.get("disk") or [cwd]
    become_subreaper()
    started = time.monotonic()
    if not os.path.isdir(cwd):
        print(f"cannot enter {cwd!r}: no such directory", file=sys.stderr)
        return 126
    try:
        command = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            close_fds=True,
            start_new_session=True,
            preexec_fn=lambda: set_limits(limits),
        )
    except FileNotFoundError as exc:
        print(f"cannot run {argv[0]!r}: {exc}", file=sys.stderr)
        return 127
    except OSError as exc:
        print(f"cannot run {argv[0]!r}: {exc}", file=sys.stderr)
        return 126
    feeder = None
    if stdin is not None:
        assert command.stdin is not None
        feeder = threading.Thread(target=feed, args=(command.stdin, stdin), daemon=True)
        feeder.start()
    deadline = started + float(config["timeout_s"])
    quota = int(limits["disk_mb"]) * MIB
    next_disk = started
    note = ""
    while command.poll() is None:
        reap(command)
        now = time.monotonic()
        if now >= deadline:
            note = f"{TIMEOUT_NOTE} {config['timeout_s']:g}s: the command and its tree were killed"
            break
        if now >= next_disk:
            if sum(tree_size(place) for place in disk) > quota:
                note = f"{DISK_NOTE} {limits['disk_mb']} MiB; the command was killed"
                break
            next_disk = now + DISK_EVERY_S
        time.sleep(POLL_S)
    kill_tree(os.getpid(), command)  # nothing outlives the command it belongs to
    code = command.wait()
    reap(None)
    if feeder is not None:
        feeder.join(FEED_JOIN_S)
    if note:
        sys.stderr.write(f"\n{note}\n")
        sys.stderr.flush()
        return EXIT_KILLED
    return code if code >= 0 else 128 - code


def reap_token(config: dict[str, Any]) -> int:
    """Kill the launcher whose command line carries ``token``, and its whole tree."""
    token = str(config["token"]).encode()
    for pid in parents():
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().split(b"\0")
        except OSError:
            continue
        if token in cmdline:
            for victim in [*reversed(descendants(pid)), pid]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(victim, signal.SIGKILL)
    return 0


def main(stream: IO[bytes]) -> int:
    config = read_header(stream)
    size = config.get("stdin")
    payload = Exact(stream, int(size) if size is not None else 0)
    op = config.get("op")
    try:
        if op == "run":
            return run(config, payload.read() if size is not None else None)
        if op == "put":
            return put(config, payload)
        if op == "get":
            return get(config)
        if op == "pack":
            return pack(config)
        if op == "unpack":
            return unpack(config, payload)
        if op == "reap":
            return reap_token(config)
    except Unsafe as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_UNSAFE
    except (OSError, tarfile.TarError, EOFError) as exc:
        print(f"{op}: {exc}", file=sys.stderr)
        return 1
    print(f"unknown operation {op!r}", file=sys.stderr)
    return EXIT_BAD_REQUEST


if __name__ == "__main__":
    sys.exit(main(sys.stdin.buffer))
