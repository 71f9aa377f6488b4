"""In-memory stand-ins for the orchestrator's ports: phases tested with no bus and no store.

``FakeWorkspace`` records on the run what the NATS workspace would (sandboxes
created, snapshotted, killed, lost); its sandboxes run no code. A sweep's
behaviour is a script (``Sweeper``): for each ``RunTasks`` it says which
results come back, in which batches, and whether the sweep ends or its sandbox
is lost.
"""

import asyncio
import hashlib
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from benchwright_orchestrator.application import to_run_event
from benchwright_orchestrator.domain import Run
from benchwright_orchestrator.ports import OnResults, SandboxLost, SweepEnded
from benchwright_shared.contracts import (
    CatalogListing,
    DriverUsageRecorded,
    EnvironmentBuild,
    ModelAttached,
    RunCost,
    SandboxExecFinished,
    SandboxFile,
    SubsetRows,
    TaskOutcome,
    TaskSpec,
)
from benchwright_shared.contracts.commands import SandboxRole

MODEL = ModelAttached(
    command_id="c",
    run_id="r",
    proxy_url="http://proxy",
    proxy_key="k",
    model_id="m",
    litellm_config_yaml="model_list: []\n",
)


def new_run(*, k: int = 1, limit: int | None = None, mode: str = "pinned") -> Run:
    return Run(
        run_id=str(uuid.uuid4()),
        account="acct",
        mode=mode,
        benchmark_id="bm_x",
        benchmark_name="X",
        subset_id="sub_x",
        subset_slug="test",
        impl_id="bm_x:abc",
        sut={"model": "m", "provider": "p"},
        limit=limit,
        metadata={},
        idempotency_key=None,
        trials={"plan": {"k": k}, "aggregator": {"name": "any_pass"}},
    )


def outcome(spec: TaskSpec, passed: bool = True) -> TaskOutcome:
    return TaskOutcome(
        index=spec.index,
        trial=spec.trial,
        task_id=f"t{spec.index}",
        score=1.0 if passed else 0.0,
        outcome="pass" if passed else "fail",
        duration_ms=10,
    )


@dataclass
class Sweep:
    """What one ``RunTasks`` does: batches of results, then its end or its sandbox's loss."""

    batches: list[list[TaskOutcome]]
    lost: bool = False
    error_type: str | None = None


# (sandbox id, the tasks sent, how many sweeps came before) -> what happens.
Sweeper = Callable[[str, list[TaskSpec], int], Sweep]


def everything(sandbox_id: str, tasks: list[TaskSpec], before: int) -> Sweep:
    """A sandbox that scores every task it is sent, passing them, in one batch."""
    return Sweep([[outcome(t) for t in tasks]])


class FakeFeed:
    def __init__(self, work: "FakeWorkspace", invocation: int, on_results: OnResults) -> None:
        self.work = work
        self.invocation = invocation
        self.on_results = on_results
        self._sweeps: dict[str, tuple[str, Sweep]] = {}

    async def dispatch(
        self,
        sandbox_id: str,
        tasks: list[TaskSpec],
        *,
        concurrency: int,
        timeout_s: float,
        model: ModelAttached,
    ) -> str:
        command_id = str(uuid.uuid4())
        self.work.dispatched.append((sandbox_id, list(tasks)))
        sweep = self.work.sweeper(sandbox_id, list(tasks), len(self.work.dispatched) - 1)
        self._sweeps[command_id] = (sandbox_id, sweep)
        return command_id

    async def ended(self, command_id: str, sandbox_id: str, idle_timeout_s: float) -> SweepEnded:
        _, sweep = self._sweeps.pop(command_id)
        for batch in sweep.batches:
            await asyncio.sleep(self.work.delay_s)
            await self.on_results(batch, self.invocation)
        if sweep.lost:
            raise SandboxLost(sandbox_id, "its sandbox-manager sm-1 died")
        completed = sum(len(b) for b in sweep.batches)
        return SweepEnded(command_id=command_id, completed=completed, error_type=sweep.error_type)


