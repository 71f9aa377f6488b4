"""A payment provider with no money behind it: for tests and demonstrations.

It takes every charge (or, built with ``decline=True``, declines every one), and
answers a repeated idempotency key with the first answer, as real providers do.
"""

import hashlib

from benchwright_billing.ports import Charge


class FakePaymentProvider:
    name = "fake"

    def __init__(self, *, decline: bool = False) -> None:
        self.decline = decline
        self.charges: dict[str, Charge] = {}
        # Every call, repeats included: (idempotency key, account, amount in cents).
        self.calls: list[tuple[str, str, int]] = []

    async def charge(self, *, account: str, amount_cents: int, idempotency_key: str) -> Charge:
        """Take (or decline) ``amount_cents``; a repeated key answers as the first time."""
        self.calls.append((idempotency_key, account, amount_cents))
        found = self.charges.get(idempotency_key)
        if found is not None:
            return found
        reference = "fake_ch_" + hashlib.sha256(idempotency_key.encode()).hexdigest()[:20]
        answer = (
            Charge(succeeded=False, reference=reference, detail="card_declined (fake provider)")
            if self.decline
            else Charge(succeeded=True, reference=reference)
        )
        self.charges[idempotency_key] = answer
        return answer
