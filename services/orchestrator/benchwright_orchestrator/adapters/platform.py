"""The platform port: billing, the phase-cache index and Driver usage, over NATS."""

import logging
from dataclasses import dataclass

from faststream.nats import NatsBroker

from benchwright_shared.bus import ask, publish_event
from benchwright_shared.contracts import DriverUsageRecorded, GetRunCost, RunCost
from benchwright_shared.contracts.billing import BalanceView, ReadBalance
from benchwright_shared.contracts.registry_reads import FindPhaseCell, PhaseCell

log = logging.getLogger(__name__)

# A phase-cache lookup that takes longer than this is a miss: the phase does its work.
CELL_LOOKUP_TIMEOUT_S = 5.0
# The limit loop asks billing every couple of seconds; a slow answer waits for the next.
BILLING_TIMEOUT_S = 2.0


@dataclass
class NatsPlatform:
    broker: NatsBroker

    async def find_cell(self, phase: str, fingerprint: str, account: str) -> str | None:
        """Ask the registry's phase-cache index (decision 0012); no answer is a miss."""
        try:
            cell = await ask(
                self.broker,
                FindPhaseCell(account=account, phase=phase, fingerprint=fingerprint),
                PhaseCell,
                timeout=CELL_LOOKUP_TIMEOUT_S,
            )
        except Exception:
            log.warning("phase cache: no answer from the registry", exc_info=True)
            return None
        if cell.problem is not None:
            log.warning("phase cache: %s", cell.problem.detail or cell.problem.title)
            return None
        return cell.run_id

    async def run_cost(self, run_id: str) -> RunCost:
        return await ask(self.broker, GetRunCost(run_id=run_id), RunCost, timeout=BILLING_TIMEOUT_S)

    async def account_stop(self, account: str) -> str | None:
        view = await ask(
            self.broker, ReadBalance(account=account), BalanceView, timeout=BILLING_TIMEOUT_S
        )
        return view.stop_reason

    async def report_driver_usage(self, usage: DriverUsageRecorded) -> None:
        await publish_event(self.broker, usage, msg_id=f"driver-usage:{usage.usage_id}")
