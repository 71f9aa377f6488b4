"""A fake of E2B on loopback: its REST API and envd, each sandbox a real ``local`` one.

Only what the e2b SDK calls for the ``e2b`` backend:

* REST, behind ``X-API-Key``: ``POST /v2/sandboxes``, ``GET /v2/sandboxes`` (by
  metadata), ``POST /v2/sandboxes/{id}/connect``, ``POST /sandboxes/{id}/timeout``,
  ``DELETE /sandboxes/{id}``, and the template build API (``e2b_templates.py``: a
  sandbox may start from a template built there once its build is ready);
* envd, behind the sandbox's ``X-Access-Token`` and named by the ``E2b-Sandbox-Id``
  header as E2B's own proxy does: ``GET /health``, ``GET /files``, ``POST /files``
  (octet-stream) and the Connect RPC service ``process.Process`` (``Start`` streaming,
  ``SendInput``, ``CloseStdin``, ``SendSignal``, ``List``), served with the SDK's own
  generated classes.

Nothing runs on this host directly: each fake sandbox is a sandbox of the ``local``
backend (bubblewrap) and each ``Start`` one command in it, so the conformance
suite's isolation checks meet real isolation while it proves the e2b adapter. The
sandbox user's home is the local sandbox's ``/work``; the file API serves nothing
else but the VM's ``vm_dirs``. An address a sandbox's network rules deny leads
nowhere: the fake points it at a closed port before the local backend builds its
forwarders.

The VM's root filesystem is bubblewrap's, read-only: what root may make there is
laid out in advance (``vm_dirs``: each local sandbox has them, empty and the user's).
A process started as ``root`` is recorded (``as_root``) and runs as the user, who can
do there what the backend asks of root: ``mkdir -p`` and ``chown`` to itself.
"""

import asyncio
import base64
import contextlib
import datetime
import ipaddress
import os
import signal
import uuid
from collections.abc import AsyncIterator, Coroutine, Generator, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import uvicorn
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.request import Headers, RequestContext
from e2b.envd.client_shared import ENVD_JSON_CODEC
from e2b.envd.process import process_connect, process_pb
from protobuf import Oneof
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from benchwright_sandbox_manager.backends import get_backend
from benchwright_sandbox_manager.backends.local import LocalBackend
from benchwright_sandbox_manager.backends.processes import kill_group
from benchwright_sandbox_manager.ports import SandboxLimits
from benchwright_shared.settings import Settings
from tests.sandbox_manager.fakes.e2b_templates import FakeTemplates

ENVD_VERSION = "0.6.7"
HOME = "/work"
# Variables naming an address a command may connect to.
URL_VARS = ("BW_MODEL_PROXY_URL", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
# Where a denied address leads: nothing listens on port 1.
NOWHERE = "127.0.0.1:1"
DRAIN_GRACE_S = 2.0
CHUNK = 1 << 16


class _Outside(Exception):
    """A path the fake's file API does not serve (outside the user's home)."""


@dataclass
class FakeSandbox:
    """One fake e2b sandbox, and how it was created."""

    sandbox_id: str
    local_id: str
    template: str
    metadata: dict[str, str]
    env_vars: dict[str, str]
    # The request's ``network`` and ``allowInternetAccess`` as sent (None when absent).
    network: dict[str, Any] | None
    allow_internet_access: bool | None
    access_token: str
    timeout_s: int | None
    started_at: datetime.datetime = field(default_factory=lambda: datetime.datetime.now(UTC))
    killed: bool = False
    processes: dict[int, asyncio.subprocess.Process] = field(default_factory=dict)

    def allows(self, host: str) -> bool:
        """Whether the sandbox's network rules let it reach ``host``."""
        rules = self.network or {}
        if _matches(host, rules.get("allowOut") or []):
            return True
        deny = list(rules.get("denyOut") or [])
        if self.allow_internet_access is False:
            deny.append("0.0.0.0/0")
        return not _matches(host, deny)

    def info(self) -> dict[str, Any]:
        return {
            "templateID": self.template,
            "sandboxID": self.sandbox_id,
            "clientID": "fake",
            "envdVersion": ENVD_VERSION,
            "envdAccessToken": self.access_token,
        }


def _matches(host: str, entries: list[str]) -> bool:
    """Whether ``host`` (a name or an address) is among ``entries`` (names, addresses,
    CIDR blocks); ``0.0.0.0/0`` is all traffic, names included."""
    if "0.0.0.0/0" in entries or host in entries:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    for entry in entries:
        with contextlib.suppress(ValueError):
            if address in ipaddress.ip_network(entry, strict=False):
                return True
    return False


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"code": status, "message": message}, status_code=status)


