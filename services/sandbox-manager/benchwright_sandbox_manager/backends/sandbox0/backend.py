"""``Sandbox0Backend``: the ``SandboxBackend`` port over pods, NetworkPolicies and exec."""

import asyncio
import contextlib
import io
import logging
import shutil
import tarfile
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchwright_sandbox_manager.backends.bwrap import sandbox_uid
from benchwright_sandbox_manager.backends.sandbox0 import launcher
from benchwright_sandbox_manager.backends.sandbox0.kube import (
    HINT,
    Cluster,
    KubeApiError,
    Sink,
    UnreachableError,
    load,
)
from benchwright_sandbox_manager.backends.sandbox0.manifests import (
    WORKDIR,
    object_name,
    pod_manifest,
    policy_manifest,
)
from benchwright_sandbox_manager.backends.sandbox0.network import PodNetwork
from benchwright_sandbox_manager.backends.sandbox0.session import Ended, Head, Sessions, Tail
from benchwright_sandbox_manager.ports import (
    BackendError,
    ExecResult,
    IsolationUnavailableError,
    SandboxLimits,
    UnsafePathError,
    safe_relative_path,
    sandbox_cwd,
    sandbox_dirs,
    sandbox_path,
    split_path,
)
from benchwright_sandbox_manager.snapshots import SKIPPED_DIRS, pack, unpack
from benchwright_shared.settings import Settings

log = logging.getLogger(__name__)

POD_START_TIMEOUT_S = 300.0
POD_GONE_TIMEOUT_S = 60.0
POLL_FIRST_S, POLL_MAX_S = 0.1, 1.0
# Past its own wall clock the launcher kills the command; this much later the
# backend stops waiting for the stream (and has the launcher's tree reaped).
BACKSTOP_S = 15.0
FILE_TIMEOUT_S = 600.0
# A pod waiting in one of these states waits for good.
STUCK = frozenset(
    {
        "ImagePullBackOff",
        "ErrImageNeverPull",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
        "CrashLoopBackOff",
    }
)


