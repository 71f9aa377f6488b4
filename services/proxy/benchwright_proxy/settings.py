"""The proxy's own settings, ``BW_PROXY_``-prefixed, beside the shared ``BW_`` ones."""

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ProxySettings(BaseSettings):
    """How the proxy treats the upstreams it calls."""

    model_config = SettingsConfigDict(env_prefix="BW_PROXY_", extra="ignore")

    # Calls in flight toward one upstream at most (``BW_PROXY_UPSTREAM_CONCURRENCY``).
    # While the upstream answers 429 the proxy lets fewer through, never more.
    upstream_concurrency: int = Field(default=64, ge=1)
    # Attempts per call, the first included, for 429s, 5xx and dropped connections.
    upstream_max_attempts: int = Field(default=5, ge=1)
