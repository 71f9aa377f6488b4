"""A ``FakeWorkspace`` whose agentic sandboxes are real: folders bound under bubblewrap.

Each sandbox made by ``create_agentic_sandbox`` is a temporary folder holding one
folder per asked directory (``/app``, ``/logs`` ...), bound at that path; ``exec_in``
writes the files there and runs the command under bubblewrap (no network, the
host's ``/usr``), as the sandbox-manager's local backend would; a command given
``BW_MODEL_PROXY_URL`` (a product under test) shares the host's network to reach the
fake model, where the local backend would forward that one address. The phases under
test run real ``solve.sh`` and ``test.sh`` scripts and real agent tool commands,
with no bus and no sandbox-manager.

``lose_at`` makes the n-th ``exec_in`` (counting from 1, over the workspace's life)
raise ``SandboxLost`` instead, once each: the sandbox-manager copy died mid-attempt.
"""

import asyncio
import hashlib
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchwright_orchestrator.ports import SandboxLost
from benchwright_shared.contracts import (
    EnvironmentBuild,
    ExportedFile,
    SandboxExecFinished,
    SandboxFile,
)
from benchwright_shared.contracts.commands import SandboxRole
from benchwright_shared.settings import AGENT_BIN_MOUNT
from tests.orchestrator.fakes import FakeWorkspace
from tests.shared.test_agentic_examples import BASE_PATH, bwrap_usable, system_mounts

__all__ = ["BwrapWorkspace", "bwrap_usable"]

WORK = "work"


@dataclass
class BwrapWorkspace(FakeWorkspace):
    lose_at: set[int] = field(default_factory=set)
    exec_count: int = 0
    roots: dict[str, tuple[Path, list[str]]] = field(default_factory=dict)
    # The artifacts bucket: what ``export`` put there, by object name.
    objects: dict[str, bytes] = field(default_factory=dict)
    # The paths each agentic sandbox was created with, in order.
    laid: list[list[str]] = field(default_factory=list)
    # The operator's agent CLIs (``Settings.agent_bin_dir``), bound read-only as the
    # local backend binds them.
    agent_bin: Path | None = None

    async def create_agentic_sandbox(
        self,
        files: list[SandboxFile],
        dirs: list[str],
        *,
        role: SandboxRole = "harbor_task_env",
        image: str | None = None,
        build: EnvironmentBuild | None = None,
    ) -> str:
        # No images here: the host's tree stands for every one (the test checks the ask).
        self.images.append(image)
        self.builds.append(build)
        self.laid.append([file.path for file in files])
        sandbox_id = await self._new(role)
        root = Path(tempfile.mkdtemp(prefix=f"bw-{sandbox_id}-"))
        # The sandbox's own working directory, as the local backend's: /work inside.
        (root / WORK).mkdir()
        for directory in dirs:
            (root / directory.strip("/")).mkdir(parents=True, exist_ok=True)
        self.roots[sandbox_id] = (root, dirs)
        self._write(root, files)
        return sandbox_id

    def _write(self, root: Path, files: list[SandboxFile]) -> None:
        for file in files:
            target = self._place(root, file.path)
            target.parent.mkdir(parents=True, exist_ok=True)
            if file.object_name is not None:
                target.write_bytes(self.objects[file.object_name])
            else:
                target.write_text(file.content or "")

    @staticmethod
    def _place(root: Path, path: str) -> Path:
        """Where a sandbox path lies on the host: a relative one in the working directory."""
        return root / path.lstrip("/") if path.startswith("/") else root / WORK / path

    def _export(self, root: Path, paths: list[str]) -> list[ExportedFile]:
        """As the sandbox-manager exports: each file there into the "bucket"."""
        exported = []
        for path in paths:
            source = self._place(root, path)
            if not source.is_file():
                continue
            data = source.read_bytes()
            digest = hashlib.sha256(data).hexdigest()
            name = f"{self.run.run_id}/{digest}"
            self.objects[name] = data
            exported.append(
                ExportedFile(
                    path=path,
                    bucket="bw-artifacts",
                    object_name=name,
                    sha256=digest,
                    size_bytes=len(data),
                )
            )
        return exported

    async def exec_in(
        self,
        sandbox_id: str,
        argv: list[str],
        *,
        files: list[SandboxFile] | None = None,
        stdin: str | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_s: float = 120.0,
        network: bool = False,
        export: list[str] | None = None,
    ) -> SandboxExecFinished:
        self.exec_count += 1
        self.execs.append(argv)
        if self.exec_count in self.lose_at:
            raise SandboxLost(sandbox_id, "its sandbox-manager sm-1 died")
        root, dirs = self.roots[sandbox_id]
        self._write(root, files or [])
        variables = {"PATH": BASE_PATH, "HOME": "/tmp", **(env or {})}
        binds = [a for d in dirs for a in ("--bind", str(root / d.strip("/")), d)]
        binds += ["--bind", str(root / WORK), f"/{WORK}"]
        if self.agent_bin is not None:
            binds += ["--ro-bind", str(self.agent_bin), AGENT_BIN_MOUNT]
        # The sandbox-manager routes BW_MODEL_PROXY_URL alone out of a sandbox; here a
        # command told of it shares the host's network, where the fake model listens.
        reach_model = ["--share-net"] if "BW_MODEL_PROXY_URL" in (env or {}) else []
        command = [
            "bwrap",
            "--unshare-all",
            *reach_model,
            "--die-with-parent",
            "--clearenv",
            *[a for k, v in variables.items() for a in ("--setenv", k, v)],
            *system_mounts(),
            *binds,
            "--chdir",
            f"/{WORK}" if cwd == "." else cwd or "/app",
            *argv,
        ]
        started = time.monotonic()
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(
                process.communicate(stdin.encode() if stdin is not None else None), timeout_s
            )
            timed_out = False
        except TimeoutError:
            process.kill()
            out, err = await process.communicate()
            timed_out = True
        return SandboxExecFinished(
            command_id="c",
            run_id=self.run.run_id,
            sandbox_id=sandbox_id,
            exported=self._export(root, export or []),
            exit_code=-9 if timed_out else (process.returncode or 0),
            stdout=out.decode(errors="replace")[:65536],
            stderr=err.decode(errors="replace")[:65536],
            timed_out=timed_out,
            duration_ms=int((time.monotonic() - started) * 1000),
        )

    async def kill_sandbox(self, sandbox_id: str, *, reason: str) -> None:
        found = self.roots.pop(sandbox_id, None)
        if found is not None:
            shutil.rmtree(found[0], ignore_errors=True)
        await super().kill_sandbox(sandbox_id, reason=reason)
