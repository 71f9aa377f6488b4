"""The money a launch needs, where this deployment enforces billing."""

from benchwright_gateway.ports import Billing
from benchwright_shared.refusal import Refused


async def check_funds(billing: Billing, account: str) -> None:
    """Refuse a launch (402 ``insufficient_balance``) by an account under its launch
    floor or stopped by billing; nothing is asked where billing is not enforced."""
    if not billing.billing_enforced:
        return
    view = await billing.balance(account)
    short = view.balance.amount_cents < view.launch_floor.amount_cents
    if short or view.stop_reason:
        raise Refused(
            402,
            "insufficient balance",
            f"launching needs a balance of at least {view.launch_floor.amount_cents} cents "
            f"(you have {view.balance.amount_cents}"
            + (f"; {view.stop_reason}" if view.stop_reason else "")
            + "); top up with POST /v1/billing/topups",
            code="insufficient_balance",
        )
