"""Webhook settings, ``BW_WEBHOOKS_``-prefixed, beside the shared ``BW_`` ones."""

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from benchwright_gateway.webhooks.domain import RetryPolicy


class WebhookSettings(BaseSettings):
    """How the gateway registers endpoints and delivers to them."""

    model_config = SettingsConfigDict(env_prefix="BW_WEBHOOKS_", extra="ignore")

    # The Fernet key sealing signing secrets (``BW_WEBHOOKS_KEY``); without it one
    # is made once into the gateway's data directory (0600).
    key: str | None = Field(default=None, repr=False)
    # Development and tests: accept http://localhost and private addresses.
    allow_insecure_urls: bool = False
    # Attempts per delivery, the first included, and the backoff between them.
    max_attempts: int = Field(default=12, ge=1, le=50)
    backoff_initial_s: float = Field(default=10.0, gt=0)
    backoff_max_s: float = Field(default=3600.0, gt=0)
    # One attempt's whole request, connect to response headers.
    timeout_s: float = Field(default=10.0, gt=0)
    # Requests in flight at once from one gateway process.
    concurrency: int = Field(default=8, ge=1)
    # How often the outbox is looked at when nothing wakes the deliverer.
    poll_interval_s: float = Field(default=1.0, gt=0)
    # How long a settled run's event waits for the run's read model before it is
    # sent with the run as the read model has it.
    payload_wait_s: float = Field(default=300.0, gt=0)
    # Endpoints per account.
    max_endpoints: int = Field(default=20, ge=1)

    @property
    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(
            max_attempts=self.max_attempts,
            initial_s=self.backoff_initial_s,
            max_s=self.backoff_max_s,
        )
