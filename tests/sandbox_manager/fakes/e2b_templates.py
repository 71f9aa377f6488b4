"""E2B's template build API, faked for ``FakeE2B``: what the SDK's ``AsyncTemplate`` calls.

``POST /v3/templates`` (a build of a name: the name's template, a new build id),
``GET /templates/{id}/files/{hash}`` (is this context archive present, else where
to put it), ``PUT /fake-uploads/{hash}`` (the upload), ``POST
/v2/templates/{id}/builds/{build}`` (the steps: start building) and
``GET /templates/{id}/builds/{build}/status`` (status, logs from an offset, and
the reason a build failed).

The "build" runs nothing; it is decided by the steps alone, so it is deterministic:
each step logs a line; a COPY whose files were never uploaded fails; a RUN of
``exit N`` (N > 0) or ``false`` fails with that exit status, naming the step as E2B
does (its 1-based number); everything else succeeds. A build stays ``building`` for
``build_s`` seconds first, so that concurrent asks for one overlap. What the COPY
steps put where (after WORKDIR, as Docker places them) is kept: a sandbox started
from the template has those files (``FakeE2B`` lays them in).
"""

import fnmatch
import gzip
import io
import posixpath
import shlex
import tarfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


@dataclass
class FakeBuild:
    """One build of a template: its steps, logs and end."""

    build_id: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    from_image: str | None = None
    started: bool = False
    ready_at: float = 0.0
    logs: list[dict[str, Any]] = field(default_factory=list)
    failure: dict[str, Any] | None = None
    # What the COPY steps put where: absolute path -> content.
    files: dict[str, bytes] = field(default_factory=dict)


@dataclass
class FakeTemplate:
    template_id: str
    name: str
    builds: dict[str, FakeBuild] = field(default_factory=dict)

    def ready_build(self) -> FakeBuild | None:
        """The latest build that succeeded and is done."""
        now = time.monotonic()
        done = [
            b for b in self.builds.values() if b.started and b.failure is None and b.ready_at <= now
        ]
        return done[-1] if done else None


def _entry(message: str, level: str = "info") -> dict[str, Any]:
    return {"timestamp": datetime.now(UTC).isoformat(), "level": level, "message": message}


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"code": status, "message": message}, status_code=status)


