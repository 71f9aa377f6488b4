"""What a Driver is, and the tools the pipeline lends it.

A Driver makes the judgement calls of a run: which benchmark a request means
(Find), what the dataset's rows are (Analyze), and the scorer that grades them
(Atomize). It never sees the model-under-test's credentials: everything it
does to the world goes through ``DriverTools``, which the pipeline records in
the run's log as tool calls and results.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from benchwright_orchestrator.ports import PhaseError
from benchwright_shared.contracts import CatalogListing


class DriverError(PhaseError):
    """The Driver cannot go on; ``error_type`` names why (a phase failure like any other)."""


class RestartPhase(Exception):
    """The Driver wants the current phase to start over (counts toward the cap)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class RequestReview(Exception):
    """The Driver cannot decide without a person; the run waits for one."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Resolution:
    """Find's answer."""

    benchmark_id: str
    benchmark_name: str
    subset_id: str
    subset_slug: str
    scope: dict[str, Any]
    sut: dict[str, Any] | None
    notes: list[str] = field(default_factory=list)
    # The benchmark the request named, when the catalog lacked it and the request
    # allowed this one in its place.
    substituted_for: str | None = None


@dataclass(frozen=True)
class RowSample:
    """What Analyze sees of a dataset: a few rows and where each category starts."""

    total: int
    rows: list[dict[str, Any]]
    indices: list[int]
    category_indices: dict[str, list[int]]


@dataclass(frozen=True)
class Analysis:
    kind: str
    schema: dict[str, Any]
    fields: dict[str, Any]
    candidates: list[str]
    evidence: list[str]


@dataclass(frozen=True)
class Scorer:
    """Atomize's answer: a proven ``task_impl.py``."""

    kind: str
    code: str
    check: dict[str, Any]


@dataclass
class DriverUsage:
    """Cumulative: calls, tokens and cost of a Driver's own model."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_micros: int = 0


class DriverTools(Protocol):
    """The pipeline's side of the Driver's work; every call is logged."""

    def say(self, text: str) -> None:
        """Record something the Driver wants the reader of the log to know."""
        ...

    async def log_call(
        self, tool: str, arguments: dict[str, Any], result: str, is_error: bool = False
    ) -> None:
        """Record a tool call the Driver answered itself (a phase's closing call)."""
        ...

    async def list_catalog(self) -> CatalogListing: ...

    async def sample_rows(self, per_category: int) -> RowSample: ...

    async def read_rows(self, indices: list[int]) -> list[dict[str, Any]]: ...

    async def write_file(self, path: str, content: str) -> None: ...

    async def run_command(self, argv: list[str], stdin: str | None = None) -> dict[str, Any]:
        """Run ``argv`` in the work sandbox; exit_code, stdout, stderr, timed_out."""
        ...

    async def score_outputs(
        self, code: str, outputs: list[tuple[int, str]]
    ) -> list[dict[str, Any]]:
        """Score given model replies with ``code`` in the sandbox (no model call)."""
        ...


class Driver(Protocol):
    name: str
    model: str | None

    @property
    def phase_models(self) -> Mapping[str, str]:
        """Another model for a phase (``find``/``analyze``/``atomize``); ``model`` otherwise."""
        ...

    # Why this Driver and not the one asked for, when they differ.
    note: str | None

    async def find(self, request: str, tools: DriverTools) -> Resolution: ...

    async def analyze(self, sample: RowSample, tools: DriverTools) -> Analysis: ...

    async def atomize(
        self,
        analysis: Analysis,
        sample: RowSample,
        *,
        attempt: int,
        guidance: list[str],
        tools: DriverTools,
    ) -> Scorer: ...

    def usage(self) -> "DriverUsage":
        """What the Driver's own model calls have used so far in this process."""
        ...
