"""How a sandbox command is laid out under bubblewrap.

Inside, the sandbox sees a read-only root built from nothing: the OS's ``/usr``
(and the ``/bin``, ``/lib`` links into it), the Python runtime at its own path,
a handful of ``/etc`` files (the dynamic linker's cache, CA certificates, and a
``passwd``, ``group`` and ``hosts`` written for the sandbox), a fresh ``/proc``
for its own PID namespace, a minimal ``/dev``, size-capped tmpfs ``/tmp`` and
``/dev/shm``, and its own directory at ``/work``, the only writable place on
disk besides the absolute directories it was created with (``CreateSandbox.dirs``,
each a folder of its own bound read-write at its path). Every namespace is new:
mount, PID, network (loopback only), IPC, UTS, cgroup, and user where the service
is not root.

When the service runs as root, bubblewrap runs privileged (no user namespace)
and ``sandbox_init.py`` drops to the sandbox's own unprivileged uid before
anything else, so that the kernel counts its processes (``RLIMIT_NPROC`` is
not enforced for root) and no file outside answers to it as owner.
"""

import hashlib
import importlib.util
import json
import os
import sys
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchwright_shared.settings import AGENT_BIN_MOUNT

# Fixed places inside every sandbox.
SANDBOX_WORKDIR = "/work"
SANDBOX_RUN = "/run/bw"
SANDBOX_INIT = f"{SANDBOX_RUN}/init.py"
SANDBOX_NET = f"{SANDBOX_RUN}/net"
SANDBOX_HOSTNAME = "sandbox"
# The sandbox's uid and gid inside its user namespace (a non-root service).
USERNS_ID = 1000
# A root service gives each sandbox one uid in [base, base + UID_SPAN), by its id.
UID_SPAN = 1 << 20
MIB = 1 << 20

# The OS's programs and libraries: read-only, nothing of the host's own data.
SYSTEM_DIRS = ("usr",)
SYSTEM_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "localtime", "nsswitch.conf", "ssl/openssl.cnf")
ETC_DIRS = ("ld.so.conf.d", "ssl/certs", "alternatives")

# Prints the network interfaces the sandbox sees: "lo" alone when it is isolated.
PROBE_SCRIPT = "import socket; print(' '.join(n for _, n in socket.if_nameindex()))"


# Libraries scorers may import beyond the standard library: what the guide's own
# scorers use (``requests`` and what it needs). Mounted read-only from this
# service's environment at SCORER_SITE; nothing else of the platform is visible.
SCORER_LIBRARIES = ("requests", "urllib3", "idna", "certifi", "charset_normalizer")
SCORER_SITE = "/opt/benchwright/site"


# Where a harness's libraries are (Inspect AI and all it imports): the site-packages
# folder that holds them, read-only, off every path until the harness runner puts it
# on its own (docs/decisions/0041). Library code only: no data, no keys.
HARNESS_SITE = "/opt/benchwright/harness"
HARNESS_PACKAGE = "inspect_ai"


