"""``task.toml``, with Harbor's own field names, and the network a task may have.

The models keep the fields of Harbor's ``TaskConfig`` that Benchwright reads and,
like Harbor's, ignore the ones it does not (``[task]`` authors, MCP servers, GPU
types, ...), so a real Harbor task parses unchanged. Deprecated spellings Harbor
still accepts are accepted too: a top-level ``version`` for ``schema_version``,
``[environment] allow_internet`` for ``network_mode``, ``memory = "2G"`` for
``memory_mb``.

Network: a task says what it needs (``[environment] network_mode``, overridden per
phase by ``[agent]`` / ``[verifier]``); the account's host policy says what it may
have. The sandbox gets the intersection, never more than either allows.
"""

import ipaddress
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# Harbor's defaults (harbor.models.task.config).
DEFAULT_VERIFIER_TIMEOUT_SEC = 600.0
DEFAULT_BUILD_TIMEOUT_SEC = 600.0


class NetworkMode(StrEnum):
    """Harbor's network access policy for a task's sandbox."""

    NO_NETWORK = "no-network"
    PUBLIC = "public"
    ALLOWLIST = "allowlist"


class _Section(BaseModel):
    # Harbor's models ignore unknown keys; so do these, so newer tasks still parse.
    model_config = ConfigDict(extra="ignore")


class NetworkPolicy(_Section):
    """What one phase (agent or verifier) may reach, as the task asks it."""

    network_mode: NetworkMode = NetworkMode.PUBLIC
    allowed_hosts: list[str] = Field(default_factory=list)


class PackageInfo(_Section):
    """``[task]``: the task's registry identity (``org/name``), when it has one."""

    name: str
    version: str | None = None
    description: str = ""
    keywords: list[str] = Field(default_factory=list)


class PhaseConfig(_Section):
    """Fields ``[agent]`` and ``[verifier]`` share: who runs, and a network override."""

    user: str | int | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None

    def explicit_policy(self) -> NetworkPolicy | None:
        """The phase's own network policy, when it overrides the environment's."""
        if self.network_mode is None:
            return None
        return NetworkPolicy(network_mode=self.network_mode, allowed_hosts=self.allowed_hosts or [])


class AgentConfig(PhaseConfig):
    """``[agent]``."""

    timeout_sec: float | None = None


class VerifierConfig(PhaseConfig):
    """``[verifier]``: ``environment_mode`` is Harbor's shared / separate verifier."""

    timeout_sec: float = DEFAULT_VERIFIER_TIMEOUT_SEC
    env: dict[str, str] = Field(default_factory=dict)
    environment_mode: Literal["shared", "separate"] | None = None


class SolutionConfig(_Section):
    """``[solution]``: variables the oracle's ``solve.sh`` runs with."""

    env: dict[str, str] = Field(default_factory=dict)


def _size_to_mb(size: str) -> int:
    """Harbor's deprecated ``memory = "2G"`` spelling, in MB."""
    text = size.strip().upper()
    units = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}
    if not text or text[-1] not in units:
        raise ValueError(f"size {size!r} must look like '1G' or '512M'")
    return int(float(text[:-1]) * units[text[-1]])


class EnvironmentConfig(_Section):
    """``[environment]``: how the task's sandbox is built and what it may reach."""

    build_timeout_sec: float = DEFAULT_BUILD_TIMEOUT_SEC
    docker_image: str | None = None
    os: Literal["linux", "windows"] = "linux"
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    gpus: int | None = None
    network_mode: NetworkMode = NetworkMode.PUBLIC
    allowed_hosts: list[str] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    workdir: str | None = None

    @field_validator("os", mode="before")
    @classmethod
    def _lower_os(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _legacy_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        allow_internet = data.pop("allow_internet", None)
        if allow_internet is not None and "network_mode" not in data:
            data["network_mode"] = "public" if allow_internet else "no-network"
        for legacy, current in (("memory", "memory_mb"), ("storage", "storage_mb")):
            value = data.pop(legacy, None)
            if isinstance(value, str):
                data.setdefault(current, _size_to_mb(value))
        return data

    def baseline_policy(self) -> NetworkPolicy:
        """The network every phase has unless it overrides it."""
        return NetworkPolicy(network_mode=self.network_mode, allowed_hosts=self.allowed_hosts or [])


class TaskConfig(_Section):
    """``task.toml``: Harbor's task configuration, as far as Benchwright reads it."""

    schema_version: str = "1.0"
    task: PackageInfo | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    verifier: VerifierConfig = Field(default_factory=VerifierConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)
    solution: SolutionConfig = Field(default_factory=SolutionConfig)
    source: str | None = None
    # Multi-step tasks are Harbor's; kept so that they can be refused by name.
    steps: list[dict[str, Any]] | None = None

    @model_validator(mode="before")
    @classmethod
    def _version_rename(cls, data: Any) -> Any:
        if isinstance(data, dict) and "version" in data:
            data = dict(data)
            data.setdefault("schema_version", str(data.pop("version")))
        return data

    def network_policy(self, phase: Literal["agent", "verifier"]) -> NetworkPolicy:
        """The network the task asks for in one phase: its override, else the baseline."""
        section: PhaseConfig = self.agent if phase == "agent" else self.verifier
        return section.explicit_policy() or self.environment.baseline_policy()


def network_allowed(mode: NetworkMode | str, host_policy_allows: bool) -> bool:
    """Whether the sandbox gets any network at all: the task asks, the account allows.

    ``allowlist`` counts as asking (some hosts); ``host_allowed`` decides each one.
    """
    return NetworkMode(mode) != NetworkMode.NO_NETWORK and host_policy_allows


def host_allowed(policy: NetworkPolicy, host: str, *, host_policy_allows: bool) -> bool:
    """Whether one host may be reached: both the task's policy and the account's allow it.

    Allowlist entries follow Harbor's: a hostname, ``*.suffix`` (subdomains only),
    an IP address or a CIDR range.
    """
    if not host_policy_allows or policy.network_mode == NetworkMode.NO_NETWORK:
        return False
    if policy.network_mode == NetworkMode.PUBLIC:
        return True
    name = host.strip().lower().rstrip(".")
    return any(_matches(entry.strip().lower().rstrip("."), name) for entry in policy.allowed_hosts)


def _matches(entry: str, host: str) -> bool:
    if entry.startswith("*."):
        return host.endswith(entry[1:]) and host != entry[2:]
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return entry == host
    try:
        return address in ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False