def _one_file_tar(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _file_from_tar(data: bytes, name: str) -> bytes:
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            member = tar.next()
            if member is None or not member.isreg() or member.name != name:
                raise BackendError(f"the pod sent no file {name!r}")
            content = tar.extractfile(member)
            assert content is not None
            return content.read()
    except tarfile.TarError as exc:
        raise BackendError(f"the pod sent a broken archive for {name!r}: {exc}") from exc


def _timed_out(ended: Ended, err: Tail) -> bool:
    return ended.overran or (
        ended.code == launcher.EXIT_KILLED and err.last_line.startswith(launcher.TIMEOUT_NOTE)
    )


class Sandbox0Backend:
    """Each sandbox a Pod in ``kube_namespace`` with a NetworkPolicy of its own
    (the package's docstring says what a pod is and what a command gets)."""

    name = "sandbox0"

    def __init__(self, root: Path, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.rate_micros_per_s = self.settings.sandbox_rate_sandbox0_micros
        # A pod runs any image that has a python3 for the launcher (3.8 or later).
        self.runs_images = True
        # Scratch space for snapshots on their way from a pod to their archive.
        self.root = root
        self.namespace = self.settings.kube_namespace
        self.limits = SandboxLimits.from_settings(self.settings)
        self.network = PodNetwork(self.namespace, self.settings.kube_egress_proxy_url)
        self.sessions = Sessions(self.namespace)
        self._cluster: Cluster | None = None
        self._refusal: str | None = None
        self._start_lock = asyncio.Lock()
        self._started = False
        # Each sandbox's own absolute directories (``CreateSandbox.dirs``), as created.
        self._dirs: dict[str, tuple[str, ...]] = {}

    @property
    def isolation(self) -> str:
        return "kubernetes"

    # -- the cluster ------------------------------------------------------------------
    async def start(self) -> None:
        """Load the kubeconfig (or in-cluster config) once; never raises."""
        async with self._start_lock:
            if self._started:
                return
            self._started = True
            try:
                loaded = await asyncio.to_thread(load, self.settings)
            except Exception as exc:  # ``create`` reports it
                loaded = f"cannot load the Kubernetes configuration: {exc}; {HINT}"
        if isinstance(loaded, str):
            self._refusal = loaded
            level = logging.WARNING if self.settings.kube_config else logging.INFO
            log.log(level, "sandbox0 sandboxes unavailable: %s", loaded)
        else:
            self._cluster = loaded
            log.info("sandbox0 sandboxes: pods in %s on %s", self.namespace, loaded.server)

    async def _api(self) -> Cluster:
        await self.start()
        if self._cluster is None:
            raise IsolationUnavailableError(f"the sandbox0 backend has no cluster: {self._refusal}")
        return self._cluster

    def _refused(self, cluster: Cluster, exc: BackendError) -> BackendError:
        """What a failed first request says: the cluster is out of reach, or a pod problem."""
        if isinstance(exc, UnreachableError):
            return IsolationUnavailableError(
                f"the sandbox0 backend cannot reach the Kubernetes API at {cluster.server} "
                f"({exc}); check BW_KUBE_CONFIG and BW_KUBE_CONTEXT"
            )
        if isinstance(exc, KubeApiError) and exc.status in (401, 403):
            return IsolationUnavailableError(
                f"the Kubernetes API at {cluster.server} refused the sandbox-manager ({exc}): "
                "the credentials in BW_KUBE_CONFIG need pods, pods/exec and networkpolicies "
                f"in namespace {self.namespace!r}"
            )
        if isinstance(exc, KubeApiError) and exc.status == 404:
            return IsolationUnavailableError(
                f"no namespace {self.namespace!r} on {cluster.server} ({exc}): "
                "create it, or set BW_KUBE_NAMESPACE"
            )
        return exc

    # -- create and kill --------------------------------------------------------------
    async def create(
        self,
        sandbox_id: str,
        role: str | None = None,
        *,
        dirs: Sequence[str] = (),
        image: str | None = None,
    ) -> None:
        """A NetworkPolicy, then the pod it covers from its first moment; returns once
        the pod runs. ``role`` (when known) becomes a label; each of ``dirs`` a volume;
        ``image`` (a task's own) replaces the deployment's sandbox image."""
        dirs = sandbox_dirs(dirs)
        cluster = await self._api()
        name = object_name(sandbox_id)
        targets, aliases = await self.network.injector()
        policy = policy_manifest(
            name=name, namespace=self.namespace, sandbox_id=sandbox_id, targets=targets
        )
        pod = pod_manifest(
            name=name,
            namespace=self.namespace,
            sandbox_id=sandbox_id,
            role=role,
            image=image or self.settings.kube_image,
            limits=self.limits,
            uid=sandbox_uid(sandbox_id, self.settings.sandbox_uid_base),
            host_aliases=aliases,
            dirs=dirs,
        )
        try:
            await asyncio.to_thread(cluster.create_policy, self.namespace, policy)
        except BackendError as exc:
            raise self._refused(cluster, exc) from exc
        self.network.created(sandbox_id, targets)
        try:
            try:
                await asyncio.to_thread(cluster.create_pod, self.namespace, pod)
            except BackendError as exc:
                raise self._refused(cluster, exc) from exc
            await self._wait_running(cluster, name)
        except BaseException:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._remove(cluster, sandbox_id))
            raise
        self._dirs[sandbox_id] = dirs

    async def _wait_running(self, cluster: Cluster, name: str) -> None:
        deadline = time.monotonic() + POD_START_TIMEOUT_S
        pause = POLL_FIRST_S
        why = "pending"
        while time.monotonic() < deadline:
            pod = await asyncio.to_thread(cluster.read_pod, self.namespace, name)
            if pod is None:
                raise BackendError(f"pod {name} went away while starting")
            status = pod.status
            phase = getattr(status, "phase", None)
            if phase == "Running":
                return
            if phase in ("Failed", "Succeeded"):
                raise BackendError(f"pod {name} ended while starting: {status.message or phase}")
            for container in getattr(status, "container_statuses", None) or []:
                waiting = container.state.waiting if container.state else None
                if waiting is not None and waiting.reason:
                    why = f"{waiting.reason}: {waiting.message or ''}".strip(": ")
                    if waiting.reason in STUCK:
                        image = self.settings.kube_image
                        raise BackendError(f"pod {name} cannot start ({why}); image {image!r}")
            for condition in getattr(status, "conditions", None) or []:
                if condition.status == "False" and condition.message:
                    why = f"{condition.reason}: {condition.message}"
            await asyncio.sleep(pause)
            pause = min(pause * 2, POLL_MAX_S)
        raise BackendError(f"pod {name} did not start within {POD_START_TIMEOUT_S:.0f}s ({why})")

    async def kill(self, sandbox_id: str) -> None:
        """Delete the pod, then its NetworkPolicy once the pod (and what ran in it) is gone."""
        await self.start()
        if self._cluster is not None:  # else nothing can have been created
            await self._remove(self._cluster, sandbox_id)

    async def _remove(self, cluster: Cluster, sandbox_id: str) -> None:
        name = object_name(sandbox_id)
        self._dirs.pop(sandbox_id, None)
        deleted = await asyncio.to_thread(cluster.delete_pod, self.namespace, name)
        self.sessions.kill(sandbox_id)
        gone = not deleted or await self._wait_gone(cluster, name)
        # Not before: a pod without its policy would have the whole network.
        if gone:
            await asyncio.to_thread(cluster.delete_policy, self.namespace, name)
        else:
            log.warning("pod %s is still terminating; its NetworkPolicy stays", name)
        self.network.forget(sandbox_id)

    async def _wait_gone(self, cluster: Cluster, name: str) -> bool:
        deadline = time.monotonic() + POD_GONE_TIMEOUT_S
        pause = POLL_FIRST_S
        while time.monotonic() < deadline:
            if await asyncio.to_thread(cluster.read_pod, self.namespace, name) is None:
                return True
            await asyncio.sleep(pause)
            pause = min(pause * 2, POLL_MAX_S)
        return False

    async def close(self) -> None:
        await self.sessions.close()
        if self._cluster is not None:
            await asyncio.to_thread(self._cluster.close)
            self._cluster = None
        self._started = False

    # -- commands ---------------------------------------------------------------------
    async def _run(
        self,
        sandbox_id: str,
        argv: Sequence[str],
        stdin: bytes | None,
        env: Mapping[str, str],
        timeout_s: float,
        limits: SandboxLimits | None,
        on_stdout: Sink,
        on_stderr: Sink,
        cwd: str | None = None,
    ) -> Ended:
        if not argv:
            raise BackendError("no command to run")
        dirs = self._dirs.get(sandbox_id, ())
        start_in = sandbox_cwd(cwd, dirs)
        if start_in is None or not start_in.startswith("/"):
            start_in = f"{WORKDIR}/{start_in}" if start_in else WORKDIR
        cluster = await self._api()
        limits = limits or self.limits
        config = {
            "op": "run",
            "argv": list(argv),
            "env": await self.network.command_env(cluster, sandbox_id, env),
            "cwd": start_in,
            "disk": [WORKDIR, *dirs],
            "stdin": len(stdin) if stdin is not None else None,
            "timeout_s": timeout_s,
            "limits": {
                "cpu_seconds": limits.cpu_seconds,
                "memory_mb": limits.memory_mb,
                "file_size_mb": limits.file_size_mb,
                "max_procs": limits.max_procs,
                "disk_mb": limits.disk_mb,
            },
        }
        return await self.sessions.run(
            cluster, sandbox_id, config, stdin or b"", on_stdout, on_stderr, timeout_s + BACKSTOP_S
        )

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
        """Run ``argv`` to its end; keep the head of stdout and the tail of stderr."""
        started = time.monotonic()
        out, err = Head(), Tail()
        ended = await self._run(
            sandbox_id, argv, stdin, env, timeout_s, limits, out.add, err.add, cwd
        )
        code = ended.code
        if ended.status is None:
            if ended.killed:
                err.add(b"\n[sandbox] the sandbox was killed\n")
            elif ended.overran:
                err.add(b"\n[sandbox] the command overran its wall clock; its stream was cut\n")
            else:
                err.add(b"\n[sandbox] the command's stream ended without an exit status\n")
            code = launcher.EXIT_KILLED
        elif code is None:
            raise BackendError(f"exec in {sandbox_id} failed: {ended.status.get('message')}")
        return ExecResult(
            exit_code=code,
            stdout=out.data.decode(errors="replace"),
            stderr=err.text,
            timed_out=_timed_out(ended, err),
            duration_ms=int((time.monotonic() - started) * 1000),
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
        stdin = "".join(line + "\n" for line in stdin_lines).encode()
        loop = asyncio.get_running_loop()
        chunks: asyncio.Queue[bytes | None] = asyncio.Queue()
        err = Tail()

        def on_stdout(data: bytes) -> None:
            loop.call_soon_threadsafe(chunks.put_nowait, data)

        running = asyncio.ensure_future(
            self._run(sandbox_id, argv, stdin, env, timeout_s, limits, on_stdout, err.add)
        )
        # Runs after every chunk the exec's thread scheduled before it returned.
        running.add_done_callback(lambda _: chunks.put_nowait(None))
        pending = b""
        try:
            while (chunk := await chunks.get()) is not None:
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    yield line.decode(errors="replace") + "\n"
            if pending:
                yield pending.decode(errors="replace")
            ended = await running
        finally:
            if not running.done():
                running.cancel()
                await asyncio.wait([running])
        if _timed_out(ended, err):
            raise BackendError(f"command overran its {timeout_s:.0f}s wall clock")
        if ended.status is None:
            why = "was killed" if ended.killed else "lost the command's exit status"
            raise BackendError(f"sandbox {sandbox_id} {why}")
        if ended.code is None:
            raise BackendError(f"exec in {sandbox_id} failed: {ended.status.get('message')}")
        if ended.code == launcher.EXIT_KILLED and err.last_line.startswith(launcher.DISK_NOTE):
            raise BackendError(err.last_line.removeprefix("[sandbox] "))
        if ended.code != 0:
            raise BackendError(f"exit code {ended.code}: {err.text[-2000:]}")

    # -- files ------------------------------------------------------------------------
    def inside_path(self, sandbox_id: str, path: str) -> str:
        return f"{WORKDIR}/{safe_relative_path(path)}"

    def _place(self, sandbox_id: str, path: str) -> tuple[str, str]:
        """(the folder in the pod ``path`` must stay in, the rest of it)."""
        dirs = self._dirs.get(sandbox_id, ())
        checked = sandbox_path(path, dirs)
        if checked.startswith("/"):
            return split_path(checked, dirs)
        return WORKDIR, checked

    async def _file_op(
        self, sandbox_id: str, config: dict[str, Any], data: bytes, on_stdout: Sink
    ) -> None:
        cluster = await self._api()
        err = Tail()
        config = {"root": WORKDIR, **config, "stdin": len(data) if data else None}
        ended = await self.sessions.run(
            cluster, sandbox_id, config, data, on_stdout, err.add, FILE_TIMEOUT_S
        )
        detail = err.text.strip()[-2000:]
        if ended.code == launcher.EXIT_UNSAFE:
            raise UnsafePathError(detail)
        if ended.status is None:
            raise BackendError(f"sandbox {sandbox_id}: {config['op']} did not finish")
        if ended.code != 0:
            raise BackendError(f"sandbox {sandbox_id}: {config['op']} failed: {detail}")

    async def put_file(self, sandbox_id: str, path: str, data: bytes) -> None:
        root, relative = self._place(sandbox_id, path)
        archive = _one_file_tar(relative, data)
        config = {"op": "put", "root": root, "path": relative}
        await self._file_op(sandbox_id, config, archive, Head().add)

    async def get_file(self, sandbox_id: str, path: str) -> bytes:
        root, relative = self._place(sandbox_id, path)
        out = bytearray()
        config = {"op": "get", "root": root, "path": relative}
        await self._file_op(sandbox_id, config, b"", out.extend)
        return _file_from_tar(bytes(out), relative)

    async def snapshot(self, sandbox_id: str, dest: Path) -> None:
        """The pod's working directory, repacked here by ``snapshots.pack``: the same
        files make the same archive on every backend."""
        await asyncio.to_thread(self.root.mkdir, parents=True, exist_ok=True)
        scratch = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="snap-", dir=self.root))
        try:
            raw = scratch / "pod.tar.gz"
            sink = await asyncio.to_thread(raw.open, "wb")
            try:
                config = {"op": "pack", "skip": sorted(SKIPPED_DIRS)}
                await self._file_op(sandbox_id, config, b"", sink.write)
            finally:
                await asyncio.to_thread(sink.close)
            tree = scratch / "tree"
            await asyncio.to_thread(tree.mkdir)
            await asyncio.to_thread(unpack, raw, tree)
            await asyncio.to_thread(pack, tree, dest)
        finally:
            await asyncio.to_thread(shutil.rmtree, scratch, True)

    async def restore(self, sandbox_id: str, archive: Path) -> None:
        data = await asyncio.to_thread(archive.read_bytes)
        await self._file_op(sandbox_id, {"op": "unpack"}, data, Head().add)
