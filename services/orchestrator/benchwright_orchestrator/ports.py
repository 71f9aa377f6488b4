"""What the pipeline needs from the world, as protocols.

The NATS adapters (``adapters/``) implement them in production; unit tests
give the phases fakes (``tests/orchestrator/fakes.py``). Nothing here does I/O.

Errors a phase can meet (a ``PhaseError`` is a ``Refused``: one refusal type)::

    PhaseError                 a phase could not finish; error_type says why
    ├── DriverError            the Driver cannot go on (``driver.base``)
    └── InfraError             the platform failed it (worth retrying)
        └── SandboxLost        the sandbox went with the sandbox-manager copy that held it
    RunSuperseded              another copy drives the run now: stop, touch nothing
"""

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from benchwright_orchestrator.domain import Run
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
from benchwright_shared.refusal import Refused


class PhaseError(Refused):
    """A phase could not finish; ``error_type`` (the refusal's ``code``) names why."""

    # The status it answers with, should a caller ever be told (a run records the rest).
    STATUS: ClassVar[int] = 500
    detail: str
    code: str

    def __init__(self, error_type: str, detail: str) -> None:
        super().__init__(self.STATUS, "phase failed", detail, code=error_type)

    @property
    def error_type(self) -> str:
        return self.code


class InfraError(PhaseError):
    """The platform, not the run, failed: a retry may well succeed."""

    STATUS = 503


class SandboxLost(InfraError):
    """The sandbox-manager copy holding the sandbox died (or stopped answering)."""

    def __init__(self, sandbox_id: str, detail: str) -> None:
        super().__init__("infra:sandbox_lost", detail)
        self.sandbox_id = sandbox_id


class RunSuperseded(Exception):
    """The run's log grew under us: another orchestrator copy took the run over.

    The pipeline that meets it stops at once, without tearing anything down (the
    sandboxes and the model key are the new driver's now) and without finishing.
    """


@dataclass(frozen=True)
class SweepEnded:
    """A sandbox's answer that it ran every task of one ``RunTasks``."""

    command_id: str
    completed: int
    error_type: str | None = None
    detail: str | None = None


# Called for every batch of results of the run, in the order they were published.
OnResults = Callable[[list[TaskOutcome], int], Awaitable[None]]


class ResultFeed(Protocol):
    """The run's task results, read in order from where they are kept.

    Batches of every ``RunTasks`` of the run reach ``on_results`` (with the sweep's
    invocation), those published before the feed opened included: a resumed sweep
    catches up on what its sandbox reported while nobody listened.
    """

    async def dispatch(
        self,
        sandbox_id: str,
        tasks: list[TaskSpec],
        *,
        concurrency: int,
        timeout_s: float,
        model: ModelAttached,
    ) -> str:
        """Send ``RunTasks`` to the sandbox; returns its command id."""
        ...

    async def ended(self, command_id: str, sandbox_id: str, idle_timeout_s: float) -> SweepEnded:
        """Wait for the sweep's end; ``SandboxLost`` when its sandbox goes, or goes silent."""
        ...


class Workspace(Protocol):
    """The run's hold on other services: its sandboxes, its dataset, its model.

    Everything is rebuilt from the run's log when missing (a resumed run, a
    replay, a fork, a recovered sandbox), and what happens is recorded on the run.
    """

    sandbox_id: str | None
    model: ModelAttached | None

    async def subset_rows(self, subset_id: str) -> SubsetRows: ...

    async def dataset_file(self) -> SandboxFile: ...

    async def scorer_code(self) -> str | None: ...

    async def list_catalog(self) -> CatalogListing: ...

    async def ensure_sandbox(self) -> str:
        """The work sandbox: created, or restored from the latest snapshot, when there is none."""
        ...

    async def create_task_sandbox(self, files: list[SandboxFile], snapshot: str | None) -> str:
        """A fanout task sandbox from ``snapshot`` (or the dataset) with ``files`` on top."""
        ...

    async def create_agentic_sandbox(
        self,
        files: list[SandboxFile],
        dirs: list[str],
        *,
        role: SandboxRole = "harbor_task_env",
        image: str | None = None,
        build: EnvironmentBuild | None = None,
    ) -> str:
        """A sandbox of a task's environment: nothing but ``files`` (absolute paths, each
        under one of ``dirs``, the writable places the task's scripts name); ``role``
        ``harbor_task_env`` for an attempt, ``template_probe`` for a product's probe;
        ``image``: the task's own container image (a backend that runs none refuses it);
        ``build``: its Dockerfile, built into the image it starts from (e2b builds it
        once per environment; the wait allows for the build's bound)."""
        ...

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
        """Run ``argv`` in a sandbox of the run's (after writing ``files``); ``network``:
        through the run's egress injector (its host policy), else no way out;
        ``export``: files put in the artifacts bucket after it (``exported``)."""
        ...

    async def keep_text(self, text: str) -> str:
        """Put ``text`` in the artifacts bucket under ``<run id>/<sha256>``; that name."""
        ...

    async def install_scorer(self) -> None: ...

    async def exec(
        self,
        argv: list[str],
        *,
        files: list[SandboxFile] | None = None,
        stdin: str | None = None,
        timeout_s: float = 120.0,
        export: list[str] | None = None,
    ) -> SandboxExecFinished: ...

    async def run_python(self, script: str, args: list[str], stdin: str | None = None) -> Any: ...

    async def snapshot(self, phase: str) -> None: ...

    async def kill_sandbox(self, sandbox_id: str, *, reason: str) -> None: ...

    async def lose_sandbox(self, sandbox_id: str, reason: str) -> None:
        """Let go of a sandbox that stopped answering: killed if its manager still lives,
        else recorded as lost (``SandboxLost``); the next ``ensure_sandbox`` makes another."""
        ...

    async def attach(self, *, fresh: bool = False) -> ModelAttached: ...

    async def release(self) -> None: ...

    def results(
        self, invocation: int, on_results: OnResults
    ) -> AbstractAsyncContextManager[ResultFeed]:
        """Open the run's result feed for one Materialize invocation."""
        ...


@dataclass(frozen=True)
class RecordedTrial:
    """What a run's latest sweep recorded for one (task, trial): what a rescore scores."""

    task_id: str
    output: str | None
    error_type: str | None = None


class RunStore(Protocol):
    """Where the run's log is written."""

    async def save(self, run: Run) -> None: ...

    async def copy_cell(self, run: Run, source_id: str, phase: str, types: tuple[str, ...]) -> bool:
        """Copy a cache cell's artifacts and snapshot from ``source_id``; False when gone."""
        ...

    async def inherit_scorer(self, run: Run) -> None: ...

    async def recorded_outputs(self, run: Run) -> dict[tuple[int, int], RecordedTrial]:
        """A rescore's parent's latest sweep, by (index, trial); empty without a parent."""
        ...


class Platform(Protocol):
    """Questions for the other services that are not about the run's sandboxes."""

    async def find_cell(self, phase: str, fingerprint: str, account: str) -> str | None:
        """The run that recorded this phase-cache cell, if any (a miss on no answer)."""
        ...

    async def run_cost(self, run_id: str) -> RunCost: ...

    async def account_stop(self, account: str) -> str | None:
        """``balance_exhausted`` or ``monthly_cap_reached`` when billing says stop."""
        ...

    async def report_driver_usage(self, usage: DriverUsageRecorded) -> None: ...
