"""Assembles billing: the ledger projection, the accounts' store and its relay, the
watch over accounts' money, and the queries they answer."""

from dataclasses import dataclass, field

from faststream.nats import NatsBroker, NatsRouter

from benchwright_billing import handlers
from benchwright_billing.adapters import payment_provider
from benchwright_billing.application import BillingApplication, translate_notification
from benchwright_billing.projections import LedgerProjection, run_cost
from benchwright_billing.settings import BillingSettings
from benchwright_billing.watch import AccountWatch
from benchwright_shared import subjects
from benchwright_shared.bus import jetstream
from benchwright_shared.contracts import GetRunCost, RunCost
from benchwright_shared.projection_runner import ProjectionHost, Source
from benchwright_shared.relay import Relay
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
    billing_settings: BillingSettings = field(default_factory=BillingSettings)

    def __post_init__(self) -> None:
        self.payments = payment_provider(self.billing_settings)
        self.store = BlockingStore(self.name)
        self.app = BillingApplication(
            eventsourcing_env(self.settings, self.name),
            markup=self.settings.billing_markup,
            enforce=self.settings.billing_enforce,
            payment_provider=self.payments.name if self.payments else None,
        )
        # Alerts leave the store through the relay, after commit, each once.
        self.relay = Relay(
            service=self.name,
            app=self.app,
            store=self.store,
            translate=translate_notification,
            stream=subjects.EVENTS_STREAM,
        )
        self.ledger = LedgerProjection()
        self.views = ProjectionHost(
            self.settings, self.name, self.router, {"ledger": (self.ledger, LEDGER_SOURCE)}
        )
        self.watch = AccountWatch(
            self.app,
            self.store,
            self.views,
            self.payments,
            interval_s=self.billing_settings.watch_interval_s,
            sweep_interval_s=self.billing_settings.sweep_interval_s,
            on_saved=self.relay.wake,
        )
        self.ledger.on_line = self.watch.touch
        handlers.register(self.router, self.app, self.store, self.views, self.watch)

        @self.router.subscriber(GetRunCost.subject, queue=self.name)
        async def get_run_cost(query: GetRunCost) -> RunCost:
            totals = await self.views.read(lambda cur: run_cost(cur, query.run_id))
            spent = {s: totals[f"{s}_micros"] for s in ("sandbox", "driver", "narration")}
            billed = self.app.run_billed(spent)
            return RunCost(run_id=query.run_id, billed_micros=billed, **totals)

    async def start(self, broker: NatsBroker) -> None:
        self.views.broker = broker
        await self.relay.start(jetstream(broker))
        self.watch.start()

    async def stop(self) -> None:
        await self.watch.stop()
        await self.relay.stop()
        self.views.close()
        await self.store.run(self.app.close)
        self.store.close()


def build(settings: Settings) -> BillingService:
    return BillingService(settings)
