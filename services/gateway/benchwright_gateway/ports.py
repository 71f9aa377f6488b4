"""What the gateway's operations need from the world, as Protocols.

The operations (``benchwright_gateway.operations``) launch and steer runs over these
ports only: ``adapters.BusPorts`` implements them over NATS request/reply, the runs
view and the gateway's own application; the unit tests implement them in memory.
Each port is a question or a command the operations ask by name, with the
services' own contract types, so a fake answers exactly what a service would.
"""

from collections.abc import Callable
from typing import Any, Protocol

from benchwright_shared.api.launch import Run
from benchwright_shared.contracts import (
    BenchmarkResolution,
    Contract,
    GetImpl,
    GetSubsetRows,
    ImplCode,
    ResolveBenchmark,
    SubsetRows,
)
from benchwright_shared.contracts.billing import BalanceView
from benchwright_shared.contracts.queries import (
    CheckProviderKeys,
    ModelCallPrices,
    PriceModelCalls,
    ProviderKeys,
)
from benchwright_shared.contracts.registry import ReadSubset, RegistryAnswer

# A row of the gateway's runs view (``projections.get_run``): its columns by name.
RunRow = dict[str, Any]


class Registry(Protocol):
    """The registry's answers; a problem comes back in the answer, not raised."""

    async def resolve(self, query: ResolveBenchmark) -> BenchmarkResolution: ...

    async def subset(self, query: ReadSubset) -> RegistryAnswer: ...

    async def subset_rows(self, query: GetSubsetRows) -> SubsetRows: ...

    async def impl(self, query: GetImpl) -> ImplCode: ...


class Billing(Protocol):
    """Billing's view of an account, and whether this deployment enforces it."""

    @property
    def billing_enforced(self) -> bool: ...

    async def balance(self, account: str) -> BalanceView: ...


class Pricing(Protocol):
    """The proxy's prices for model calls (it bills with the same table), and which
    models no key reaches (the proxy holds the keys)."""

    async def price(self, query: PriceModelCalls) -> ModelCallPrices: ...

    async def provider_keys(self, query: CheckProviderKeys) -> ProviderKeys: ...


class Commands(Protocol):
    """Commands to other services, sent durably (their ``command_id`` dedupes a resend)."""

    async def send(self, command: Contract) -> None: ...


class RunViews(Protocol):
    """The gateway's read model of runs."""

    async def run(self, run_id: str) -> RunRow | None:
        """The run's row; None for a missing or deleted run."""
        ...

    async def latest_outcomes(self, run_id: str) -> dict[int, tuple[str, str]]:
        """Row index -> (task id, outcome) of the run's latest sweep."""
        ...

    async def recorded_outputs(self, run_id: str) -> int:
        """How many tasks (or trials) of the run's latest sweep recorded an output."""
        ...

    async def wait_for_run(
        self, run_id: str, until: Callable[[RunRow | None], bool] | None = None, tries: int = 100
    ) -> RunRow | None:
        """Read-your-write: the row once it shows (as ``until`` wants), else the last read."""
        ...

    async def show(self, row: RunRow) -> Run:
        """The run as the API answers it, its cost included."""
        ...


class LabelViews(Protocol):
    """The runs view's graded tasks and people's labels of them (``labels_view``)."""

    async def graded_rows(self, run_id: str, *, per_trial: bool) -> list[RunRow]:
        """The grader's result per settled task (or trial) of the latest sweep."""
        ...

    async def labels(self, run_id: str, invocation: int | None = None) -> list[RunRow]:
        """Each person's latest label per task, oldest first."""
        ...

    async def wait_for_label(self, run_id: str, label_id: str) -> RunRow | None:
        """Read-your-write: the label once the view holds it, else None."""
        ...


class LaunchRecord(Protocol):
    """The first launch made with an idempotency key."""

    @property
    def run_id(self) -> str: ...

    @property
    def body_sha256(self) -> str: ...


class Accounts(Protocol):
    """What the gateway keeps per account: launch defaults and idempotency records."""

    async def defaults(self, account: str) -> dict[str, Any]:
        """The account's stored settings (``default_driver`` ...), for what a body leaves out."""
        ...

    async def find_launch(self, account: str, key: str) -> LaunchRecord | None: ...

    async def remember_launch(
        self, account: str, key: str, body_sha256: str, run_id: str
    ) -> LaunchRecord:
        """Record a launch for ``key``; the first record when another came first."""
        ...


class LaunchPorts(Registry, Billing, Pricing, Commands, RunViews, Accounts, Protocol):
    """Everything launching, estimating and steering a run asks of the world."""


class LabelPorts(Commands, RunViews, LabelViews, Protocol):
    """What labelling a run's tasks and measuring agreement ask of the world."""
