"""Billing's own settings, ``BW_BILLING_``-prefixed, beside the shared ``BW_`` ones
(``BW_BILLING_MARKUP`` and ``BW_BILLING_ENFORCE`` are shared: the orchestrator reads them too)."""

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class BillingSettings(BaseSettings):
    """How billing charges for auto-refills and how often it looks at accounts."""

    model_config = SettingsConfigDict(env_prefix="BW_BILLING_", extra="ignore")

    # The payment provider auto-refills charge (``BW_PAYMENT_PROVIDER``): unset, there
    # is none and enabling auto-refill is refused. ``fake`` takes (or declines) every
    # charge without money: tests and demonstrations only.
    payment_provider: str | None = Field(
        default=None,
        validation_alias=AliasChoices("BW_PAYMENT_PROVIDER", "BW_BILLING_PAYMENT_PROVIDER"),
    )
    # The fake provider declines every charge (``BW_BILLING_FAKE_PAYMENTS_DECLINE``).
    fake_payments_decline: bool = False
    # How soon an account whose spend moved is looked at (alerts, refills).
    watch_interval_s: float = Field(default=0.5, gt=0)
    # How often every account with spend is looked at anyway (after a restart, say).
    sweep_interval_s: float = Field(default=60.0, gt=0)
