"""The ``e2b`` backend: each sandbox an E2B microVM, driven through the e2b SDK.

The microVM is the isolation. Inside it, every command starts under
``launcher.py`` (sent with the command, so nothing a command leaves behind can
replace it): its own ``/tmp``, PID namespace and session, rlimits, a disk quota on
the working directory, a wall clock that kills the whole tree, and only the
environment it is given. Files travel through envd's file API, relative to a
working directory under the sandbox user's home; a path is resolved inside the
sandbox first, so a symlink a command planted cannot lead out of it. Snapshots are
the working directory's tar, made deterministic here (``archive.py``).

Egress: the sandbox is created able to reach only the injector's host
(``BW_E2B_EGRESS_PROXY_URL``), which every command gets as ``HTTP(S)_PROXY``
unless its environment names a proxy of its own; the model proxy stays direct
through ``NO_PROXY``, so it has to be served from the injector's host.

A sandbox created with absolute directories (``CreateSandbox.dirs``) has them made
at creation, by root, and handed to the sandbox user; files go there as they are
named, the disk quota counts them, and a command may start in one (``cwd``). They
may not overlap the user's home, where the working directory is.

Sandboxes carry our sandbox id (and their directories) in their metadata: after a
restart they are found again by it.

A sandbox starts from the configured template (``BW_E2B_TEMPLATE``), or from one
built from a Harbor task's Dockerfile (``build_image``, ``templates.py``): built
once per environment, its id then the ``image`` the sandbox is created from.
"""

import asyncio
import contextlib
import importlib
import importlib.util
import json
import logging
import shlex
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from benchwright_sandbox_manager.backends.e2b.archive import gunzip, repack
from benchwright_sandbox_manager.backends.e2b.commands import (
    KILLED,
    Ending,
    Output,
    command_line,
    is_ip,
    proxied_env,
    settle,
)
from benchwright_sandbox_manager.backends.e2b.templates import TemplateBuilds
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
from benchwright_sandbox_manager.runtime import launcher_source
from benchwright_shared.contracts import EnvironmentBuild
from benchwright_shared.settings import Settings

if TYPE_CHECKING:
    from e2b import AsyncCommandHandle, AsyncSandbox

log = logging.getLogger(__name__)

LAUNCHER = Path(__file__).resolve().parent / "launcher.py"
# Our sandbox id, in the e2b sandbox's metadata.
META_KEY = "benchwright_sandbox_id"
# Its absolute directories (``CreateSandbox.dirs``), as JSON, when it has any.
META_DIRS = "benchwright_dirs"
# An idle sandbox dies this long after its last command (E2B's own timeout).
IDLE_TTL_S = 3600
LIFETIME_MARGIN_S = 300
# How long past its own wall clock a launcher may take before it is killed from here.
STREAM_GRACE_S = 30.0
# After a kill from here, how long the command's stream may take to end.
END_GRACE_S = 5.0
HELPER_TIMEOUT_S = 300.0
STDIN_CHUNK = 256 * 1024


def _sdk() -> ModuleType:
    try:
        return importlib.import_module("e2b")
    except ImportError as exc:
        raise IsolationUnavailableError(
            f"the e2b sandbox backend needs the e2b SDK: pip install e2b ({exc})"
        ) from exc


def _sdk_errors() -> tuple[type[BaseException], ...]:
    import httpx

    e2b = _sdk()
    return (e2b.SandboxException, e2b.AuthenticationException, httpx.HTTPError, OSError)


@dataclass
class _Box:
    """An e2b sandbox as this backend knows it."""

    sdk: "AsyncSandbox"
    home: str
    workdir: str
    python: str
    # The sandbox user's uid and gid, and the sandbox's own absolute directories.
    ids: str = ""
    dirs: tuple[str, ...] = ()
    # A command has run (or an archive was unpacked): there may be symlinks to check.
    touched: bool = False
    alive_until: float = 0.0


