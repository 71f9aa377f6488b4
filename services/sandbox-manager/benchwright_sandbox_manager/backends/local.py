"""The ``local`` backend: each command under bubblewrap, in the sandbox's own directory.

What a command gets (``bwrap.py`` has the layout, ``forwarding.py`` the network,
``runtime/sandbox_init.py`` what runs first inside): new namespaces, a read-only
view of the OS and the Python runtime and nothing else of the host, its own
directory as ``/work`` (the only writable place on disk but its own absolute
directories, below), tmpfs ``/tmp``, only the environment it is given, rlimits on
CPU, memory, file size and processes, a disk quota, a wall clock that kills the
whole tree, and no network but the forwarders to the addresses it is told about.
See ``docs/decisions/0013``.

On disk a sandbox is ``<root>/<sandbox id>/``: ``work/`` is its ``/work``, and
``dirs/<path>/`` the folder behind each of its absolute directories (a Harbor
task's ``/app``, ``/logs``...), bound read-write at ``/<path>``: out of sight of
``/work``, inside the quota, and gone with the sandbox.

When bubblewrap cannot build a sandbox here, ``create`` refuses
(``IsolationUnavailableError``) unless the operator set ``BW_SANDBOX_UNISOLATED``;
then commands run as plain subprocesses (own directory, scrubbed environment,
own process group, per-process rlimits) and every sandbox says ``isolation: none``.
Such a sandbox cannot present absolute directories: creating one with them is refused.
"""

import asyncio
import logging
import os
import shutil
import sys
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

from benchwright_sandbox_manager.backends import bwrap
from benchwright_sandbox_manager.backends.exec_servers import ExecServers, ServerUnavailable
from benchwright_sandbox_manager.backends.isolation import Bubblewrap
from benchwright_sandbox_manager.backends.processes import (
    DiskWatch,
    feed,
    kill_group,
    ms_since,
    read_head,
    read_tail,
    unisolated_preexec,
)
from benchwright_sandbox_manager.ports import (
    BackendError,
    ExecResult,
    IsolationUnavailableError,
    SandboxLimits,
    UnsafePathError,
    is_within,
    safe_relative_path,
    sandbox_cwd,
    sandbox_dirs,
    sandbox_path,
    split_path,
)
from benchwright_sandbox_manager.snapshots import pack, unpack
from benchwright_shared.settings import Settings

log = logging.getLogger(__name__)

