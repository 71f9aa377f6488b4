"""What billing needs from the outside world, as protocols its adapters implement."""

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Charge:
    """A payment provider's answer to a charge: taken or declined, and its reference."""

    succeeded: bool
    # The provider's id for the charge (or the attempt), kept on the ledger line.
    reference: str
    # Why it was declined, in the provider's words.
    detail: str = ""


class PaymentError(Exception):
    """The provider could not be asked (down, timed out): the charge is tried again later
    with the same idempotency key, so it is never taken twice."""


class PaymentProvider(Protocol):
    """Charges an account's saved payment method (an auto-refill)."""

    name: str

    async def charge(self, *, account: str, amount_cents: int, idempotency_key: str) -> Charge:
        """Charge ``amount_cents``; the same ``idempotency_key`` again answers the first
        charge's outcome and takes nothing more. Raises ``PaymentError`` when the
        provider cannot be reached; a decline is an answer, not an error."""
        ...