class FakeTemplates:
    """Templates built here, by id and by name, and the context archives uploaded."""

    def __init__(self, base_url: Callable[[], str], authorized: Callable[[Request], bool]) -> None:
        self._base_url = base_url
        self._authorized = authorized
        self.by_id: dict[str, FakeTemplate] = {}
        self.by_name: dict[str, str] = {}
        # Context archives by their hash, as uploaded (gzipped tars).
        self.uploads: dict[str, bytes] = {}
        # How long a build stays ``building``.
        self.build_s = 0.0
        # Every build started (template name, build), in order.
        self.started: list[tuple[str, FakeBuild]] = []

    def routes(self) -> list[Route]:
        return [
            Route("/v3/templates", self._request_build, methods=["POST"]),
            Route("/templates/{template_id}/files/{files_hash}", self._file_link, methods=["GET"]),
            Route("/fake-uploads/{files_hash}", self._upload, methods=["PUT"]),
            Route("/v2/templates/{template_id}/builds/{build_id}", self._start, methods=["POST"]),
            Route(
                "/templates/{template_id}/builds/{build_id}/status",
                self._status,
                methods=["GET"],
            ),
        ]

    def refusal(self, template: str) -> str | None:
        """Why a sandbox cannot start from ``template`` (one built here without success)."""
        built = self.by_id.get(template)
        if built is not None and built.ready_build() is None:
            return f"template {template} has no ready build"
        return None

    def files_of(self, template: str) -> dict[str, bytes]:
        """What a sandbox started from ``template`` holds beyond the VM's own."""
        built = self.by_id.get(template)
        ready = built.ready_build() if built is not None else None
        return dict(ready.files) if ready is not None else {}

    def uploaded(self, files_hash: str) -> dict[str, bytes]:
        """The files in an uploaded context archive, by their path in the context."""
        data = self.uploads[files_hash]
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            return {
                m.name: tar.extractfile(m).read()  # type: ignore[union-attr]
                for m in tar.getmembers()
                if m.isfile()
            }

    def uploaded_names(self, files_hash: str) -> list[str]:
        """The file names in an uploaded context archive."""
        return sorted(self.uploaded(files_hash))

    # -- the API ----------------------------------------------------------------------
    async def _request_build(self, request: Request) -> Response:
        if not self._authorized(request):
            return _error(401, "Invalid API key")
        body = await request.json()
        name = str(body["name"])
        template_id = self.by_name.get(name)
        if template_id is None:
            template_id = f"t{uuid.uuid4().hex[:19]}"
            self.by_id[template_id] = FakeTemplate(template_id, name)
            self.by_name[name] = template_id
        build = FakeBuild(build_id=str(uuid.uuid4()))
        self.by_id[template_id].builds[build.build_id] = build
        answer = {
            "templateID": template_id,
            "buildID": build.build_id,
            "public": False,
            "names": [name],
            "tags": ["default"],
            "aliases": [name],
        }
        return JSONResponse(answer, status_code=202)

    async def _file_link(self, request: Request) -> Response:
        if not self._authorized(request):
            return _error(401, "Invalid API key")
        if request.path_params["template_id"] not in self.by_id:
            return _error(404, "template not found")
        files_hash = request.path_params["files_hash"]
        if files_hash in self.uploads:
            return JSONResponse({"present": True}, status_code=201)
        url = f"{self._base_url()}/fake-uploads/{files_hash}"
        return JSONResponse({"present": False, "url": url}, status_code=201)

    async def _upload(self, request: Request) -> Response:
        self.uploads[request.path_params["files_hash"]] = await request.body()
        return Response(status_code=200)

    def _build(self, request: Request) -> tuple[FakeTemplate, FakeBuild] | Response:
        if not self._authorized(request):
            return _error(401, "Invalid API key")
        template = self.by_id.get(request.path_params["template_id"])
        build = template.builds.get(request.path_params["build_id"]) if template else None
        if template is None or build is None:
            return _error(404, "build not found")
        return template, build

    async def _start(self, request: Request) -> Response:
        found = self._build(request)
        if isinstance(found, Response):
            return found
        template, build = found
        body = await request.json()
        build.steps = list(body.get("steps") or [])
        build.from_image = body.get("fromImage")
        build.started = True
        build.ready_at = time.monotonic() + self.build_s
        self.started.append((template.name, build))
        self._run(build)
        return Response(status_code=202)

    def _run(self, build: FakeBuild) -> None:
        """Decide the build from its steps alone, logging each."""
        build.logs.append(_entry(f"[base] FROM {build.from_image}"))
        workdir = "/"
        for number, step in enumerate(build.steps, start=1):
            args = [str(arg) for arg in step.get("args") or []]
            kind = str(step.get("type"))
            build.logs.append(_entry(f"[{number}] {kind} {' '.join(args)}"))
            failure: str | None = None
            if kind == "WORKDIR" and args:
                workdir = posixpath.join(workdir, args[0])
            elif kind == "COPY" and step.get("filesHash") not in self.uploads:
                failure = f"the files of COPY {args[0] if args else ''} were never uploaded"
            elif kind == "COPY" and len(args) >= 2:
                context = self.uploaded(str(step["filesHash"]))
                for name, target in _copied(args[0], args[1], workdir, sorted(context)).items():
                    build.files[target] = context[name]
            elif kind == "RUN" and args:
                status = _exit_status(args[0])
                if status:
                    build.logs.append(_entry(f"[{number}] command exited with {status}", "error"))
                    failure = f"failed to run command '{args[0]}': exit status {status}"
            if failure is not None:
                build.failure = {
                    "message": failure,
                    "step": str(number),
                    "logEntries": [_entry(failure, "error")],
                }
                return
        build.logs.append(_entry("build finished"))

    async def _status(self, request: Request) -> Response:
        found = self._build(request)
        if isinstance(found, Response):
            return found
        template, build = found
        offset = int(request.query_params.get("logsOffset") or 0)
        done = build.started and build.ready_at <= time.monotonic()
        status = "building" if not done else ("error" if build.failure else "ready")
        # While building, the log so far: its first line; the rest once it is done.
        shown = build.logs if done else build.logs[:1]
        answer: dict[str, Any] = {
            "templateID": template.template_id,
            "buildID": build.build_id,
            "status": status,
            "logEntries": shown[offset:],
            "logs": [entry["message"] for entry in shown[offset:]],
        }
        if status == "error":
            answer["reason"] = build.failure
        return JSONResponse(answer)


def _exit_status(command: str) -> int:
    """The exit status the fake gives a RUN command: ``exit N`` N, ``false`` 1, else 0."""
    try:
        words = shlex.split(command)
    except ValueError:
        return 0
    if words == ["false"]:
        return 1
    if len(words) == 2 and words[0] == "exit" and words[1].isdigit():
        return int(words[1])
    return 0


def _copied(source: str, dest: str, workdir: str, names: list[str]) -> dict[str, str]:
    """Where COPY ``source`` ``dest`` puts each of the context's files ``names``, as
    Docker does: a file into a directory (``dest/``) or onto ``dest``; a directory's
    contents into ``dest``; a glob's matches into ``dest``."""
    target = posixpath.normpath(posixpath.join(workdir, dest))
    cleaned = posixpath.normpath(source.strip("/") or ".")
    placed: dict[str, str] = {}
    for name in names:
        if cleaned == ".":
            placed[name] = posixpath.join(target, name)
        elif name == cleaned:
            into = dest.endswith("/")
            placed[name] = posixpath.join(target, posixpath.basename(name)) if into else target
        elif name.startswith(cleaned + "/"):
            placed[name] = posixpath.join(target, name.removeprefix(cleaned + "/"))
        elif fnmatch.fnmatchcase(name, cleaned):
            placed[name] = posixpath.join(target, posixpath.basename(name))
    return placed
