"""What the model proxy attaches to a provider call: the account's secrets for its host.

A run's credentials are the vault secrets whose rules match the provider's host,
at the versions current when the run attached (a rotation reaches new runs only);
without one, the deployment's own key (``BW_<PROVIDER>_API_KEY``) is used.
"""

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from benchwright_shared.contracts import SutRef

# Where each named provider is reached: the host its secret rules match.
PROVIDER_HOSTS = {
    "openrouter": "openrouter.ai",
    "together": "api.together.xyz",
}


@dataclass(frozen=True)
class UpstreamAuth:
    """Headers and query parameters for one run's provider calls.

    The values are secrets: ``repr`` shows only their names.
    """

    headers: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"UpstreamAuth(headers={sorted(self.headers)}, params={sorted(self.params)})"

    def bearer(self) -> str | None:
        """The token of a ``Bearer`` Authorization header, if there is one."""
        value = self.headers.get("Authorization", "")
        return value[7:] if value.startswith("Bearer ") else None


def upstream_host(sut: SutRef) -> str | None:
    """The host a provider call for ``sut`` goes to, as secret rules name it."""
    if sut.api_base:
        return urlsplit(sut.api_base).hostname
    return PROVIDER_HOSTS.get(sut.provider)
