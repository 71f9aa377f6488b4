"""Starting one command inside a bubblewrap sandbox, and what that leaves on the host.

``LocalBackend`` decides whether a command is isolated; this module does it:
the sandbox's host-only files (``passwd``, ``hosts``, the forwarders' sockets,
under a short temporary directory because unix socket paths are short), the
network plan, the environment handed over through a pipe, and bubblewrap's
command line (``bwrap.py``).
"""

import asyncio
import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path

from benchwright_sandbox_manager.backends import bwrap
from benchwright_sandbox_manager.backends.forwarding import (
    HostForwarders,
    NetworkPlan,
    plan_network,
)
from benchwright_sandbox_manager.ports import BackendError, SandboxLimits
from benchwright_sandbox_manager.runtime import launcher_source
from benchwright_shared.process import die_with_parent
from benchwright_shared.settings import Settings

LAUNCHER = Path(__file__).resolve().parent.parent / "runtime" / "sandbox_init.py"
# What bubblewrap mounts as the sandbox's init: one file, ``command_limits`` inlined.
LAUNCHER_SOURCE = launcher_source(LAUNCHER)
LAUNCHER_FILE = "init.py"
# A task sandbox's exec server, mounted the same way in its place (docs/decisions/0051).
SERVER = LAUNCHER.parent / "exec_server.py"
SERVER_SOURCE = launcher_source(SERVER)
SERVER_FILE = "exec_server.py"
# A command's environment travels through a pipe; it must fit the pipe's buffer.
ENV_LIMIT_BYTES = 60_000
HELP_TIMEOUT_S = 10.0
SHORT_TMP = 32
# How long a finished sandbox's init may take to tear its namespace down.
SETTLE_TIMEOUT_S = 5.0
SETTLE_POLL_S = 0.01


