"""Exec streams into sandbox pods: each one run of the launcher, under a wall clock.

The exec's command line is the same every time (``SHELL`` then ``launcher.BOOT``,
tagged with a token of its own); what it does travels on its stdin. A stream the
backend stops waiting for (past its clock, or dropped by its caller) has its
launcher's tree reaped by a second exec, found by that token.
"""

import asyncio
import json
import logging
import secrets
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchwright_sandbox_manager.backends.sandbox0 import launcher
from benchwright_sandbox_manager.backends.sandbox0.kube import (
    Cluster,
    Sink,
    UnreachableError,
    exit_code,
)
from benchwright_sandbox_manager.backends.sandbox0.manifests import object_name
from benchwright_sandbox_manager.ports import OUTPUT_LIMIT_BYTES, BackendError
from benchwright_sandbox_manager.runtime import launcher_source

log = logging.getLogger(__name__)

# One file, ``command_limits`` inlined: the pod has no Benchwright to import it from.
LAUNCHER_SOURCE = launcher_source(Path(launcher.__file__)).encode()
# ``env -i`` keeps nothing of the container's environment but the image's PATH,
# which the launcher needs to find python3 and passes on unless a command sets one.
SHELL = f'exec env -i "PATH=${{PATH:-{launcher.DEFAULT_PATH}}}" python3 -I -S -c "$1" "$2" "$3"'
REAP_TIMEOUT_S = 60.0
STOP_GRACE_S = 5.0


class Head:
    """The first ``OUTPUT_LIMIT_BYTES`` of a stream."""

    def __init__(self) -> None:
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        room = OUTPUT_LIMIT_BYTES - len(self.data)
        if room > 0:
            self.data += chunk[:room]


class Tail:
    """The last ``OUTPUT_LIMIT_BYTES`` of a stream: where a traceback ends up."""

    def __init__(self) -> None:
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > OUTPUT_LIMIT_BYTES:
            del self.data[: len(self.data) - OUTPUT_LIMIT_BYTES]

    @property
    def text(self) -> str:
        return self.data.decode(errors="replace")

    @property
    def last_line(self) -> str:
        return self.text.rstrip("\n").rsplit("\n", 1)[-1]


@dataclass
class Ended:
    """How an exec stream ended: the API server's status, or why there is none."""

    status: dict[str, Any] | None
    overran: bool = False
    killed: bool = False

    @property
    def code(self) -> int | None:
        return exit_code(self.status) if self.status is not None else None


@dataclass(eq=False)
class _Stream:
    token: str = field(default_factory=lambda: secrets.token_hex(12))
    cancel: threading.Event = field(default_factory=threading.Event)
    killed: bool = False


def payload(config: dict[str, Any], data: bytes) -> bytes:
    """What the launcher reads on stdin: itself, its config, then ``data``."""
    header = json.dumps(config).encode()
    return b"".join(
        [b"%d\n" % len(LAUNCHER_SOURCE), LAUNCHER_SOURCE, b"%d\n" % len(header), header, data]
    )


class Sessions:
    """The exec streams in flight, by sandbox."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self._streams: dict[str, set[_Stream]] = {}
        self._chores: set[asyncio.Task[None]] = set()

    async def run(
        self,
        cluster: Cluster,
        sandbox_id: str,
        config: dict[str, Any],
        data: bytes,
        on_stdout: Sink,
        on_stderr: Sink,
        limit_s: float,
    ) -> Ended:
        """Run the launcher with ``config`` (and ``data`` after it on stdin) in the pod."""
        stream = _Stream()
        command = ["/bin/sh", "-c", SHELL, "bw", launcher.BOOT, "bw-launcher", stream.token]
        worker = asyncio.ensure_future(
            asyncio.to_thread(
                cluster.exec,
                self.namespace,
                object_name(sandbox_id),
                command,
                payload(config, data),
                on_stdout,
                on_stderr,
                stream.cancel,
            )
        )
        self._streams.setdefault(sandbox_id, set()).add(stream)
        ended: Ended | None = None
        try:
            try:
                status = await asyncio.wait_for(asyncio.shield(worker), limit_s)
            except TimeoutError:
                ended = Ended(None, overran=True)
            else:
                ended = Ended(status, killed=stream.killed)
        except UnreachableError as exc:
            if "404" in str(exc):
                raise BackendError(f"sandbox {sandbox_id} has no pod (killed?): {exc}") from exc
            raise BackendError(f"cannot exec in sandbox {sandbox_id}: {exc}") from exc
        finally:
            stream.cancel.set()
            # The thread sees ``cancel`` within a poll; one stuck opening its websocket
            # (a server that never answers) is left to its socket's own end.
            await asyncio.wait([worker], timeout=STOP_GRACE_S)
            if not worker.done():
                log.warning("an exec into %s did not stop; left behind", sandbox_id)
            failed = worker.done() and not worker.cancelled() and worker.exception() is not None
            self._streams.get(sandbox_id, set()).discard(stream)
            # Past its clock, dropped by its caller, or cut off: the launcher may still run.
            abandoned = ended is None or ended.status is None
            if abandoned and not failed and not stream.killed and config["op"] == "run":
                self._chore(self._reap(cluster, sandbox_id, stream.token))
        return ended

    def kill(self, sandbox_id: str) -> None:
        """Stop waiting on the sandbox's streams: its pod is going."""
        for stream in self._streams.pop(sandbox_id, set()):
            stream.killed = True
            stream.cancel.set()

    def _chore(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._chores.add(task)
        task.add_done_callback(self._chores.discard)

    async def _reap(self, cluster: Cluster, sandbox_id: str, token: str) -> None:
        err = Tail()
        try:
            ended = await self.run(
                cluster,
                sandbox_id,
                {"op": "reap", "token": token},
                b"",
                Head().add,
                err.add,
                REAP_TIMEOUT_S,
            )
        except BackendError as exc:
            log.info("reaping an abandoned command in %s: %s", sandbox_id, exc)
            return
        if ended.code != 0:
            log.warning("reaping an abandoned command in %s: %s", sandbox_id, err.text)

    async def close(self) -> None:
        """Let the reapers finish (each has its own clock)."""
        if self._chores:
            await asyncio.wait(list(self._chores))