class E2BBackend:
    name = "e2b"

    def __init__(self, root: Path, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.rate_micros_per_s = self.settings.sandbox_rate_e2b_micros
        self.runs_images = False
        self.root = root
        self.limits = SandboxLimits.from_settings(self.settings)
        self._boxes: dict[str, _Box] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        # One file, ``command_limits`` inlined: the sandbox has no Benchwright to import.
        self._launcher = launcher_source(LAUNCHER)
        self.templates = TemplateBuilds(_sdk, self._opts, root / "builds")

    # -- isolation ----------------------------------------------------------------
    @property
    def isolation(self) -> str:
        return "e2b"

    def _refusal(self) -> str | None:
        if not self.settings.e2b_api_key:
            return (
                "the e2b sandbox backend has no API key: set BW_E2B_API_KEY (an E2B API "
                "key, https://e2b.dev/dashboard) or use another sandbox backend"
            )
        if importlib.util.find_spec("e2b") is None:
            return "the e2b sandbox backend needs the e2b SDK: pip install e2b"
        return None

    async def start(self) -> None:
        """Check the settings; nothing is asked of E2B until a sandbox is wanted."""
        refusal = self._refusal()
        if refusal:
            log.info("e2b sandboxes unavailable: %s", refusal)

    def _check(self) -> None:
        refusal = self._refusal()
        if refusal:
            raise IsolationUnavailableError(refusal)

    def _opts(self) -> dict[str, Any]:
        """Connection options for every SDK call (only what is set: the SDK's defaults
        and ``E2B_*`` variables stand in for the rest, never for the API key)."""
        s = self.settings
        given = {
            "api_key": s.e2b_api_key,
            "api_url": s.e2b_api_url,
            "sandbox_url": s.e2b_sandbox_url,
            "domain": s.e2b_domain,
        }
        return {key: value for key, value in given.items() if value}

    def _network(self) -> dict[str, Any]:
        """Nothing out but the injector's host (and DNS only when that host is a name)."""
        deny = [_sdk().ALL_TRAFFIC]
        host = urlsplit(self.settings.e2b_egress_proxy_url or "").hostname
        if not host:
            return {"deny_out": deny}
        network: dict[str, Any] = {"deny_out": deny, "allow_out": [host]}
        if is_ip(host):
            network["dns_servers"] = []
        return network

    # -- sandboxes ----------------------------------------------------------------
    async def build_image(self, build: EnvironmentBuild) -> str:
        """The id of the e2b template built from ``build`` (``templates.py``)."""
        self._check()
        return await self.templates.template_for(build)

    async def create(
        self, sandbox_id: str, *, dirs: Sequence[str] = (), image: str | None = None
    ) -> None:
        self._check()
        dirs = sandbox_dirs(dirs)
        e2b = _sdk()
        metadata = {META_KEY: sandbox_id}
        if dirs:
            metadata[META_DIRS] = json.dumps(dirs)
        template = image or self.settings.e2b_template
        try:
            sdk = await e2b.AsyncSandbox.create(
                template=template,
                timeout=IDLE_TTL_S,
                metadata=metadata,
                network=self._network(),
                **self._opts(),
            )
        except _sdk_errors() as exc:
            raise BackendError(f"e2b could not create a sandbox: {exc}") from exc
        try:
            box = await self._setup(sdk, template)
            await self._make_dirs(box, dirs)
        except BaseException:
            with contextlib.suppress(*_sdk_errors()):
                await sdk.kill()
            raise
        box.alive_until = time.monotonic() + IDLE_TTL_S
        self._boxes[sandbox_id] = box

    async def _setup(self, sdk: "AsyncSandbox", template: str | None = None) -> _Box:
        """The working directory (made here) and the interpreter the launcher runs on."""
        script = (
            'cd "$HOME" && mkdir -p work .bw-tmp && pwd -P && cd work && pwd -P'
            ' && command -v python3 && echo "$(id -u):$(id -g)"'
        )
        lines = (await self._helper(sdk, script, None)).splitlines()
        if len(lines) != 4:
            raise BackendError(
                f"the e2b template {template or self.settings.e2b_template!r} needs "
                f"python3 and a writable home (found {lines})"
            )
        home, workdir, python, ids = lines
        return _Box(sdk=sdk, home=home, workdir=workdir, python=python, ids=ids)

    async def _make_dirs(self, box: _Box, dirs: tuple[str, ...]) -> None:
        """Make the sandbox's own directories, as root, and hand them to its user."""
        for place in dirs:
            if is_within(place, box.home) or is_within(box.home, place):
                raise UnsafePathError(
                    f"directory {place!r} would meet the sandbox user's home ({box.home})"
                )
        box.dirs = dirs
        if not dirs:
            return
        quoted = shlex.join(dirs)
        # Recursive: a template built from a Dockerfile may have put files there as root.
        script = f"mkdir -p -- {quoted} && chown -R -- {shlex.quote(box.ids)} {quoted}"
        await self._helper(box.sdk, script, None, user="root")

    async def _box(self, sandbox_id: str) -> _Box:
        box = self._boxes.get(sandbox_id)
        if box is not None:
            return box
        self._check()
        async with self._locks.setdefault(sandbox_id, asyncio.Lock()):
            box = self._boxes.get(sandbox_id)
            if box is None:
                box = await self._reconnect(sandbox_id)
                self._boxes[sandbox_id] = box
        return box

    async def _listed(self, sandbox_id: str) -> Any:
        """The running e2b sandbox carrying ``sandbox_id`` in its metadata (its listing)."""
        e2b = _sdk()
        query = e2b.SandboxQuery(metadata={META_KEY: sandbox_id}, state=[e2b.SandboxState.RUNNING])
        try:
            found = await e2b.AsyncSandbox.list(query=query, **self._opts()).next_items()
        except _sdk_errors() as exc:
            raise BackendError(f"e2b could not list sandboxes: {exc}") from exc
        return found[0] if found else None

    async def _find(self, sandbox_id: str) -> str | None:
        listed = await self._listed(sandbox_id)
        return str(listed.sandbox_id) if listed is not None else None

    async def _reconnect(self, sandbox_id: str) -> _Box:
        """A sandbox this process did not create (it restarted since): find it again."""
        listed = await self._listed(sandbox_id)
        if listed is None:
            raise BackendError(f"sandbox {sandbox_id} has no running e2b sandbox")
        e2b_id = str(listed.sandbox_id)
        try:
            sdk = await _sdk().AsyncSandbox.connect(e2b_id, **self._opts())
        except _sdk_errors() as exc:
            raise BackendError(f"e2b could not connect to sandbox {e2b_id}: {exc}") from exc
        box = await self._setup(sdk)
        box.touched = True
        box.dirs = _listed_dirs(listed)
        return box

    async def kill(self, sandbox_id: str) -> None:
        box = self._boxes.pop(sandbox_id, None)
        self._locks.pop(sandbox_id, None)
        if self._refusal() is not None:
            return  # nothing was created
        e2b_id = box.sdk.sandbox_id if box is not None else await self._find(sandbox_id)
        if e2b_id is None:
            return
        try:
            await _sdk().AsyncSandbox.kill(e2b_id, **self._opts())
        except _sdk_errors() as exc:
            raise BackendError(f"e2b could not kill sandbox {e2b_id}: {exc}") from exc

    async def close(self) -> None:
        """Forget the sandboxes (they keep running until killed or idle past their TTL)."""
        self._boxes.clear()

    async def _keep_alive(self, box: _Box, seconds: float) -> None:
        """Push E2B's own timeout past a command that may run ``seconds``."""
        now = time.monotonic()
        if box.alive_until - now >= max(seconds + LIFETIME_MARGIN_S, IDLE_TTL_S / 2):
            return
        ttl = int(max(IDLE_TTL_S, seconds + LIFETIME_MARGIN_S))
        try:
            await box.sdk.set_timeout(ttl)
        except _sdk_errors() as exc:
            raise BackendError(
                f"e2b could not keep sandbox {box.sdk.sandbox_id} up: {exc}"
            ) from exc
        box.alive_until = now + ttl

    # -- files --------------------------------------------------------------------
    def inside_path(self, sandbox_id: str, path: str) -> str:
        relative = safe_relative_path(path)
        box = self._boxes.get(sandbox_id)
        if box is None:
            raise BackendError(f"sandbox {sandbox_id} is not known here yet")
        return f"{box.workdir}/{relative}"

    async def _resolve(self, box: _Box, path: str) -> str:
        """``path``'s absolute path in the sandbox, symlinks followed there; refused when
        it leads out of the working directory (or the sandbox's directory it names)."""
        checked = sandbox_path(path, box.dirs)
        if checked.startswith("/"):
            folder, relative = split_path(checked, box.dirs)
        else:
            folder, relative = box.workdir, checked
        if not box.touched:
            return f"{folder}/{relative}"
        script = f"pwd -P && realpath -m -- {shlex.quote(relative)}"
        base, _, resolved = (await self._helper(box.sdk, script, folder)).partition("\n")
        resolved = resolved.removesuffix("\n")
        if not resolved.startswith(base + "/"):
            raise UnsafePathError(f"path {path!r} escapes the sandbox")
        return resolved

    async def put_file(self, sandbox_id: str, path: str, data: bytes) -> None:
        box = await self._box(sandbox_id)
        target = await self._resolve(box, path)
        try:
            await box.sdk.files.write(target, data, use_octet_stream=True)
        except _sdk_errors() as exc:
            raise BackendError(f"cannot write {path!r} in sandbox {sandbox_id}: {exc}") from exc

    async def get_file(self, sandbox_id: str, path: str) -> bytes:
        box = await self._box(sandbox_id)
        target = await self._resolve(box, path)
        try:
            return bytes(await box.sdk.files.read(target, format="bytes"))
        except _sdk().FileNotFoundException as exc:
            raise FileNotFoundError(f"no file {path!r} in sandbox {sandbox_id}") from exc
        except _sdk_errors() as exc:
            raise BackendError(f"cannot read {path!r} in sandbox {sandbox_id}: {exc}") from exc

    async def snapshot(self, sandbox_id: str, dest: Path) -> None:
        box = await self._box(sandbox_id)
        remote = f"{box.home}/.bw-tmp/snapshot-{uuid.uuid4().hex}.tar"
        local = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.tar")
        try:
            # Exit 1 is "a file changed as it was read": a command still running.
            await self._helper(
                box.sdk, f"tar -cf {shlex.quote(remote)} . || [ $? -eq 1 ]", box.workdir
            )
            try:
                stream = await box.sdk.files.read(remote, format="stream")
                async with stream:
                    with await asyncio.to_thread(local.open, "wb") as out:
                        async for chunk in stream:
                            out.write(chunk)
            except _sdk_errors() as exc:
                raise BackendError(f"cannot fetch sandbox {sandbox_id}'s files: {exc}") from exc
            scratch = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.d")
            await asyncio.to_thread(repack, local, dest, scratch)
        finally:
            local.unlink(missing_ok=True)
            with contextlib.suppress(BackendError):
                await self._helper(box.sdk, f"rm -f {shlex.quote(remote)}", None)

    async def restore(self, sandbox_id: str, archive: Path) -> None:
        box = await self._box(sandbox_id)
        remote = f"{box.home}/.bw-tmp/restore-{uuid.uuid4().hex}.tar"
        local = archive.with_name(f".{archive.name}.{uuid.uuid4().hex}.tar")
        box.touched = True  # an archive may hold symlinks
        try:
            await asyncio.to_thread(gunzip, archive, local)
            try:
                with await asyncio.to_thread(local.open, "rb") as data:
                    await box.sdk.files.write(remote, data)
            except _sdk_errors() as exc:
                raise BackendError(f"cannot send the snapshot to {sandbox_id}: {exc}") from exc
            await self._helper(box.sdk, f"tar -xf {shlex.quote(remote)}", box.workdir)
        finally:
            local.unlink(missing_ok=True)
            with contextlib.suppress(BackendError):
                await self._helper(box.sdk, f"rm -f {shlex.quote(remote)}", None)

    # -- commands -----------------------------------------------------------------
    async def _helper(
        self, sdk: "AsyncSandbox", script: str, cwd: str | None, user: str | None = None
    ) -> str:
        """Run one of this backend's own shell commands (as the sandbox user, unless
        ``user`` says otherwise); its stdout, or ``BackendError``."""
        e2b = _sdk()
        try:
            result = await sdk.commands.run(script, cwd=cwd, timeout=HELPER_TIMEOUT_S, user=user)
        except e2b.CommandExitException as exc:
            detail = (exc.stderr or exc.stdout or "").strip()[-500:]
            raise BackendError(f"{script!r} failed in the sandbox: {detail}") from exc
        except _sdk_errors() as exc:
            raise BackendError(f"e2b sandbox {sdk.sandbox_id}: {exc}") from exc
        return str(result.stdout)

    async def _start(
        self,
        sandbox_id: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        timeout_s: float,
        limits: SandboxLimits,
        nonce: str,
        *,
        stdin: bool,
        on_stdout: Callable[[str], None],
        on_stderr: Callable[[str], None],
        cwd: str | None = None,
    ) -> "AsyncCommandHandle[None]":
        if not argv:
            raise BackendError("no command to run")
        box = await self._box(sandbox_id)
        start_in = sandbox_cwd(cwd, box.dirs)
        if start_in is not None and not start_in.startswith("/"):
            start_in = f"{box.workdir}/{start_in}"
        box.touched = True
        await self._keep_alive(box, timeout_s)
        # Values travel in envd's request, never on the command line; the launcher
        # keeps these names and drops whatever else envd's environment holds.
        envs = proxied_env(env, self.settings.e2b_egress_proxy_url)
        command = command_line(
            self._launcher,
            box.python,
            box.workdir,
            argv,
            sorted(envs),
            timeout_s,
            limits,
            nonce,
            cwd=start_in,
            dirs=box.dirs,
        )
        try:
            handle: AsyncCommandHandle[None] = await box.sdk.commands.run(
                command,
                background=True,
                envs=envs,
                cwd=box.workdir,
                stdin=stdin,
                on_stdout=on_stdout,
                on_stderr=on_stderr,
                timeout=0,  # the launcher keeps the wall clock; _finish the backstop
                retain_output=False,
            )
        except _sdk_errors() as exc:
            raise BackendError(f"cannot start a command in sandbox {sandbox_id}: {exc}") from exc
        return handle

    async def _feed(self, handle: "AsyncCommandHandle[None]", data: bytes) -> None:
        # The command may end without reading it all: what it leaves is dropped.
        with contextlib.suppress(*_sdk_errors()):
            for at in range(0, len(data), STDIN_CHUNK):
                await handle.send_stdin(data[at : at + STDIN_CHUNK])
            await handle.close_stdin()

    async def _finish(self, handle: "AsyncCommandHandle[None]", timeout_s: float) -> Ending:
        """Wait for the command's end; past the launcher's own wall clock, kill it."""
        # ``asyncio.wait`` leaves the SDK's own reading task running when it times out.
        ended = asyncio.ensure_future(handle.wait())
        if not (await asyncio.wait({ended}, timeout=timeout_s + STREAM_GRACE_S))[0]:
            await self._stop(handle, ended)
            return Ending(KILLED, timed_out=True)
        try:
            return Ending(ended.result().exit_code)
        except _sdk().CommandExitException as exc:
            return Ending(exc.exit_code if exc.exit_code >= 0 else KILLED)
        except Exception as exc:  # an SDK error, or a stream that ended without an end
            # The sandbox went away (killed, or past E2B's timeout) under the command.
            return Ending(KILLED, note=f"the e2b sandbox went away: {exc}")

    async def _stop(
        self, handle: "AsyncCommandHandle[None]", ended: "asyncio.Future[Any] | None" = None
    ) -> None:
        """Kill the launcher (its command's init dies with it, and the tree with that)."""
        ended = ended or asyncio.ensure_future(handle.wait())
        with contextlib.suppress(Exception):
            await handle.kill()
        await asyncio.wait({ended}, timeout=END_GRACE_S)
        if not ended.done():
            with contextlib.suppress(Exception):
                await handle.disconnect()
        ended.add_done_callback(_given_up)

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
        limits = limits or self.limits
        started = time.monotonic()
        nonce = uuid.uuid4().hex
        output = Output()
        handle = await self._start(
            sandbox_id,
            argv,
            env,
            timeout_s,
            limits,
            nonce,
            stdin=stdin is not None,
            on_stdout=output.out,
            on_stderr=output.err,
            cwd=cwd,
        )
        feeding = asyncio.create_task(self._feed(handle, stdin)) if stdin is not None else None
        try:
            ending = await self._finish(handle, timeout_s)
        except asyncio.CancelledError:  # nobody waits for it any more: the command goes
            await _quietly(self._stop(handle))
            raise
        finally:
            if feeding is not None:
                feeding.cancel()
        stderr = settle(output, ending, nonce, limits)
        return ExecResult(
            exit_code=ending.exit_code,
            stdout=output.stdout.decode(errors="replace"),
            stderr=stderr,
            timed_out=ending.timed_out,
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
        limits = limits or self.limits
        nonce = uuid.uuid4().hex
        output = Output()
        chunks: asyncio.Queue[str | None] = asyncio.Queue()
        handle = await self._start(
            sandbox_id,
            argv,
            env,
            timeout_s,
            limits,
            nonce,
            stdin=True,
            on_stdout=chunks.put_nowait,
            on_stderr=output.err,
        )
        data = "".join(line + "\n" for line in stdin_lines).encode()
        feeding = asyncio.create_task(self._feed(handle, data))
        finishing = asyncio.create_task(self._finish(handle, timeout_s))
        finishing.add_done_callback(lambda _: chunks.put_nowait(None))
        try:
            pending = ""
            while (chunk := await chunks.get()) is not None:
                *lines, pending = (pending + chunk).split("\n")
                for line in lines:
                    yield line + "\n"
            if pending:
                yield pending
            ending = await finishing
        finally:
            feeding.cancel()
            if not finishing.done():  # the caller stopped reading: the command goes
                finishing.cancel()
                await _quietly(self._stop(handle))
        stderr = settle(output, ending, nonce, limits)
        if ending.timed_out:
            raise BackendError(f"command overran its {timeout_s:.0f}s wall clock")
        if ending.note:
            raise BackendError(ending.note)
        if ending.exit_code != 0:
            raise BackendError(f"exit code {ending.exit_code}: {stderr[-2000:]}")


def _listed_dirs(listed: Any) -> tuple[str, ...]:
    """The directories a sandbox's metadata names (none when it names none, or garbage)."""
    try:
        dirs = json.loads((getattr(listed, "metadata", None) or {}).get(META_DIRS) or "[]")
        return sandbox_dirs([str(place) for place in dirs])
    except (ValueError, TypeError, UnsafePathError):
        return ()


def _given_up(ended: "asyncio.Future[Any]") -> None:
    if not ended.cancelled():
        ended.exception()  # retrieved: nobody waits for that command any more


async def _quietly(step: Awaitable[None]) -> None:
    with contextlib.suppress(Exception):
        await step
