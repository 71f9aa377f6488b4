"""e2b templates built from a task's environment (``CreateSandbox.build``), once each.

A build is named by its content: ``bw-env-<digest>``, the digest of the Dockerfile,
its context and its resources (``EnvironmentBuild.digest``). In this process a
digest is built once: a second ask while it builds waits for the same build, and
one after it is handed the template id at once. A process that restarts asks E2B
again; E2B caches every layer by its inputs, team-wide, so the repeat costs a
look-up, not a rebuild.

The build goes through the SDK's template API: the Dockerfile to
``AsyncTemplate().from_dockerfile`` (the SDK turns its steps into template steps;
``.dockerignore`` in the context is honoured), the context files uploaded by
their hash, then the status polled here rather than by the SDK, so that a failure
can name the step that failed and the log's tail, and the whole build keeps to
``EnvironmentBuild.timeout_s``. A failed build is remembered for a while
(``FAILED_BUILD_TTL_S``): every trial of a task whose environment does not build
fails at once, with the same message, rather than building it again.
"""

import asyncio
import contextlib
import json
import shutil
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any

import httpx

from benchwright_sandbox_manager.ports import BackendError, ImageBuildError, UnsafePathError
from benchwright_shared.contracts import EnvironmentBuild

NAME_PREFIX = "bw-env-"
# How much of the digest names a template (128 bits).
NAME_DIGEST_CHARS = 32
# How often a build's status is asked.
POLL_S = 1.0
# What an error keeps of the build log: its last lines, each cut to a width.
LOG_TAIL_LINES = 20
LOG_LINE_CHARS = 300
FAILED_BUILD_TTL_S = 600.0


def template_name(build: EnvironmentBuild) -> str:
    """The name (E2B's alias) of the template ``build`` makes."""
    return f"{NAME_PREFIX}{build.digest[:NAME_DIGEST_CHARS]}"


class TemplateBuilds:
    """The templates this process built, and the builds under way, by digest.

    ``sdk`` returns the e2b module (imported lazily); ``opts`` the connection options
    of every SDK call; ``scratch`` is where a build's context is written for the SDK.
    """

    def __init__(
        self,
        sdk: Callable[[], ModuleType],
        opts: Callable[[], dict[str, Any]],
        scratch: Path,
    ) -> None:
        self._sdk = sdk
        self._opts = opts
        self._scratch = scratch
        self._built: dict[str, str] = {}
        self._building: dict[str, asyncio.Task[str]] = {}
        self._failed: dict[str, tuple[float, str]] = {}
        # How many builds this process asked E2B for (tests count them).
        self.started = 0

    async def template_for(self, build: EnvironmentBuild) -> str:
        """The id of the template ``build`` makes: built now, being built, or built before."""
        digest = build.digest
        if digest in self._built:
            return self._built[digest]
        # Each error names the asking task: another may share its environment.
        what = f"task {build.task!r}: its environment (e2b template {template_name(build)})"
        failed = self._failed.get(digest)
        if failed is not None and failed[0] > time.monotonic():
            raise ImageBuildError(f"{what}{failed[1]}")
        task = self._building.get(digest)
        if task is None:
            task = asyncio.create_task(self._build(build), name=f"e2b-build-{digest[:12]}")
            self._building[digest] = task
            task.add_done_callback(lambda _: self._building.pop(digest, None))
        try:
            # A waiter that gives up (its command cancelled) leaves the build to the others.
            return await asyncio.shield(task)
        except BackendError as exc:
            raise type(exc)(f"{what}{exc}") from exc

    async def _build(self, build: EnvironmentBuild) -> str:
        """Build now; an error's message is what follows the asking task's name."""
        digest = build.digest
        try:
            template_id = await self._build_now(build)
        except ImageBuildError as exc:
            self._failed[digest] = (time.monotonic() + FAILED_BUILD_TTL_S, str(exc))
            raise
        self._built[digest] = template_id
        self._failed.pop(digest, None)
        return template_id

    async def _build_now(self, build: EnvironmentBuild) -> str:
        e2b = self._sdk()
        logs: deque[str] = deque(maxlen=LOG_TAIL_LINES)
        context = self._scratch / build.digest
        self.started += 1
        try:
            await asyncio.to_thread(_write_context, context, build.context)
            try:
                template = e2b.AsyncTemplate(file_context_path=str(context)).from_dockerfile(
                    str(context / "Dockerfile")
                )
                steps = json.loads(e2b.AsyncTemplate.to_json(template))["steps"]
            except (ValueError, OSError) as exc:
                raise ImageBuildError(f" cannot be built: {exc}") from exc
            async with asyncio.timeout(build.timeout_s):
                info = await e2b.AsyncTemplate.build_in_background(
                    template,
                    template_name(build),
                    cpu_count=build.cpu_count,
                    memory_mb=build.memory_mb,
                    on_build_logs=lambda entry: logs.append(str(entry.message)),
                    **self._opts(),
                )
                await self._finished(e2b, info, steps, logs)
        except TimeoutError:
            raise ImageBuildError(
                f" did not build within {build.timeout_s:g} s"
                f" ([environment] build_timeout_sec){_tail(logs)}"
            ) from None
        except (
            e2b.BuildException,
            e2b.SandboxException,
            e2b.AuthenticationException,
            httpx.HTTPError,
        ) as exc:
            raise BackendError(f": e2b could not build it: {exc}{_tail(logs)}") from exc
        finally:
            await asyncio.to_thread(shutil.rmtree, context, True)
        return str(info.template_id)

    async def _finished(
        self, e2b: ModuleType, info: Any, steps: list[dict[str, Any]], logs: deque[str]
    ) -> None:
        """Poll the build until it is ready; ``ImageBuildError`` naming the step when it fails."""
        offset = 0
        while True:
            status = await e2b.AsyncTemplate.get_build_status(
                info, logs_offset=offset, **self._opts()
            )
            offset += len(status.log_entries)
            logs.extend(str(entry.message) for entry in status.log_entries)
            state = str(status.status.value)
            if state == "ready":
                return
            if state == "error":
                reason = status.reason
                for entry in reason.log_entries if reason is not None else []:
                    if str(entry.message) not in logs:
                        logs.append(str(entry.message))
                message = reason.message if reason is not None else "the build failed"
                step = _step(reason.step if reason is not None else None, steps)
                raise ImageBuildError(f" did not build: {step}{message}{_tail(logs)}")
            await asyncio.sleep(POLL_S)


def _write_context(folder: Path, files: dict[str, str]) -> None:
    """Lay the build context out for the SDK (which tars what COPY names from here)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, content in files.items():
        relative = PurePosixPath(name)
        if relative.is_absolute() or ".." in relative.parts or not relative.parts:
            raise UnsafePathError(f"build context file {name!r} is outside the context")
        target = folder.joinpath(*relative.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)


def _step(step: str | None, steps: list[dict[str, Any]]) -> str:
    """The failed step in words: ``step 4 (RUN apt-get ...): `` or the builder's own name."""
    if not step:
        return ""
    with contextlib.suppress(ValueError):
        number = int(step)
        if 1 <= number <= len(steps):
            found = steps[number - 1]
            shown = " ".join(str(arg) for arg in found.get("args") or [])
            return f"step {number} ({found.get('type')} {shown[:200]}): "
    return f"step {step}: "


def _tail(logs: deque[str]) -> str:
    if not logs:
        return ""
    lines = [line[:LOG_LINE_CHARS] for line in logs]
    return "; the build log ends:\n" + "\n".join(lines)
