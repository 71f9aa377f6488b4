"""Assembles billing: the ledger projection, the accounts' store, the queries they answer."""

from dataclasses import dataclass, field

from faststream.nats import NatsBroker, NatsRouter

from benchwright_billing import handlers
from benchwright_billing.application import BillingApplication
from benchwright_billing.projections import LedgerProjection, run_cost
from benchwright_shared import subjects
from benchwright_shared.contracts import GetRunCost, RunCost
from benchwright_shared.projection_runner import ProjectionHost, Source
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore, eventsourcing_env

LEDGER_SOURCE = Source(
    stream=subjects.EVENTS_STREAM,
    subjects=(
        subjects.MODEL_USAGE_RECORDED,
        subjects.SANDBOX_KILLED,
        subjects.DRIVER_USAGE_RECORDED,
    ),
    replay_subject="bw.evt.>",
)


@dataclass
class BillingService:
    settings: Settings
    name: str = "billing"
    router: NatsRouter = field(default_factory=NatsRouter)

    def __post_init__(self) -> None:
        self.views = ProjectionHost(
            self.settings, self.name, self.router, {"ledger": (LedgerProjection(), LEDGER_SOURCE)}
        )

        self.store = BlockingStore(self.name)
        self.app = BillingApplication(
            eventsourcing_env(self.settings, self.name),
            markup=self.settings.billing_markup,
            enforce=self.settings.billing_enforce,
        )
        handlers.register(self.router, self.app, self.store, self.views)

        @self.router.subscriber(GetRunCost.subject, queue=self.name)
        async def get_run_cost(query: GetRunCost) -> RunCost:
            totals = await self.views.read(lambda cur: run_cost(cur, query.run_id))
            return RunCost(run_id=query.run_id, **totals)

    async def start(self, broker: NatsBroker) -> None:
        self.views.broker = broker

    async def stop(self) -> None:
        self.views.close()
        self.app.close()
        self.store.close()


def build(settings: Settings) -> BillingService:
    return BillingService(settings)