@dataclass
class FakeWorkspace:
    run: Run
    sweeper: Sweeper = everything
    total_tasks: int = 10
    delay_s: float = 0.0
    # What happened, for the tests to read.
    dispatched: list[tuple[str, list[TaskSpec]]] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    killed: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    execs: list[list[str]] = field(default_factory=list)
    sandbox_id: str | None = None
    model: ModelAttached | None = None
    # Pauses inside create/kill, to let a test halt in the middle.
    create_delay_s: float = 0.0
    kill_delay_s: float = 0.0
    fail_create: bool = False
    # The image each agentic sandbox was asked to start from (None: the backend's own).
    images: list[str | None] = field(default_factory=list)
    # The environment each agentic sandbox was asked to be built from (None: none).
    builds: list[EnvironmentBuild | None] = field(default_factory=list)
    # What ``keep_text`` put in the artifacts bucket, by object name.
    kept: dict[str, str] = field(default_factory=dict)

    async def subset_rows(self, subset_id: str) -> SubsetRows:
        return SubsetRows(
            subset_id=subset_id,
            total=self.total_tasks,
            rows=[],
            content_sha256="c" * 64,
            bucket="bw-datasets",
            object_name="rows.jsonl",
        )

    async def dataset_file(self) -> SandboxFile:
        return SandboxFile(path="tasks.jsonl", bucket="bw-datasets", object_name="rows.jsonl")

    async def scorer_code(self) -> str | None:
        return "class Task: ...\n"

    async def list_catalog(self) -> CatalogListing:
        return CatalogListing(benchmarks=[])

    async def _new(self, role: str) -> str:
        await asyncio.sleep(self.create_delay_s)
        if self.fail_create:
            from benchwright_orchestrator.ports import PhaseError

            raise PhaseError("sandbox_setup_failed", "no room")
        sandbox_id = f"sbx_{len(self.created) + 1}"
        self.created.append(sandbox_id)
        self.run.sandbox_created(
            sandbox_id=sandbox_id,
            backend="local",
            metadata={"benchwright_role": role, "from_snapshot": self.run.latest_snapshot()},
            owner="sm-1",
        )
        return sandbox_id

    async def ensure_sandbox(self) -> str:
        if self.sandbox_id is None:
            self.sandbox_id = await self._new("work")
        return self.sandbox_id

    async def create_task_sandbox(self, files: list[SandboxFile], snapshot: str | None) -> str:
        return await self._new("task")

    async def keep_text(self, text: str) -> str:
        name = f"{self.run.run_id}/{hashlib.sha256(text.encode()).hexdigest()}"
        self.kept[name] = text
        return name

    async def create_agentic_sandbox(
        self,
        files: list[SandboxFile],
        dirs: list[str],
        *,
        role: SandboxRole = "harbor_task_env",
        image: str | None = None,
        build: EnvironmentBuild | None = None,
    ) -> str:
        self.images.append(image)
        self.builds.append(build)
        return await self._new(role)

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
        self.execs.append(argv)
        return SandboxExecFinished(
            command_id="c", run_id=self.run.run_id, sandbox_id=sandbox_id, exit_code=0, stdout="ok"
        )

    async def install_scorer(self) -> None:
        return None

    async def exec(
        self,
        argv: list[str],
        *,
        files: list[SandboxFile] | None = None,
        stdin: str | None = None,
        timeout_s: float = 120.0,
    ) -> SandboxExecFinished:
        sandbox_id = await self.ensure_sandbox()
        self.execs.append(argv)
        return SandboxExecFinished(
            command_id="c", run_id=self.run.run_id, sandbox_id=sandbox_id, exit_code=0, stdout="ok"
        )

    async def run_python(self, script: str, args: list[str], stdin: str | None = None) -> Any:
        raise NotImplementedError("no Driver work in these tests")

    async def snapshot(self, phase: str) -> None:
        sandbox_id = await self.ensure_sandbox()
        self.run.snapshot_created(
            phase=phase, snapshot_id=f"snap_{phase}", sandbox_id=sandbox_id, size_bytes=1
        )

    async def kill_sandbox(self, sandbox_id: str, *, reason: str) -> None:
        await asyncio.sleep(self.kill_delay_s)
        self.killed.append(sandbox_id)
        self.run.sandbox_killed(
            sandbox_id=sandbox_id,
            backend="local",
            reason=reason,
            duration_ms=1,
            cost_micros=0,
            metadata={},
        )
        if sandbox_id == self.sandbox_id:
            self.sandbox_id = None

    async def lose_sandbox(self, sandbox_id: str, reason: str) -> None:
        self.lost.append(sandbox_id)
        if sandbox_id in self.run.open_sandboxes:
            self.run.sandbox_lost(sandbox_id=sandbox_id, reason=reason)
        if sandbox_id == self.sandbox_id:
            self.sandbox_id = None

    async def attach(self, *, fresh: bool = False) -> ModelAttached:
        if self.model is None or fresh:
            self.model = MODEL
        return self.model

    async def release(self) -> None:
        for sandbox_id in list(self.run.open_sandboxes):
            await self.kill_sandbox(sandbox_id, reason="run_finished")
        self.model = None

    @asynccontextmanager
    async def results(self, invocation: int, on_results: OnResults) -> AsyncIterator[FakeFeed]:
        yield FakeFeed(self, invocation, on_results)


@dataclass
class FakeStore:
    saves: int = 0
    saved: list[Any] = field(default_factory=list)

    @property
    def events(self) -> list[str]:
        return [type(e).__name__ for e in self.saved]

    async def save(self, run: Run) -> None:
        self.saves += 1
        events = run.collect_events()
        for event in events:  # as the real store does: each checked as its log entry
            to_run_event(event)
        self.saved.extend(events)

    async def copy_cell(self, run: Run, source_id: str, phase: str, types: tuple[str, ...]) -> bool:
        return False

    async def inherit_scorer(self, run: Run) -> None:
        return None

    async def recorded_outputs(self, run: Run) -> dict[tuple[int, int], Any]:
        return {}


@dataclass
class FakePlatform:
    cost_micros: int = 0
    usage: list[DriverUsageRecorded] = field(default_factory=list)

    async def find_cell(self, phase: str, fingerprint: str, account: str) -> str | None:
        return None

    async def run_cost(self, run_id: str) -> RunCost:
        return RunCost(run_id=run_id, model_micros=self.cost_micros)

    async def account_stop(self, account: str) -> str | None:
        return None

    async def report_driver_usage(self, usage: DriverUsageRecorded) -> None:
        self.usage.append(usage)


def now() -> datetime:
    return datetime.now(UTC)
