"""A fake Kubernetes API server on loopback, each pod a real ``local`` sandbox.

Only what the official client calls for the ``sandbox0`` backend, in one namespace,
behind a bearer token:

* ``POST``/``GET``/``DELETE`` pods (a pod is ``Pending`` until its sandbox is made,
  then ``Running``); ``POST``/``GET``/``PUT``/``DELETE`` networkpolicies (``PUT``
  checks ``resourceVersion``). Manifests are stored as sent, for tests to read.
* the ``exec`` subresource over a websocket speaking ``v4.channel.k8s.io`` (channel
  0 stdin, 1 stdout, 2 stderr, 3 the ``Status`` a kubelet sends at the end).

Nothing runs on this host directly. A pod is a sandbox of the ``local`` backend
(bubblewrap) and each exec one bubblewrap command in it, run as a kubelet would:
the process sees what the exec passes and the container's environment (its ``env``
plus the variables a kubelet adds), the pod's ``/work`` is the sandbox's directory,
each other ``emptyDir`` it mounts one of the sandbox's own absolute directories, its
``/tmp`` a tmpfs of the ``tmp`` volume's ``sizeLimit``. The network is what the
pod's NetworkPolicies allow: each allowed ``ip:port`` becomes one of the local
backend's forwarders, on the same port of the sandbox's loopback (so only loopback
addresses are emulated faithfully); DNS and everything else lead nowhere. A pod
whose egress no policy restricts gets no exec at all.

Where it differs from a cluster: each exec is its own bubblewrap sandbox, so execs
share the pod's files but not its processes, ``/tmp`` or network namespace (the
process count a command sees includes the forwarder's process), and an exec whose
client goes away is killed (a real kubelet may leave it running).
"""

import asyncio
import contextlib
import datetime
import ipaddress
import json
import uuid
from collections.abc import Generator
from dataclasses import replace
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from benchwright_sandbox_manager.backends import get_backend
from benchwright_sandbox_manager.backends.forwarding import MODEL_URL, PROXY_VARS
from benchwright_sandbox_manager.backends.local import LocalBackend
from benchwright_sandbox_manager.backends.processes import kill_group
from benchwright_shared.settings import Settings

PROTOCOL = "v4.channel.k8s.io"
STDIN, STDOUT, STDERR, STATUS = 0, 1, 2, 3
# What a kubelet adds to every container's environment, service links or not.
KUBELET_ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
# What service links would add (``enableServiceLinks`` defaults to true).
SERVICE_LINKS = {"BENCHWRIGHT_PROXY_SERVICE_HOST": "10.96.0.2"}
# The variables the local backend builds a forwarder for, one address each.
FORWARDED_VARS = (MODEL_URL, *PROXY_VARS)
DRAIN_GRACE_S = 2.0
CHUNK = 1 << 16


def _own_dirs(pod: dict[str, Any] | None) -> list[str]:
    """The pod's mounts other than its ``/work`` and ``/tmp``: its own directories."""
    if pod is None:
        return []
    mounts = pod["spec"]["containers"][0].get("volumeMounts", [])
    return [m["mountPath"] for m in mounts if m["mountPath"] not in ("/work", "/tmp")]


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _status(code: int, reason: str, message: str) -> JSONResponse:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return JSONResponse(body, status_code=code)


def _mebibytes(quantity: str) -> int:
    if not quantity.endswith("Mi"):
        raise ValueError(f"the fake reads sizes in Mi only, not {quantity!r}")
    return int(quantity[:-2])


def exit_status(code: int) -> dict[str, Any]:
    """What a kubelet sends on the error channel when an exec's process ends."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: exit status {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


class _NoSignals(uvicorn.Server):
    """uvicorn inside the test's event loop: pytest keeps its own signal handlers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        yield