class Bubblewrap:
    """Runs commands in bubblewrap sandboxes; holds their forwarders and host-only files."""

    def __init__(self, settings: Settings, base_env: Mapping[str, str]) -> None:
        self.settings = settings
        self.base_env = dict(base_env)
        self.runtime = bwrap.Runtime.current()
        # As root, bubblewrap runs privileged and each sandbox as a uid of its own.
        self.privileged = os.geteuid() == 0
        self.path = ""
        self.features: frozenset[str] = frozenset()
        self._forwarders = HostForwarders()
        self._private_root: Path | None = None
        # bubblewrap's pid -> the pipe its --info-fd JSON arrives on.
        self._info: dict[int, int] = {}
        # bubblewrap's pid -> its sandbox's init's, once read from that pipe.
        self._init_pids: dict[int, int] = {}

    @property
    def mode(self) -> str:
        how = "as root, each sandbox its own uid" if self.privileged else "in a user namespace"
        return f"bubblewrap {self.path} {how}"

    async def find(self) -> str | None:
        """Find bubblewrap and what its build supports; None, or why it cannot be used."""
        found = shutil.which(self.settings.sandbox_bwrap)
        if found is None:
            return f"bubblewrap ({self.settings.sandbox_bwrap!r}) is not installed"
        try:
            helper = await asyncio.create_subprocess_exec(
                found, "--help", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
            )
            help_text, _ = await asyncio.wait_for(helper.communicate(), HELP_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            return f"bubblewrap ({found}) does not run: {exc}"
        self.path = found
        self.features = bwrap.parse_features(help_text.decode(errors="replace"))
        return None

    def uid(self, sandbox_id: str) -> int:
        """The uid the sandbox's processes have on the host's side (a root service only)."""
        return bwrap.sandbox_uid(sandbox_id, self.settings.sandbox_uid_base)

    def _private(self, sandbox_id: str) -> Path:
        if self._private_root is None:
            # Unix socket paths end at 108 bytes: keep the base short.
            base = tempfile.gettempdir()
            base = base if len(base) <= SHORT_TMP else "/tmp"
            self._private_root = Path(tempfile.mkdtemp(prefix="bw-sandboxes-", dir=base))
            # Removed by ``close``, or when this object goes, or at exit: whichever is first.
            self._cleanup = weakref.finalize(self, shutil.rmtree, self._private_root, True)
            # Beside the sandboxes' own directories: what each mounts, read-only, as its init.
            for name, source in ((LAUNCHER_FILE, LAUNCHER_SOURCE), (SERVER_FILE, SERVER_SOURCE)):
                launcher = self._private_root / name
                launcher.write_text(source)
                launcher.chmod(0o444)
        return self._private_root / sandbox_id

    def _layout(
        self,
        sandbox_id: str,
        workdir: Path,
        tmp_mb: int,
        dirs: Mapping[str, Path] | None,
        launcher: str,
    ) -> bwrap.Layout:
        private = self._private(sandbox_id)
        return bwrap.Layout(
            bwrap=self.path,
            features=self.features,
            privileged=self.privileged,
            runtime=self.runtime,
            launcher=private.parent / launcher,
            workdir=workdir,
            private=private,
            tmp_mb=tmp_mb,
            dirs=tuple(sorted((dirs or {}).items())),
            agent_bin=self.settings.agent_bin_dir,
        )

    def _sandbox_uid(self, sandbox_id: str) -> int:
        return self.uid(sandbox_id) if self.privileged else bwrap.USERNS_ID

    def command_env(self, env: Mapping[str, str], plan_env: Mapping[str, str]) -> dict[str, str]:
        """What a command's environment is inside: the sandbox's own, then ``plan_env``
        (the network plan's), then nothing else; ``env`` is not in it (``plan_env`` is
        built from it by ``plan_network``)."""
        return {
            **self.base_env,
            "PATH": self.runtime.path_env(),
            "HOME": bwrap.SANDBOX_WORKDIR,
            # The runtime (bench_task, bench_runner) sits at the top of the sandbox.
            "PYTHONPATH": f"{bwrap.SANDBOX_WORKDIR}:{bwrap.SCORER_SITE}",
            # What bench_runner (started with -E, so blind to PYTHONPATH) adds.
            "BW_SCORER_PATH": bwrap.SCORER_SITE,
            # Where a harness runner (bench_inspect) finds its libraries, when mounted.
            **({"BW_HARNESS_PATH": bwrap.HARNESS_SITE} if self.runtime.harness else {}),
            **plan_env,
        }

    def served_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """A command's whole environment, for the exec server (no network plan to add)."""
        whole = self.command_env(env, env)
        if len(json.dumps(whole).encode()) > ENV_LIMIT_BYTES:
            raise BackendError(f"the command's environment passes {ENV_LIMIT_BYTES} bytes")
        return whole

    def plan(self, env: Mapping[str, str]) -> NetworkPlan:
        return plan_network(env, self.settings.egress_proxy_url)

    async def spawn(
        self,
        sandbox_id: str,
        workdir: Path,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        limits: SandboxLimits,
        stdin: int,
        dirs: Mapping[str, Path] | None = None,
        cwd: str | None = None,
    ) -> asyncio.subprocess.Process:
        """Start ``argv`` (``python`` already resolved) in the sandbox; bubblewrap's process.

        ``dirs``: the sandbox's own absolute directories, each path inside to its folder
        here; ``cwd``: where the command starts, as the sandbox sees it (its init goes
        there once it is the sandbox's user; None: ``/work``).
        """
        private = self._private(sandbox_id)
        plan = self.plan(env)
        uid = self._sandbox_uid(sandbox_id)
        await asyncio.to_thread(bwrap.write_identity, private, uid, plan.names)
        forwards = []
        for forward in plan.forwards:
            name = await self._forwarders.socket_for(sandbox_id, private / "net", forward.target)
            forwards.append({"port": forward.port, "socket": f"{bwrap.SANDBOX_NET}/{name}"})
        env_bytes = json.dumps(self.command_env(env, plan.env)).encode()
        if len(env_bytes) > ENV_LIMIT_BYTES:
            raise BackendError(f"the command's environment passes {ENV_LIMIT_BYTES} bytes")
        layout = self._layout(sandbox_id, workdir, limits.tmp_mb, dirs, LAUNCHER_FILE)
        env_read, env_write = os.pipe()
        info_read, info_write = os.pipe()
        os.set_blocking(info_read, False)
        config = {
            "env_fd": env_read,
            "uid": uid if self.privileged else None,
            "gid": uid if self.privileged else None,
            "limits": limits.for_command(),
            "forwards": forwards,
            "cwd": cwd,
        }
        try:
            try:
                os.write(env_write, env_bytes)
            finally:
                os.close(env_write)
            proc = await self._bubblewrap(
                layout.argv(config, argv, info_write), (env_read, info_write), stdin
            )
        except BaseException:
            os.close(info_read)
            raise
        finally:
            os.close(env_read)
            os.close(info_write)
        self._info[proc.pid] = info_read
        return proc

    async def spawn_server(
        self,
        sandbox_id: str,
        workdir: Path,
        *,
        tmp_mb: int,
        dirs: Mapping[str, Path] | None,
        control_fd: int,
    ) -> asyncio.subprocess.Process:
        """Start the sandbox's exec server (``runtime/exec_server.py``) as its PID 1.

        The same layout as a command's, with no network forwarder and the sandbox's own
        ``hosts`` (``localhost`` alone): an exec that needs either takes ``spawn``.
        """
        private = self._private(sandbox_id)
        uid = self._sandbox_uid(sandbox_id)
        await asyncio.to_thread(bwrap.write_identity, private, uid, ())
        layout = self._layout(sandbox_id, workdir, tmp_mb, dirs, SERVER_FILE)
        info_read, info_write = os.pipe()
        os.set_blocking(info_read, False)
        config = {
            "control_fd": control_fd,
            "uid": uid if self.privileged else None,
            "gid": uid if self.privileged else None,
        }
        try:
            proc = await self._bubblewrap(
                layout.argv(config, [], info_write, as_pid_1=True),
                (control_fd, info_write),
                asyncio.subprocess.DEVNULL,
                output=asyncio.subprocess.DEVNULL,
            )
        except BaseException:
            os.close(info_read)
            raise
        finally:
            os.close(info_write)
        self._info[proc.pid] = info_read
        return proc

    async def _bubblewrap(
        self,
        argv: Sequence[str],
        pass_fds: Sequence[int],
        stdin: int,
        output: int = asyncio.subprocess.PIPE,
    ) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            *argv,
            env={},  # bubblewrap's own; the command's comes through a pipe or a socket
            pass_fds=pass_fds,
            preexec_fn=die_with_parent,
            stdin=stdin,
            stdout=output,
            stderr=output,
            start_new_session=True,  # bubblewrap's group: killing it ends the sandbox
            limit=2**24,
        )

    def init_pid(self, proc: asyncio.subprocess.Process) -> int | None:
        """The host's pid of the sandbox's init (its PID 1), once bubblewrap has said it."""
        if proc.pid in self._init_pids:
            return self._init_pids[proc.pid]
        fd = self._info.pop(proc.pid, None)
        if fd is None:
            return None
        try:
            info = os.read(fd, 4096)
        except BlockingIOError:
            info = b""
        finally:
            os.close(fd)
        pid = bwrap.sandbox_init_pid(info)
        if pid is not None:
            self._init_pids[proc.pid] = pid
        return pid

    def init_alive(self, proc: asyncio.subprocess.Process) -> bool:
        """Whether the sandbox's init still runs (unknown counts as not)."""
        pid = self.init_pid(proc)
        return pid is not None and _alive(pid)

    async def settle(self, proc: asyncio.subprocess.Process) -> None:
        """Wait, after bubblewrap ended, until the sandbox's PID namespace is gone.

        bubblewrap may exit as soon as the command does, a moment before the
        sandbox's init has killed what the command left behind.
        """
        pid = self.init_pid(proc)
        self._init_pids.pop(proc.pid, None)
        if pid is None:
            return
        for _ in range(int(SETTLE_TIMEOUT_S / SETTLE_POLL_S)):
            if not _alive(pid):
                return
            await asyncio.sleep(SETTLE_POLL_S)

    async def drop(self, sandbox_id: str) -> None:
        """Forget a sandbox: its forwarders and host-only files."""
        await self._forwarders.drop(sandbox_id)
        if self._private_root is not None:
            await asyncio.to_thread(shutil.rmtree, self._private(sandbox_id), True)

    async def close(self) -> None:
        await self._forwarders.close()
        if self._private_root is not None:
            await asyncio.to_thread(self._cleanup)
            self._private_root = None


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie has finished: its namespace is torn down)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"
