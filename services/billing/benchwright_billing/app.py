"""Assembles billing: the ledger projection and the queries it answers."""

from dataclasses import dataclass, field

from faststream.nats import NatsBroker, NatsRouter

from benchwright_billing.projections import LedgerProjection, run_cost
from benchwright_shared import subjects
from benchwright_shared.bus import jetstream
from benchwright_shared.contracts import GetRunCost, RebuildProjection, RebuildResult, RunCost
from benchwright_shared.contracts.base import Problem
from benchwright_shared.projection import ProjectionStore
from benchwright_shared.projection_runner import rebuild_projection, register_projection
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore


@dataclass
class BillingService:
    settings: Settings
    name: str = "billing"
    router: NatsRouter = field(default_factory=NatsRouter)

    def __post_init__(self) -> None:
        self.blocking = BlockingStore(self.name)
        self.views = ProjectionStore(self.settings, self.name, [LedgerProjection()])
        self.broker: NatsBroker | None = None
        for subject in ("bw.evt.proxy.model_usage.v1", "bw.evt.sandbox.killed.v1"):
            register_projection(
                self.router,
                store=self.views,
                blocking=self.blocking,
                projection="ledger",
                stream=subjects.EVENTS_STREAM,
                subject=subject,
                service=f"{self.name}-{subject.split('.')[3]}",
                max_deliver=self.settings.max_deliver,
            )

        @self.router.subscriber(GetRunCost.subject, queue=self.name)
        async def get_run_cost(query: GetRunCost) -> RunCost:
            totals = await self.blocking.run(self.views.read, lambda c: run_cost(c, query.run_id))
            return RunCost(run_id=query.run_id, **totals)

        @self.router.subscriber(subjects.rebuild_subject(self.name), queue=self.name)
        async def rebuild(query: RebuildProjection) -> RebuildResult:
            if query.projection != "ledger" or self.broker is None:
                return RebuildResult(
                    projection=query.projection,
                    problem=Problem(title="unknown projection", status=404),
                )
            return await rebuild_projection(
                jetstream(self.broker),
                store=self.views,
                blocking=self.blocking,
                projection="ledger",
                stream=subjects.EVENTS_STREAM,
                subject="bw.evt.>",
            )

    async def start(self, broker: NatsBroker) -> None:
        self.broker = broker

    async def stop(self) -> None:
        self.views.close()
        self.blocking.close()


def build(settings: Settings) -> BillingService:
    return BillingService(settings)
