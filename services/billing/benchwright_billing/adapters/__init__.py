"""Payment providers, looked up by name (``BW_PAYMENT_PROVIDER``).

Adding one is adding a module here and a line in ``PROVIDERS``; a real provider's
SDK is imported lazily inside its own module.
"""

from collections.abc import Callable

from benchwright_billing.adapters.fake_payments import FakePaymentProvider
from benchwright_billing.ports import PaymentProvider
from benchwright_billing.settings import BillingSettings

PROVIDERS: dict[str, Callable[[BillingSettings], PaymentProvider]] = {
    "fake": lambda settings: FakePaymentProvider(decline=settings.fake_payments_decline),
}


def payment_provider(settings: BillingSettings) -> PaymentProvider | None:
    """The configured provider, or None when the deployment has none (the default)."""
    name = settings.payment_provider
    if not name:
        return None
    try:
        return PROVIDERS[name](settings)
    except KeyError:
        known = ", ".join(sorted(PROVIDERS))
        raise ValueError(
            f"BW_PAYMENT_PROVIDER={name!r} is not a payment provider ({known})"
        ) from None