class FakeKube:
    """The fake API server at ``url``; ``pods`` and ``policies`` hold what was sent."""

    def __init__(self, root: Path, namespace: str, token: str = "fake-token") -> None:
        self.namespace = namespace
        self.token = token
        # The node's sandboxes: no egress proxy of its own, only what policies allow.
        settings = Settings(data_dir=root / "node-data", egress_proxy_url=None)
        node = get_backend("local", root / "node", settings)
        assert isinstance(node, LocalBackend)
        self.node = node
        self.pods: dict[str, dict[str, Any]] = {}
        self.policies: dict[str, dict[str, Any]] = {}
        # ("create" | "replace" | "delete", "pods" | "networkpolicies", name), in order.
        self.log: list[tuple[str, str, str]] = []
        # The ``gracePeriodSeconds`` each pod was deleted with (None: the default).
        self.grace: dict[str, str | None] = {}
        self.port = 0
        self._versions = 0
        self._procs: dict[str, set[asyncio.subprocess.Process]] = {}
        self._later: set[asyncio.Task[None]] = set()
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None
        pods = "/api/v1/namespaces/{namespace}/pods"
        policies = "/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies"
        self.app = Starlette(
            routes=[
                Route(pods, self._create_pod, methods=["POST"]),
                Route(pods + "/{name}", self._read_pod, methods=["GET"]),
                Route(pods + "/{name}", self._delete_pod, methods=["DELETE"]),
                WebSocketRoute(pods + "/{name}/exec", self._exec),
                Route(policies, self._create_policy, methods=["POST"]),
                Route(policies + "/{name}", self._read_policy, methods=["GET"]),
                Route(policies + "/{name}", self._replace_policy, methods=["PUT"]),
                Route(policies + "/{name}", self._delete_policy, methods=["DELETE"]),
            ]
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kubeconfig(self, path: Path) -> Path:
        """A kubeconfig for this server (JSON is YAML too)."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": self.token}}],
            "contexts": [
                {
                    "name": "fake",
                    "context": {"cluster": "fake", "user": "fake", "namespace": self.namespace},
                }
            ],
            "current-context": "fake",
        }
        path.write_text(json.dumps(config))
        return path

    async def start(self) -> "FakeKube":
        await self.node.start()
        config = uvicorn.Config(
            self.app, host="127.0.0.1", port=0, ws="wsproto", lifespan="off", log_level="warning"
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
        for name in list(self.pods):
            await self._remove_pod(name)
        for task in list(self._later):
            task.cancel()
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await self._task
        await self.node.close()

    # -- plumbing -------------------------------------------------------------------
    def _authorized(self, headers: Any) -> bool:
        return bool(headers.get("authorization") == f"Bearer {self.token}")

    def _check(self, request: Request) -> JSONResponse | None:
        if not self._authorized(request.headers):
            return _status(401, "Unauthorized", "Unauthorized")
        namespace = request.path_params["namespace"]
        if namespace != self.namespace:
            return _status(404, "NotFound", f'namespaces "{namespace}" not found')
        return None

    def _stamp(self, body: dict[str, Any]) -> dict[str, Any]:
        self._versions += 1
        metadata = body.setdefault("metadata", {})
        metadata.setdefault("uid", str(uuid.uuid4()))
        metadata.setdefault("creationTimestamp", _now())
        metadata["namespace"] = self.namespace
        metadata["resourceVersion"] = str(self._versions)
        return body

    def _later_task(self, work: Any) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    # -- pods -------------------------------------------------------------------------
    async def _create_pod(self, request: Request) -> Response:
        if refused := self._check(request):
            return refused
        body = await request.json()
        name = body.get("metadata", {}).get("name")
        if not name or not body.get("spec", {}).get("containers"):
            return _status(422, "Invalid", "a pod needs metadata.name and spec.containers")
        if name in self.pods:
            return _status(409, "AlreadyExists", f'pods "{name}" already exists')
        pod = self._stamp(body)
        pod["status"] = {"phase": "Pending"}
        self.pods[name] = pod
        self.log.append(("create", "pods", name))
        self._later_task(self._schedule(name))
        return JSONResponse(pod, status_code=201)

    async def _schedule(self, name: str) -> None:
        """The kubelet's part: make the pod's sandbox, then call it Running."""
        try:
            await self.node.create(name, dirs=_own_dirs(self.pods.get(name)))
        except Exception as exc:
            if name in self.pods:
                self.pods[name]["status"] = {"phase": "Failed", "message": str(exc)}
            return
        pod = self.pods.get(name)
        if pod is None:  # deleted while starting
            await self.node.kill(name)
            return
        container = pod["spec"]["containers"][0]
        pod["status"] = {
            "phase": "Running",
            "startTime": _now(),
            "containerStatuses": [
                {
                    "name": container["name"],
                    "image": container["image"],
                    "imageID": "fake://" + container["image"],
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": _now()}},
                }
            ],
        }

    async def _read_pod(self, request: Request) -> Response:
        if refused := self._check(request):
            return refused
        name = request.path_params["name"]
        if name not in self.pods:
            return _status(404, "NotFound", f'pods "{name}" not found')
        return JSONResponse(self.pods[name])

    async def _delete_pod(self, request: Request) -> Response:
        if refused := self._check(request):
            return refused
        name = request.path_params["name"]
        if name not in self.pods:
            return _status(404, "NotFound", f'pods "{name}" not found')
        pod = self.pods[name]
        await self._remove_pod(name)
        self.log.append(("delete", "pods", name))
        self.grace[name] = request.query_params.get("gracePeriodSeconds")
        return JSONResponse(pod)

    async def _remove_pod(self, name: str) -> None:
        self.pods.pop(name, None)
        for proc in self._procs.pop(name, set()):
            kill_group(proc)
        await self.node.kill(name)

    # -- network policies ---------------------------------------------------------------
    async def _create_policy(self, request: Request) -> Response:
        if refused := self._check(request):
            return refused
        body = await request.json()
        name = body.get("metadata", {}).get("name")
        if not name or "podSelector" not in body.get("spec", {}):
            return _status(422, "Invalid", "a policy needs metadata.name and spec.podSelector")
        if name in self.policies:
            return _status(409, "AlreadyExists", f'networkpolicies "{name}" already exists')
        self.policies[name] = self._stamp(body)
        self.log.append(("create", "networkpolicies", name))
        return JSONResponse(self.policies[name], status_code=201)

    async def _read_policy(self, request: Request) -> Response:
        if refused := self._check(request):
            return refused
        name = request.path_params["name"]
        if name not in self.policies:
            return _status(404, "NotFound", f'networkpolicies "{name}" not found')
        return JSONResponse(self.policies[name])

    async def _replace_policy(self, request: Request) -> Response:
        if refused := self._check(request):
            return refused
        name = request.path_params["name"]
        if name not in self.policies:
            return _status(404, "NotFound", f'networkpolicies "{name}" not found')
        body = await request.json()
        version = body.get("metadata", {}).get("resourceVersion")
        current = self.policies[name]["metadata"]
        if version is not None and version != current["resourceVersion"]:
            return _status(409, "Conflict", "the object has been modified")
        body["metadata"]["uid"] = current["uid"]
        body["metadata"]["creationTimestamp"] = current["creationTimestamp"]
        self.policies[name] = self._stamp(body)
        self.log.append(("replace", "networkpolicies", name))
        return JSONResponse(self.policies[name])

    async def _delete_policy(self, request: Request) -> Response:
        if refused := self._check(request):
            return refused
        name = request.path_params["name"]
        if name not in self.policies:
            return _status(404, "NotFound", f'networkpolicies "{name}" not found')
        self.log.append(("delete", "networkpolicies", name))
        return JSONResponse(self.policies.pop(name))

    def allowed(self, pod: dict[str, Any]) -> list[tuple[str, int]] | None:
        """The ``(ip, port)`` pairs the pod's policies let out; None when egress is open."""
        labels = pod["metadata"].get("labels", {})
        restricted = False
        found: list[tuple[str, int]] = []
        for policy in self.policies.values():
            spec = policy["spec"]
            selector = spec["podSelector"].get("matchLabels", {})
            if any(labels.get(k) != v for k, v in selector.items()):
                continue
            if "Egress" not in spec.get("policyTypes", []):
                continue
            restricted = True
            for rule in spec.get("egress", []):
                ports = [p["port"] for p in rule.get("ports", [])]
                for peer in rule.get("to", []):
                    net = ipaddress.ip_network(peer["ipBlock"]["cidr"])
                    if net.num_addresses != 1:
                        raise ValueError(f"the fake allows single addresses only, not {net}")
                    found += [(str(net.network_address), int(port)) for port in ports]
        return sorted(set(found)) if restricted else None

    # -- exec -------------------------------------------------------------------------
    def _exec_env(self, pod: dict[str, Any]) -> dict[str, str]:
        """The container's environment as a kubelet builds it, and the policy's way out."""
        spec = pod["spec"]
        container = spec["containers"][0]
        env = {item["name"]: item.get("value", "") for item in container.get("env", [])}
        env.update(KUBELET_ENV, HOSTNAME=pod["metadata"]["name"])
        if spec.get("enableServiceLinks", True):
            env.update(SERVICE_LINKS)
        allowed = self.allowed(pod) or []
        if len(allowed) > len(FORWARDED_VARS):
            raise ValueError(f"the fake forwards at most {len(FORWARDED_VARS)} addresses")
        for var, (ip, port) in zip(FORWARDED_VARS, allowed, strict=False):
            host = f"[{ip}]" if ":" in ip else ip
            env[var] = f"http://{host}:{port}"
        return env

    async def _deny(self, websocket: WebSocket, response: JSONResponse) -> None:
        await websocket.send_denial_response(response)

    async def _exec(self, websocket: WebSocket) -> None:
        name = websocket.path_params["name"]
        if not self._authorized(websocket.headers):
            return await self._deny(websocket, _status(401, "Unauthorized", "Unauthorized"))
        pod = self.pods.get(name)
        if websocket.path_params["namespace"] != self.namespace or pod is None:
            return await self._deny(websocket, _status(404, "NotFound", f'pods "{name}" not found'))
        if pod["status"].get("phase") != "Running":
            message = f"pod {name} is not running"
            return await self._deny(websocket, _status(400, "BadRequest", message))
        if self.allowed(pod) is None:
            message = f"the fake runs no pod whose egress is open: {name} has no policy"
            return await self._deny(websocket, _status(403, "Forbidden", message))
        if PROTOCOL not in websocket.scope.get("subprotocols", []):
            message = f"the fake speaks {PROTOCOL} only"
            return await self._deny(websocket, _status(400, "BadRequest", message))
        argv = websocket.query_params.getlist("command")
        tmp = next(v for v in pod["spec"]["volumes"] if v["name"] == "tmp")
        limits = replace(self.node.limits, tmp_mb=_mebibytes(tmp["emptyDir"]["sizeLimit"]))
        await websocket.accept(subprotocol=PROTOCOL)
        proc = await self.node.bubblewrap.spawn(
            name,
            self.node.workdir(name),
            argv,
            self._exec_env(pod),
            limits=limits,
            stdin=asyncio.subprocess.PIPE,
            dirs=self.node.dir_mounts(name),
        )
        self._procs.setdefault(name, set()).add(proc)
        try:
            await self._serve_exec(websocket, proc)
        finally:
            kill_group(proc)
            if proc.returncode is None:
                await proc.wait()
            await self.node.bubblewrap.settle(proc)
            self._procs.get(name, set()).discard(proc)

    async def _serve_exec(self, websocket: WebSocket, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdin and proc.stdout and proc.stderr
        stdin = proc.stdin

        async def pump(stream: asyncio.StreamReader, channel: int) -> None:
            while chunk := await stream.read(CHUNK):
                with contextlib.suppress(WebSocketDisconnect, RuntimeError):
                    await websocket.send_bytes(bytes([channel]) + chunk)

        async def receive() -> None:
            """Stdin frames into the process; the client leaving ends the process."""
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    kill_group(proc)
                    return
                data = message.get("bytes") or (message.get("text") or "").encode()
                if data[:1] == bytes([STDIN]):
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        stdin.write(data[1:])
                        await stdin.drain()

        outputs = [
            asyncio.create_task(pump(proc.stdout, STDOUT)),
            asyncio.create_task(pump(proc.stderr, STDERR)),
        ]
        receiver = asyncio.create_task(receive())
        code = await proc.wait()
        _, pending = await asyncio.wait(outputs, timeout=DRAIN_GRACE_S)
        for task in pending:
            task.cancel()
        if receiver.done():
            return  # the client went away: nobody to tell
        receiver.cancel()
        status = exit_status(code if code >= 0 else 128 - code)
        with contextlib.suppress(WebSocketDisconnect, RuntimeError):
            await websocket.send_bytes(bytes([STATUS]) + json.dumps(status).encode())
            await websocket.close()
