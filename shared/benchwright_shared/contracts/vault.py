"""Secrets, host policy and the blocked-host log: questions to the proxy service.

These travel as NATS request/reply, never on a JetStream stream: a secret's
value must not rest anywhere but the vault, encrypted. Answers never carry a
value, only a masked preview.
"""

from datetime import datetime
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from benchwright_shared import subjects
from benchwright_shared.contracts.base import Contract, Problem

InjectKind = Literal["bearer", "header", "basic", "query"]
HostAction = Literal["allow", "block"]


def check_host_pattern(value: str) -> str:
    """``api.example.com`` or ``*.example.com``: lower case, no scheme, port or path."""
    pattern = value.strip().lower()
    bare = pattern.removeprefix("*.")
    if not bare or any(c in bare for c in "/:@ *?") or bare.startswith(".") or ".." in bare:
        raise ValueError(f"not a host pattern: {value!r} (use api.example.com or *.example.com)")
    return pattern


class SecretRule(BaseModel):
    """Where and how a secret is injected into matching outbound requests."""

    model_config = ConfigDict(extra="forbid")

    host_pattern: str = Field(min_length=1, max_length=253)
    inject_kind: InjectKind = "bearer"
    # The header name (header), the query parameter (query), the user name (basic).
    inject_target: str | None = Field(default=None, max_length=200)

    @field_validator("host_pattern")
    @classmethod
    def _host(cls, value: str) -> str:
        return check_host_pattern(value)

    @model_validator(mode="after")
    def _target_where_needed(self) -> "SecretRule":
        if self.inject_kind in ("header", "query") and not self.inject_target:
            what = "the header name" if self.inject_kind == "header" else "the query parameter"
            raise ValueError(f"inject_kind {self.inject_kind!r} needs inject_target ({what})")
        return self


class SecretView(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str
    description: str = ""
    rules: list[SecretRule] = Field(default_factory=list)
    preview: str
    version: int
    created_at: datetime
    updated_at: datetime


class SecretAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    problem: Problem | None = None
    secret: SecretView | None = None
    secrets: list[SecretView] = Field(default_factory=list)


class PutSecret(Contract):
    """Create or rotate a secret (a new version); rules replace the old ones when given."""

    subject: ClassVar[str] = subjects.PUT_SECRET

    account: str
    name: str
    value: str | None = None
    description: str | None = None
    rules: list[SecretRule] | None = None
    create_only: bool = False


class ReadSecrets(Contract):
    """One secret by name, or all of the account's (``name`` None)."""

    subject: ClassVar[str] = subjects.READ_SECRETS

    account: str
    name: str | None = None


class DeleteSecret(Contract):
    subject: ClassVar[str] = subjects.DELETE_SECRET

    account: str
    name: str


class HostRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(min_length=1, max_length=253)
    action: HostAction

    @field_validator("pattern")
    @classmethod
    def _host(cls, value: str) -> str:
        return check_host_pattern(value)


class HostPolicyView(BaseModel):
    model_config = ConfigDict(extra="ignore")

    problem: Problem | None = None
    default_mode: HostAction = "allow"
    rules: list[HostRule] = Field(default_factory=list)


class UpdateHostPolicy(Contract):
    """Change the default mode and add (upsert) or remove rules; ``starter_pack`` adds the
    common hosts (package indexes, model providers) as allow rules."""

    subject: ClassVar[str] = subjects.UPDATE_HOST_POLICY

    account: str
    default_mode: HostAction | None = None
    upsert: list[HostRule] = Field(default_factory=list)
    remove: list[str] = Field(default_factory=list)
    starter_pack: bool = False


class ReadHostPolicy(Contract):
    subject: ClassVar[str] = subjects.READ_HOST_POLICY

    account: str


class BlockedHost(BaseModel):
    model_config = ConfigDict(extra="ignore")

    host: str
    run_id: str | None = None
    seen_count: int
    first_seen: datetime
    last_seen: datetime


class ReadBlockedHosts(Contract):
    subject: ClassVar[str] = subjects.READ_BLOCKED_HOSTS

    account: str
    run_id: str | None = None


class BlockedHostsView(BaseModel):
    model_config = ConfigDict(extra="ignore")

    problem: Problem | None = None
    data: list[BlockedHost] = Field(default_factory=list)