BASE_ENV = {"LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
# These names in argv[0] mean the sandbox's own interpreter.
PYTHON_NAMES = frozenset({"python", "python3"})
# After a command ends (or is killed), how long its output pipes may take to close.
DRAIN_GRACE_S = 2.0
PROBE_TIMEOUT_S = 30.0
# In a sandbox's own directory: its working directory, and its absolute directories' folders.
WORK = "work"
DIRS = "dirs"


class LocalBackend:
    name = "local"

    def __init__(self, root: Path, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.rate_micros_per_s = self.settings.sandbox_rate_local_micros
        self.runs_images = False
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        # Resolved once: every command names its sandbox's folders several times.
        self._real_root = root.resolve()
        self.limits = SandboxLimits.from_settings(self.settings)
        self.bubblewrap = Bubblewrap(self.settings, BASE_ENV)
        # Each task sandbox's exec server, started on its first command (decision 0051).
        self._servers = ExecServers(self.bubblewrap)
        self._procs: dict[str, set[asyncio.subprocess.Process]] = {}
        # Each sandbox's absolute directories (``CreateSandbox.dirs``), as created.
        self._dirs: dict[str, tuple[str, ...]] = {}
        # Sandboxes killed: a command whose start was under way when the kill came
        # is registered after it, and must go too (seen under load: it lived on).
        self._killed: set[str] = set()
        self._probe_lock = asyncio.Lock()
        self._probed = False
        self._refusal: str | None = None

    # -- isolation ----------------------------------------------------------------
    @property
    def isolation(self) -> str:
        return "none" if self._refusal is not None else "bubblewrap"

    async def start(self) -> None:
        """Probe bubblewrap once: can it build this backend's sandboxes here?"""
        async with self._probe_lock:
            if self._probed:
                return
            self._refusal = await self._probe()
            if self._refusal is not None and self.bubblewrap.path:
                # Installed but failed: once seen under load ("Can't chdir to /work:
                # Permission denied"), so one fresh sandbox is tried before the
                # backend is refused for this process's lifetime.
                log.warning("bubblewrap probe failed (%s); trying once more", self._refusal)
                self._refusal = await self._probe()
            self._probed = True
        if self._refusal is None:
            log.info("local sandboxes: %s", self.bubblewrap.mode)
        elif self.settings.sandbox_unisolated:
            log.warning(
                "!!! local sandboxes run WITHOUT ISOLATION (BW_SANDBOX_UNISOLATED is set): "
                "%s. Scorers can read what this service's user can read and reach any "
                "network. Run only code you trust.",
                self._refusal,
            )
        else:
            log.error("local sandboxes refused: %s", self._refusal)

    def _check_isolation(self) -> None:
        if self._refusal is not None and not self.settings.sandbox_unisolated:
            raise IsolationUnavailableError(
                "the local sandbox backend will not run untrusted code without isolation: "
                f"{self._refusal}. Install bubblewrap (apt-get install bubblewrap) where "
                "unprivileged user namespaces are allowed (or run the sandbox-manager as "
                "root), or set BW_SANDBOX_UNISOLATED=true to run scorers with no isolation "
                "at all (only for code you trust)."
            )

    async def _probe(self) -> str | None:
        """None when a real sandbox starts and sees no network but loopback; else why not."""
        missing = await self.bubblewrap.find()
        if missing is not None:
            return missing
        found = self.bubblewrap.path
        sandbox_id = f"probe-{uuid.uuid4().hex[:12]}"
        await self._make(sandbox_id)
        try:
            result = await self._run(
                sandbox_id,
                ["python", "-I", "-c", bwrap.PROBE_SCRIPT],
                stdin=None,
                env={},
                timeout_s=PROBE_TIMEOUT_S,
                limits=self.limits,
                isolated=True,
            )
        except (OSError, BackendError) as exc:
            return f"bubblewrap ({found}) cannot start a sandbox: {exc}"
        finally:
            await self.kill(sandbox_id)
        if result.exit_code != 0 or result.stdout.split() != ["lo"]:
            why = (result.stderr.strip() or result.stdout.strip())[-500:]
            return f"bubblewrap ({found}) cannot build a sandbox here: {why}"
        return None

    # -- places -------------------------------------------------------------------
    def inside_path(self, sandbox_id: str, path: str) -> str:
        relative = safe_relative_path(path)
        if self.isolation == "none":
            return str(self.workdir(sandbox_id) / relative)
        return f"{bwrap.SANDBOX_WORKDIR}/{relative}"

    def _dir(self, sandbox_id: str) -> Path:
        """Everything of the sandbox's on this host: what the quota counts, what kill removes."""
        # A name, one level below the root; its folder is made here, never a link.
        path = self._real_root / sandbox_id
        if sandbox_id in ("", ".", "..") or path.parent != self._real_root:
            raise BackendError(f"bad sandbox id {sandbox_id!r}")
        return path

    def workdir(self, sandbox_id: str) -> Path:
        """The folder the sandbox sees as its working directory."""
        return self._dir(sandbox_id) / WORK

    def dir_mounts(self, sandbox_id: str) -> dict[str, Path]:
        """Each of the sandbox's absolute directories, to the folder here behind it."""
        return {place: self._backing(sandbox_id, place) for place in self._dirs.get(sandbox_id, ())}

    def _backing(self, sandbox_id: str, place: str) -> Path:
        return self._dir(sandbox_id) / DIRS / place.lstrip("/")

    def _live_dir(self, sandbox_id: str) -> Path:
        path = self.workdir(sandbox_id)
        if not path.is_dir():
            raise BackendError(f"sandbox {sandbox_id} has no working directory")
        return path

    def _base(self, sandbox_id: str, path: str) -> tuple[Path, str]:
        """(the folder here ``path`` is relative to, the rest of ``path``)."""
        checked = sandbox_path(path, self._dirs.get(sandbox_id, ()))
        if not checked.startswith("/"):
            return self.workdir(sandbox_id), checked
        place, rest = split_path(checked, self._dirs[sandbox_id])
        return self._backing(sandbox_id, place), rest

    def _path(self, sandbox_id: str, path: str) -> tuple[Path, Path]:
        """(where ``path`` is here, the folder it must stay in)."""
        base, rest = self._base(sandbox_id, path)
        base = base.resolve()
        target = (base / rest).resolve()
        if target == base or not target.is_relative_to(base):  # through a symlink, say
            raise UnsafePathError(f"path {path!r} escapes the sandbox")
        return target, base

    def _command_dir(self, sandbox_id: str, cwd: str | None) -> str | None:
        """Where a command starts, as the sandbox sees it (None: its working directory)."""
        checked = sandbox_cwd(cwd, self._dirs.get(sandbox_id, ()))
        if checked is None or checked.startswith("/"):
            return checked
        if self.isolation == "none":
            return str(self.workdir(sandbox_id) / checked)
        return f"{bwrap.SANDBOX_WORKDIR}/{checked}"

    def _own(self, path: Path, sandbox_id: str, *, base: Path, tree: bool = False) -> None:
        """Give what the service wrote to the sandbox's uid (only a root service must).

        ``path`` and its parents up to ``base`` (the working directory, or one of the
        sandbox's directories' folders); with ``tree``, everything under ``path``.
        Symlinks are changed, never followed.
        """
        if not self.bubblewrap.privileged or self.isolation == "none":
            return
        uid = self.bubblewrap.uid(sandbox_id)
        for place in (path, *path.parents):
            if not place.is_relative_to(base):
                break
            os.chown(place, uid, uid, follow_symlinks=False)
        if tree:
            for top, dirs, files in os.walk(path):
                for name in dirs + files:
                    os.chown(os.path.join(top, name), uid, uid, follow_symlinks=False)

    # -- files --------------------------------------------------------------------
    async def _make(self, sandbox_id: str, dirs: Sequence[str] = ()) -> None:
        self._killed.discard(sandbox_id)
        self._servers.forget(sandbox_id)
        self._dirs[sandbox_id] = tuple(dirs)
        await asyncio.to_thread(self._dir(sandbox_id).mkdir, parents=True)
        folders = [self.workdir(sandbox_id), *self.dir_mounts(sandbox_id).values()]
        for folder in folders:
            await asyncio.to_thread(folder.mkdir, parents=True)
            self._own(folder, sandbox_id, base=folder)
        self._procs[sandbox_id] = set()

    async def create(
        self, sandbox_id: str, *, dirs: Sequence[str] = (), image: str | None = None
    ) -> None:
        await self.start()
        self._check_isolation()
        dirs = sandbox_dirs(dirs)
        if dirs and self.isolation == "none":
            raise IsolationUnavailableError(
                f"the local sandbox backend cannot present {', '.join(dirs)} without "
                "bubblewrap (BW_SANDBOX_UNISOLATED is set): a Harbor task's sandbox needs "
                "bubblewrap"
            )
        self._check_runtime(dirs)
        await self._make(sandbox_id, dirs)

    def _check_runtime(self, dirs: Sequence[str]) -> None:
        """A directory bound over the Python runtime's own place would hide it."""
        runtime = self.bubblewrap.runtime
        places = [runtime.prefix, runtime.bin_dir]
        for place in dirs:
            for taken in places:
                if is_within(place, taken) or is_within(taken, place):
                    raise UnsafePathError(
                        f"directory {place!r} would cover the sandbox's Python runtime ({taken})"
                    )

    async def put_file(self, sandbox_id: str, path: str, data: bytes) -> None:
        target, base = self._path(sandbox_id, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(target.write_bytes, data)
        self._own(target, sandbox_id, base=base)

    async def get_file(self, sandbox_id: str, path: str) -> bytes:
        target, _ = self._path(sandbox_id, path)
        return await asyncio.to_thread(target.read_bytes)

    async def snapshot(self, sandbox_id: str, dest: Path) -> None:
        await asyncio.to_thread(pack, self._live_dir(sandbox_id), dest)

    async def restore(self, sandbox_id: str, archive: Path) -> None:
        workdir = self._live_dir(sandbox_id)
        await asyncio.to_thread(unpack, archive, workdir)
        await asyncio.to_thread(self._own, workdir, sandbox_id, base=workdir, tree=True)

    # -- commands -----------------------------------------------------------------
    async def _spawn(
        self,
        sandbox_id: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        stdin: int,
        limits: SandboxLimits,
        isolated: bool,
        cwd: str | None = None,
    ) -> asyncio.subprocess.Process:
        """Start ``argv``; ``cwd`` as ``_command_dir`` gives it."""
        workdir = self._live_dir(sandbox_id)
        command = self._resolve(argv, isolated=isolated)
        if not isolated:
            proc = await asyncio.create_subprocess_exec(
                *command,
                cwd=cwd or workdir,
                env={
                    **BASE_ENV,
                    "PATH": "/usr/local/bin:/usr/bin:/bin",
                    "HOME": str(workdir),
                    "PYTHONPATH": str(workdir),  # the runtime sits at the top of the sandbox
                    **env,
                },
                preexec_fn=unisolated_preexec(limits),
                stdin=stdin,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # its own process group, so a kill takes the whole tree
                limit=2**24,
            )
        else:
            proc = await self.bubblewrap.spawn(
                sandbox_id,
                workdir,
                command,
                env,
                limits=limits,
                stdin=stdin,
                dirs=self.dir_mounts(sandbox_id),
                cwd=cwd,
            )
        self._procs.setdefault(sandbox_id, set()).add(proc)
        if sandbox_id in self._killed:
            kill_group(proc)
        return proc

    def _resolve(self, argv: Sequence[str], *, isolated: bool) -> list[str]:
        """``argv`` with ``python`` the sandbox's own interpreter."""
        python = self.bubblewrap.runtime.executable if isolated else sys.executable
        return [python if argv[0] in PYTHON_NAMES else argv[0], *argv[1:]]

    async def _start_command(
        self,
        sandbox_id: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        stdin: int,
        limits: SandboxLimits,
    ) -> asyncio.subprocess.Process:
        await self.start()
        self._check_isolation()
        isolated = self.isolation == "bubblewrap"
        return await self._spawn(
            sandbox_id, argv, env, stdin=stdin, limits=limits, isolated=isolated
        )

    async def exec_lines(
        self,
        sandbox_id: str,
        argv: Sequence[str],
        *,
        stdin_lines: Sequence[str],
        env: Mapping[str, str],
        timeout_s: float,
        limits: SandboxLimits | None = None,
    ) -> AsyncIterator[str]:
        limits = limits or self.limits
        proc = await self._start_command(sandbox_id, argv, env, asyncio.subprocess.PIPE, limits)
        assert proc.stdin and proc.stdout and proc.stderr
        stderr_task = asyncio.create_task(proc.stderr.read())
        disk = DiskWatch(proc, self._dir(sandbox_id), limits.disk_mb)
        try:
            proc.stdin.write("".join(line + "\n" for line in stdin_lines).encode())
            await proc.stdin.drain()
            proc.stdin.close()
            async with asyncio.timeout(timeout_s):
                while line := await proc.stdout.readline():
                    yield line.decode()
                code = await proc.wait()
        except TimeoutError:
            kill_group(proc)
            raise BackendError(f"command overran its {timeout_s:.0f}s wall clock") from None
        finally:
            disk.stop()
            kill_group(proc)  # what the command left running goes with it
            if proc.returncode is None:
                await proc.wait()
            await self.bubblewrap.settle(proc)
            self._procs.get(sandbox_id, set()).discard(proc)
        stderr = (await stderr_task).decode(errors="replace")
        if disk.breached:
            raise BackendError(disk.message)
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
        limits: SandboxLimits | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        """Run ``argv`` to its end; keep the head of stdout and the tail of stderr.

        When the command ends, whatever it left running is killed too: nothing
        outlives the command it belongs to.
        """
        await self.start()
        self._check_isolation()
        limits = limits or self.limits
        command_dir = self._command_dir(sandbox_id, cwd)
        if self._served(env, limits):
            try:
                return await self._servers.run(
                    sandbox_id,
                    workdir=self._live_dir(sandbox_id),
                    dirs=self.dir_mounts(sandbox_id),
                    argv=self._resolve(argv, isolated=True),
                    env=self.bubblewrap.served_env(env),
                    stdin=stdin,
                    cwd=command_dir or bwrap.SANDBOX_WORKDIR,
                    limits=limits,
                    timeout_s=timeout_s,
                    quota_dir=self._dir(sandbox_id),
                )
            except ServerUnavailable as exc:
                log.warning("sandbox %s: %s; this command starts the old way", sandbox_id, exc)
        return await self._run(
            sandbox_id,
            argv,
            stdin=stdin,
            env=env,
            timeout_s=timeout_s,
            limits=limits,
            isolated=self.isolation == "bubblewrap",
            cwd=command_dir,
        )

    def _served(self, env: Mapping[str, str], limits: SandboxLimits) -> bool:
        """Whether the sandbox's exec server can run a command (docs/decisions/0051): an
        isolated sandbox, a command that needs no network forwarder nor host name (the
        server has neither) and the ``/tmp`` size the server was started with."""
        if not self.settings.sandbox_exec_server or self.isolation != "bubblewrap":
            return False
        if limits.tmp_mb != self.limits.tmp_mb:
            return False
        plan = self.bubblewrap.plan(env)
        return not plan.forwards and not plan.names and plan.env == dict(env)

    async def _run(
        self,
        sandbox_id: str,
        argv: Sequence[str],
        *,
        stdin: bytes | None,
        env: Mapping[str, str],
        timeout_s: float,
        limits: SandboxLimits,
        isolated: bool,
        cwd: str | None = None,
    ) -> ExecResult:
        started = time.monotonic()
        try:
            proc = await self._spawn(
                sandbox_id,
                argv,
                env,
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                limits=limits,
                isolated=isolated,
                cwd=cwd,
            )
        except OSError as exc:  # no such program, not executable: what a shell calls 127
            if cwd is not None and exc.filename == cwd:  # unisolated: the cwd, not argv[0]
                return ExecResult(126, "", f"cannot enter {cwd!r}: {exc}", False, ms_since(started))
            return ExecResult(127, "", f"cannot run {argv[0]!r}: {exc}", False, ms_since(started))
        assert proc.stdout and proc.stderr
        out, err = bytearray(), bytearray()
        io_tasks = [
            asyncio.create_task(read_head(proc.stdout, out)),
            asyncio.create_task(read_tail(proc.stderr, err)),
        ]
        if stdin is not None:
            assert proc.stdin
            io_tasks.append(asyncio.create_task(feed(proc.stdin, stdin)))
        disk = DiskWatch(proc, self._dir(sandbox_id), limits.disk_mb)
        timed_out = False
        try:
            async with asyncio.timeout(timeout_s):
                await proc.wait()
        except TimeoutError:
            timed_out = True
        finally:
            disk.stop()
            kill_group(proc)
            if proc.returncode is None:
                await proc.wait()
            await self.bubblewrap.settle(proc)
            self._procs.get(sandbox_id, set()).discard(proc)
            # A process that left the group may still hold the pipes: stop waiting.
            _, pending = await asyncio.wait(io_tasks, timeout=DRAIN_GRACE_S)
            for task in pending:
                task.cancel()
        assert proc.returncode is not None
        stderr = err.decode(errors="replace")
        if disk.breached:
            stderr += f"\n[sandbox] {disk.message}\n"
        return ExecResult(
            exit_code=proc.returncode,
            stdout=out.decode(errors="replace"),
            stderr=stderr,
            timed_out=timed_out,
            duration_ms=ms_since(started),
        )

    # -- the end --------------------------------------------------------------------
    async def kill(self, sandbox_id: str) -> None:
        self._killed.add(sandbox_id)
        self._dirs.pop(sandbox_id, None)
        for proc in self._procs.pop(sandbox_id, set()):
            kill_group(proc)
        await self._servers.drop(sandbox_id)
        await self.bubblewrap.drop(sandbox_id)
        await asyncio.to_thread(shutil.rmtree, self._dir(sandbox_id), True)

    async def close(self) -> None:
        await self._servers.close()
        await self.bubblewrap.close()