class _NoSignals(uvicorn.Server):
    """uvicorn inside the test's event loop: pytest keeps its own signal handlers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        yield


class FakeE2B:
    """The fake, serving both the REST API and envd at ``url``."""

    def __init__(
        self,
        root: Path,
        api_key: str,
        local_settings: Settings | None = None,
        vm_dirs: Sequence[str] = (),
    ) -> None:
        self.api_key = api_key
        self.vm_dirs = tuple(vm_dirs)
        # Every command a process was started as root for, in order.
        self.as_root: list[str] = []
        settings = local_settings or Settings(data_dir=root / "data")
        backend = get_backend("local", root / "sandboxes", settings)
        assert isinstance(backend, LocalBackend)
        self.local = backend
        self.limits = SandboxLimits.from_settings(settings)
        self.sandboxes: dict[str, FakeSandbox] = {}
        # Every sandbox ever created here, killed ones too: (id, metadata).
        self.created: list[tuple[str, dict[str, str]]] = []
        # The template each of them started from, in the same order.
        self.started_from: list[str] = []
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._later: set[asyncio.Task[None]] = set()
        self._rpc = process_connect.ProcessASGIApplication(
            _ProcessService(self), codecs=[ENVD_JSON_CODEC]
        )
        self.templates = FakeTemplates(lambda: self.url, self._authorized)
        self._http = Starlette(
            routes=[
                *self.templates.routes(),
                Route("/v2/sandboxes", self._create, methods=["POST"]),
                Route("/v2/sandboxes", self._list, methods=["GET"]),
                Route("/v2/sandboxes/{sandbox_id}/connect", self._connect, methods=["POST"]),
                Route("/sandboxes/{sandbox_id}/timeout", self._timeout, methods=["POST"]),
                Route("/sandboxes/{sandbox_id}", self._kill, methods=["DELETE"]),
                Route("/health", self._health, methods=["GET"]),
                Route("/files", self._read, methods=["GET"]),
                Route("/files", self._write, methods=["POST"]),
            ]
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> "FakeE2B":
        await self.local.start()
        config = uvicorn.Config(
            self._app,
            host="127.0.0.1",
            port=0,
            interface="asgi3",
            lifespan="off",
            log_level="warning",
            # A process stream still open when the test ends must not hold the
            # shutdown (uvicorn waits for open connections without this).
            timeout_graceful_shutdown=2,
        )
        self._server = _NoSignals(config)
        self._task = asyncio.create_task(self._server.serve())
        while not self._server.started:
            if self._task.done():
                self._task.result()
            await asyncio.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        for box in list(self.sandboxes.values()):
            await self._drop(box)
        await asyncio.gather(*self._later, return_exceptions=True)
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await self._task
        await self.local.close()

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/process.Process/"):
            await self._rpc(scope, receive, send)  # type: ignore[arg-type]
        else:
            await self._http(scope, receive, send)

    async def _drop(self, box: FakeSandbox) -> None:
        box.killed = True
        self.sandboxes.pop(box.sandbox_id, None)
        await self.local.kill(box.local_id)

    # -- REST -----------------------------------------------------------------------
    def _authorized(self, request: Request) -> bool:
        return request.headers.get("x-api-key") == self.api_key

    def _known(self, request: Request) -> FakeSandbox | None:
        return self.sandboxes.get(request.path_params["sandbox_id"])

    async def _create(self, request: Request) -> Response:
        if not self._authorized(request):
            return _error(401, "Invalid API key")
        body = await request.json()
        refusal = self.templates.refusal(body["templateID"])
        if refusal is not None:
            return _error(400, refusal)
        sandbox_id = f"i{uuid.uuid4().hex[:19]}"
        box = FakeSandbox(
            sandbox_id=sandbox_id,
            local_id=f"e2b-{sandbox_id}",
            template=body["templateID"],
            metadata=dict(body.get("metadata") or {}),
            env_vars=dict(body.get("envVars") or {}),
            network=body.get("network"),
            allow_internet_access=body.get("allowInternetAccess"),
            access_token=uuid.uuid4().hex,
            timeout_s=body.get("timeout"),
        )
        await self.local.create(box.local_id, dirs=self.vm_dirs)
        self.sandboxes[sandbox_id] = box
        # What the template's build copied in (it must lie in the VM's dirs or home).
        for path, data in self.templates.files_of(box.template).items():
            target = self.host_path(box, path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            folder = next(f for f in self._places(box).values() if target.is_relative_to(f))
            self.local._own(target, box.local_id, base=folder)
        self.created.append((sandbox_id, dict(box.metadata)))
        self.started_from.append(box.template)
        return JSONResponse(box.info(), status_code=201)

    async def _list(self, request: Request) -> Response:
        if not self._authorized(request):
            return _error(401, "Invalid API key")
        wanted = dict(parse_qsl(request.query_params.get("metadata", "")))
        listed = []
        for box in self.sandboxes.values():
            if any(box.metadata.get(key) != value for key, value in wanted.items()):
                continue
            ends = box.started_at + datetime.timedelta(seconds=box.timeout_s or 300)
            listed.append(
                {
                    **box.info(),
                    "startedAt": box.started_at.isoformat(),
                    "endAt": ends.isoformat(),
                    "cpuCount": 2,
                    "memoryMB": 512,
                    "diskSizeMB": 4096,
                    "state": "running",
                    "metadata": box.metadata,
                }
            )
        return JSONResponse(listed)

    async def _connect(self, request: Request) -> Response:
        if not self._authorized(request):
            return _error(401, "Invalid API key")
        box = self._known(request)
        if box is None:
            return _error(404, "sandbox not found")
        return JSONResponse(box.info())

    async def _timeout(self, request: Request) -> Response:
        if not self._authorized(request):
            return _error(401, "Invalid API key")
        box = self._known(request)
        if box is None:
            return _error(404, "sandbox not found")
        box.timeout_s = int((await request.json())["timeout"])
        return Response(status_code=204)

    async def _kill(self, request: Request) -> Response:
        if not self._authorized(request):
            return _error(401, "Invalid API key")
        box = self._known(request)
        if box is None:
            return _error(404, "sandbox not found")
        await self._drop(box)
        return Response(status_code=204)

    # -- envd: who is asking ----------------------------------------------------------
    def envd_sandbox(self, headers: Any) -> FakeSandbox:
        """The sandbox an envd request is for; ``LookupError`` or ``PermissionError``."""
        sandbox_id = headers.get("e2b-sandbox-id", "")
        box = self.sandboxes.get(sandbox_id)
        if box is None:
            raise LookupError(f"The sandbox {sandbox_id} was not found")
        if headers.get("x-access-token") != box.access_token:
            raise PermissionError("invalid access token")
        return box

    def _user(self, headers: Any, *, root: bool = False) -> str:
        """Who a request is for: ``user``, or (``root``: for a process) ``root``."""
        encoded = headers.get("authorization", "").removeprefix("Basic ")
        user = base64.b64decode(encoded).decode().partition(":")[0] if encoded else "user"
        if user != "user" and not (root and user == "root"):
            raise PermissionError(f"the fake runs everything as 'user', not {user!r}")
        return user

    def _envd(self, request: Request) -> FakeSandbox | Response:
        try:
            return self.envd_sandbox(request.headers)
        except LookupError as exc:
            return _error(502, str(exc))
        except PermissionError as exc:
            return _error(401, str(exc))

    async def _health(self, request: Request) -> Response:
        box = self._envd(request)
        return box if isinstance(box, Response) else Response(status_code=204)

    # -- envd: files --------------------------------------------------------------------
    def _places(self, box: FakeSandbox) -> dict[str, Path]:
        """What the file API serves: the user's home and the VM's dirs, to their folders."""
        return {HOME: self.local.workdir(box.local_id), **self.local.dir_mounts(box.local_id)}

    def host_path(self, box: FakeSandbox, path: str) -> Path:
        """Where ``path`` (as the sandbox sees it, symlinks followed there) is on this host."""
        base = self._places(box)
        if not path.startswith("/"):
            path = f"{HOME}/{path}"
        todo = list(PurePosixPath(path).parts[1:])
        at: list[str] = []
        hops = 0
        while todo:
            part = todo.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                at = at[:-1]
                continue
            here = _on_host(base, [*at, part])
            if here is not None and here.is_symlink():
                hops += 1
                if hops > 40:
                    raise _Outside(f"{path}: too many symlinks")
                link = PurePosixPath(os.readlink(here))
                if link.is_absolute():
                    at = []
                todo = [*link.parts[1 if link.is_absolute() else 0 :], *todo]
                continue
            at.append(part)
        found = _on_host(base, at)
        if found is None:
            raise _Outside(f"the fake serves only {sorted(base)} (the user's home), not {path}")
        return found

    async def _read(self, request: Request) -> Response:
        box = self._envd(request)
        if isinstance(box, Response):
            return box
        try:
            self._user(request.headers)
            target = self.host_path(box, request.query_params["path"])
            data = await asyncio.to_thread(target.read_bytes)
        except PermissionError as exc:
            return _error(401, str(exc))
        except _Outside as exc:
            return _error(400, str(exc))
        except (FileNotFoundError, NotADirectoryError):
            return _error(404, f"file {request.query_params['path']} not found")
        except IsADirectoryError:
            return _error(400, f"{request.query_params['path']} is a directory")
        return Response(data, media_type="application/octet-stream")

    async def _write(self, request: Request) -> Response:
        box = self._envd(request)
        if isinstance(box, Response):
            return box
        if request.headers.get("content-type") != "application/octet-stream":
            return _error(400, "the fake takes octet-stream uploads only")
        path = request.query_params["path"]
        try:
            self._user(request.headers)
            target = self.host_path(box, path)
        except PermissionError as exc:
            return _error(401, str(exc))
        except _Outside as exc:
            return _error(400, str(exc))
        target.parent.mkdir(parents=True, exist_ok=True)
        with await asyncio.to_thread(target.open, "wb") as out:
            async for chunk in request.stream():
                out.write(chunk)
        # The sandbox user owns what envd writes for it.
        folder = next(f for f in self._places(box).values() if target.is_relative_to(f))
        self.local._own(target, box.local_id, base=folder)
        return JSONResponse([{"name": target.name, "type": "file", "path": path}])

    # -- envd: processes ---------------------------------------------------------------
    def command_env(self, box: FakeSandbox, envs: dict[str, str]) -> dict[str, str]:
        """What envd gives a process: its own variables, the sandbox's, the request's;
        each address the sandbox may not reach pointed nowhere."""
        env = {
            "E2B_SANDBOX": "true",
            "E2B_SANDBOX_ID": box.sandbox_id,
            "USER": "user",
            **box.env_vars,
            **envs,
        }
        for var in URL_VARS:
            with contextlib.suppress(ValueError):
                parts = urlsplit(env.get(var, ""))
                if parts.hostname and not box.allows(parts.hostname):
                    env[var] = urlunsplit(parts._replace(netloc=NOWHERE))
        return env

    async def spawn(
        self, box: FakeSandbox, config: process_pb.ProcessConfig, stdin: bool
    ) -> asyncio.subprocess.Process:
        argv = [config.cmd, *config.args]
        cwd = config.cwd if config.has_field("cwd") and config.cwd else HOME
        if not cwd.startswith("/"):
            cwd = f"{HOME}/{cwd}"
        if cwd != HOME:  # the local backend starts every command in /work
            argv = ["env", "-C", cwd, "--", *argv]
        proc = await self.local._start_command(
            box.local_id,
            argv,
            self.command_env(box, dict(config.envs)),
            asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            self.limits,
        )
        box.processes[proc.pid] = proc
        return proc

    def later(self, step: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(step)
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    async def reap(self, box: FakeSandbox, proc: asyncio.subprocess.Process) -> None:
        await proc.wait()
        box.processes.pop(proc.pid, None)
        await self.local.bubblewrap.settle(proc)

    def process(self, headers: Headers, selector: process_pb.ProcessSelector | None) -> Any:
        try:
            box = self.envd_sandbox(headers)
        except LookupError as exc:
            raise ConnectError(Code.UNAVAILABLE, str(exc)) from None
        except PermissionError as exc:
            raise ConnectError(Code.UNAUTHENTICATED, str(exc)) from None
        match selector.selector if selector is not None else None:
            case Oneof(field="pid", value=pid) if pid in box.processes:
                return box.processes[pid]
        raise ConnectError(Code.NOT_FOUND, "process not found")


def _on_host(places: dict[str, Path], parts: list[str]) -> Path | None:
    """The host path of ``/<parts>`` when it lies in one of ``places`` (the user's home,
    ``/work``, and the VM's dirs)."""
    for inside, folder in places.items():
        top = inside.strip("/").split("/")
        if parts[: len(top)] == top:
            return folder.joinpath(*parts[len(top) :])
    return None


def _event(name: str, value: Any) -> process_pb.StartResponse:
    # The generated types name each oneof member's literal; built by name here.
    oneof: Any = Oneof(name, value)
    return process_pb.StartResponse(event=process_pb.ProcessEvent(event=oneof))


class _ProcessService(process_connect.Process):
    """envd's ``process.Process``: each process one command in the local sandbox."""

    def __init__(self, fake: FakeE2B) -> None:
        self.fake = fake

    async def start(
        self,
        request: process_pb.StartRequest,
        ctx: RequestContext[process_pb.StartRequest, process_pb.StartResponse],
        /,
    ) -> AsyncIterator[process_pb.StartResponse]:
        headers = ctx.request_headers
        try:
            box = self.fake.envd_sandbox(headers)
            if self.fake._user(headers, root=True) == "root" and request.process is not None:
                self.fake.as_root.append(" ".join([request.process.cmd, *request.process.args]))
        except LookupError as exc:
            raise ConnectError(Code.UNAVAILABLE, str(exc)) from None
        except PermissionError as exc:
            raise ConnectError(Code.UNAUTHENTICATED, str(exc)) from None
        if request.process is None:
            raise ConnectError(Code.INVALID_ARGUMENT, "no process")
        proc = await self.fake.spawn(box, request.process, request.stdin)
        try:
            yield _event("start", process_pb.ProcessEvent.StartEvent(pid=proc.pid))
            async for name, chunk in _outputs(proc):
                output: Any = Oneof(name, chunk)
                yield _event("data", process_pb.ProcessEvent.DataEvent(output=output))
            code = await proc.wait()
        finally:
            if proc.returncode is None:
                # The client went away; envd keeps the process, until it ends.
                self.fake.later(self.fake.reap(box, proc))
            else:
                await self.fake.reap(box, proc)
        if box.killed:
            raise ConnectError(Code.UNAVAILABLE, f"The sandbox {box.sandbox_id} was not found")
        if code >= 0:
            end = process_pb.ProcessEvent.EndEvent(
                exit_code=code, exited=True, status=f"exit status {code}"
            )
        else:
            status = f"signal: {signal.Signals(-code).name.removeprefix('SIG').lower()}"
            end = process_pb.ProcessEvent.EndEvent(exit_code=-1, exited=False, status=status)
        yield _event("end", end)

    async def send_input(
        self,
        request: process_pb.SendInputRequest,
        ctx: RequestContext[process_pb.SendInputRequest, process_pb.SendInputResponse],
        /,
    ) -> process_pb.SendInputResponse:
        proc = self.fake.process(ctx.request_headers, request.process)
        match request.input.input if request.input is not None else None:
            case Oneof(field="stdin", value=data):
                if proc.stdin is None or proc.stdin.is_closing():
                    raise ConnectError(Code.FAILED_PRECONDITION, "stdin is closed")
                proc.stdin.write(data)
                with contextlib.suppress(ConnectionError):
                    await proc.stdin.drain()
        return process_pb.SendInputResponse()

    async def close_stdin(
        self,
        request: process_pb.CloseStdinRequest,
        ctx: RequestContext[process_pb.CloseStdinRequest, process_pb.CloseStdinResponse],
        /,
    ) -> process_pb.CloseStdinResponse:
        proc = self.fake.process(ctx.request_headers, request.process)
        if proc.stdin is not None:
            proc.stdin.close()
        return process_pb.CloseStdinResponse()

    async def send_signal(
        self,
        request: process_pb.SendSignalRequest,
        ctx: RequestContext[process_pb.SendSignalRequest, process_pb.SendSignalResponse],
        /,
    ) -> process_pb.SendSignalResponse:
        proc = self.fake.process(ctx.request_headers, request.process)
        # The process envd started is bubblewrap's here: its group is the command.
        if request.signal == process_pb.Signal.SIGKILL:
            kill_group(proc)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        return process_pb.SendSignalResponse()

    async def list(
        self,
        request: process_pb.ListRequest,
        ctx: RequestContext[process_pb.ListRequest, process_pb.ListResponse],
        /,
    ) -> process_pb.ListResponse:
        try:
            box = self.fake.envd_sandbox(ctx.request_headers)
        except (LookupError, PermissionError) as exc:
            raise ConnectError(Code.UNAVAILABLE, str(exc)) from None
        return process_pb.ListResponse(
            processes=[process_pb.ProcessInfo(pid=pid) for pid in box.processes]
        )


async def _outputs(proc: asyncio.subprocess.Process) -> AsyncIterator[tuple[str, bytes]]:
    """Stdout and stderr chunks as they come, until both close (or a moment after the
    process ended, when something it left holds them open)."""
    assert proc.stdout is not None and proc.stderr is not None
    queue: asyncio.Queue[tuple[str, bytes] | None] = asyncio.Queue()

    async def read(name: str, stream: asyncio.StreamReader) -> None:
        try:
            while chunk := await stream.read(CHUNK):
                queue.put_nowait((name, chunk))
        finally:
            queue.put_nowait(None)

    readers = [
        asyncio.create_task(read("stdout", proc.stdout)),
        asyncio.create_task(read("stderr", proc.stderr)),
    ]
    exited = asyncio.create_task(proc.wait())
    getter: asyncio.Task[tuple[str, bytes] | None] | None = None
    open_streams = len(readers)
    try:
        while open_streams:
            getter = getter or asyncio.create_task(queue.get())
            waiting: set[asyncio.Task[Any]] = {getter}
            if not exited.done():
                waiting.add(exited)
            timeout = DRAIN_GRACE_S if exited.done() else None
            done, _ = await asyncio.wait(waiting, timeout=timeout, return_when="FIRST_COMPLETED")
            if getter not in done:
                if not done:  # ended a while ago; whatever it left holds the pipes
                    return
                continue
            item, getter = getter.result(), None
            if item is None:
                open_streams -= 1
            else:
                yield item
    finally:
        for task in (*readers, exited, getter):
            if task is not None:
                task.cancel()