def harness_site() -> str | None:
    """The site-packages folder holding the Inspect harness here, if it is installed."""
    spec = importlib.util.find_spec(HARNESS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.dirname(os.path.realpath(next(iter(spec.submodule_search_locations))))


def scorer_libraries() -> tuple[tuple[str, str], ...]:
    """(name, directory) of each scorer library installed here; missing ones are left out."""
    found = []
    for name in SCORER_LIBRARIES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            found.append((name, os.path.realpath(next(iter(spec.submodule_search_locations)))))
    return tuple(found)


@dataclass(frozen=True)
class Runtime:
    """The interpreter sandboxes run: this service's base Python, mounted read-only,
    with the scorer libraries beside it."""

    executable: str
    prefix: str
    libraries: tuple[tuple[str, str], ...] = ()
    harness: str | None = None

    @classmethod
    def current(cls) -> "Runtime":
        executable = getattr(sys, "_base_executable", None) or sys.executable
        return cls(
            executable=os.path.realpath(executable),
            prefix=os.path.realpath(sys.base_prefix),
            libraries=scorer_libraries(),
            harness=harness_site(),
        )

    def library_mounts(self) -> list[str]:
        args: list[str] = []
        if self.libraries:
            args += _parents(f"{SCORER_SITE}/x")
            for name, directory in self.libraries:
                args += ["--ro-bind", directory, f"{SCORER_SITE}/{name}"]
        if self.harness:
            args += [*_parents(HARNESS_SITE), "--ro-bind", self.harness, HARNESS_SITE]
        return args

    @property
    def bin_dir(self) -> str:
        return os.path.dirname(self.executable)

    def mounts(self) -> list[str]:
        """Mount the prefix (and the interpreter, if elsewhere) at their own paths."""
        places = [self.prefix]
        if not Path(self.executable).is_relative_to(self.prefix):
            places.append(self.bin_dir)
        args: list[str] = []
        for place in places:
            if any(Path(place).is_relative_to(f"/{d}") for d in SYSTEM_DIRS):
                continue
            args += _parents(place)
            args += ["--ro-bind", place, place]
        return args

    def path_env(self) -> str:
        return f"{self.bin_dir}:/usr/local/bin:/usr/bin:/bin"


def _parents(path: str) -> list[str]:
    """Create ``path``'s parents world-traversable (bubblewrap copies the host's modes)."""
    args: list[str] = []
    parts = Path(path).parts[1:-1]
    for i in range(len(parts)):
        args += ["--perms", "0755", "--dir", "/" + "/".join(parts[: i + 1])]
    return args


def sandbox_init_pid(info: bytes) -> int | None:
    """The host's pid of a sandbox's init, from what ``--info-fd`` received."""
    try:
        pid = json.loads(info)["child-pid"]
    except (ValueError, KeyError, TypeError):
        return None
    return pid if isinstance(pid, int) else None


def sandbox_uid(sandbox_id: str, base: int) -> int:
    """The uid a root service runs this sandbox as."""
    digest = hashlib.sha256(sandbox_id.encode()).digest()
    return base + int.from_bytes(digest[:4]) % UID_SPAN


def parse_features(help_text: str) -> frozenset[str]:
    """The optional bubblewrap flags this build knows (``bwrap --help``)."""
    wanted = ("--disable-userns", "--size", "--perms", "--unshare-cgroup-try")
    return frozenset(flag for flag in wanted if flag in help_text)


def write_identity(private: Path, uid: int, names: Iterable[str]) -> None:
    """The sandbox's own ``passwd``, ``group`` and ``hosts``, never the host's."""
    private.mkdir(parents=True, exist_ok=True)
    (private / "net").mkdir(exist_ok=True)
    os.chmod(private / "net", 0o755)
    hosts = " ".join(sorted({"localhost", *names}))
    files = {
        "passwd": f"root:x:0:0::/:/bin/false\nsandbox:x:{uid}:{uid}::{SANDBOX_WORKDIR}:/bin/sh\n",
        "group": f"root:x:0:\nsandbox:x:{uid}:\n",
        "hosts": f"127.0.0.1 {hosts}\n",
    }
    for name, text in files.items():
        scratch = private / f".{name}.{uuid.uuid4().hex}"
        scratch.write_text(text)
        os.chmod(scratch, 0o644)
        os.replace(scratch, private / name)


@dataclass(frozen=True)
class Layout:
    """Everything one bubblewrap invocation needs to know."""

    bwrap: str
    features: frozenset[str]
    privileged: bool
    runtime: Runtime
    launcher: Path
    workdir: Path
    private: Path
    tmp_mb: int
    # (path inside, folder on the host): the sandbox's own absolute directories.
    dirs: tuple[tuple[str, Path], ...] = ()
    # The operator's agent CLIs (``Settings.agent_bin_dir``), bound read-only.
    agent_bin: Path | None = None

    def argv(
        self,
        config: Mapping[str, object],
        command: Sequence[str],
        info_fd: int | None = None,
        *,
        as_pid_1: bool = False,
    ) -> list[str]:
        """bubblewrap's command line: the sandbox, then the launcher, then ``command``.

        ``info_fd`` receives bubblewrap's JSON about the sandbox (its init's pid);
        ``as_pid_1``: the launcher is the sandbox's PID 1 (the exec server, which
        reaps and outlives what it starts), not a child of bubblewrap's own init.
        """
        args = [self.bwrap, "--die-with-parent", "--new-session"]
        if as_pid_1:
            args += ["--as-pid-1"]
        if info_fd is not None:
            args += ["--info-fd", str(info_fd)]
        if self.privileged:
            # No user namespace: the launcher needs just these two, to become
            # the sandbox's uid; they go with that setuid.
            args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
            if "--unshare-cgroup-try" in self.features:
                args += ["--unshare-cgroup-try"]
            args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        else:
            args += ["--unshare-all", "--unshare-user"]
            if "--disable-userns" in self.features:
                args += ["--disable-userns"]
            args += ["--uid", str(USERNS_ID), "--gid", str(USERNS_ID)]
        args += ["--hostname", SANDBOX_HOSTNAME, "--clearenv"]
        args += self._system()
        args += self.runtime.mounts()
        args += self.runtime.library_mounts()
        args += _parents(SANDBOX_INIT)
        args += ["--ro-bind", str(self.launcher), SANDBOX_INIT]
        args += ["--ro-bind", str(self.private / "net"), SANDBOX_NET]
        args += ["--bind", str(self.workdir), SANDBOX_WORKDIR]
        for inside, host in self.dirs:
            args += [*_parents(inside), "--bind", str(host), inside]
        if self.agent_bin is not None:
            args += [*_parents(AGENT_BIN_MOUNT), "--ro-bind", str(self.agent_bin), AGENT_BIN_MOUNT]
        args += ["--proc", "/proc", "--dev", "/dev"]
        args += [*self._tmpfs("/dev/shm"), "--remount-ro", "/dev"]
        args += self._tmpfs("/tmp")
        args += ["--remount-ro", "/", "--chdir", SANDBOX_WORKDIR]
        launcher = [self.runtime.executable, "-I", "-S", SANDBOX_INIT]
        return [*args, "--", *launcher, json.dumps(config), *command]

    def _system(self) -> list[str]:
        args: list[str] = []
        for name in SYSTEM_DIRS:
            args += ["--ro-bind", f"/{name}", f"/{name}"]
        for name in SYSTEM_LINKS:
            host = Path(f"/{name}")
            if host.is_symlink():
                args += ["--symlink", os.readlink(host), f"/{name}"]
            elif host.is_dir():
                args += ["--ro-bind", str(host), str(host)]
        args += ["--perms", "0755", "--dir", "/etc"]
        for name in ETC_DIRS + ETC_FILES:
            path = Path(f"/etc/{name}")
            if path.is_dir() if name in ETC_DIRS else path.is_file():
                args += [*_parents(str(path)), "--ro-bind", str(path), str(path)]
        for name in ("passwd", "group", "hosts"):
            args += ["--ro-bind", str(self.private / name), f"/etc/{name}"]
        return args

    def _tmpfs(self, dest: str) -> list[str]:
        args: list[str] = []
        if "--perms" in self.features:
            args += ["--perms", "1777"]
        if "--size" in self.features:
            args += ["--size", str(self.tmp_mb * MIB)]
        return [*args, "--tmpfs", dest]
