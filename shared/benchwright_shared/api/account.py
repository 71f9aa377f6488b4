"""Answers about the account itself: sessions and tokens, secrets and the host policy,
billing, and the account's settings.

Where a service's view is the answer, the answer subclasses it and adds the
``object`` the API names it by, so each field is declared once. A view that can
carry a ``problem`` is answered as problem+json when it does; its answer hides the
field (``_NO_PROBLEM``), so the published schema never shows it.
"""

from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from benchwright_shared.api.base import Answer
from benchwright_shared.contracts.billing import (
    BalanceView,
    BillingAlert,
    TopupView,
    Transaction,
    UsageDay,
)
from benchwright_shared.contracts.vault import BlockedHost as BlockedHostView
from benchwright_shared.contracts.vault import HostAction, HostRule, SecretView

__all__ = [
    "AccountCreated",
    "Balance",
    "BillingAlertList",
    "BlockedHost",
    "BlockedHostList",
    "DeletedSecret",
    "DeletedSetting",
    "HostPolicy",
    "HostPolicyRule",
    "Me",
    "RevokedToken",
    "Secret",
    "SecretList",
    "Session",
    "Setting",
    "SettingKey",
    "SettingList",
    "SettingsSchema",
    "Token",
    "TokenCreated",
    "TokenList",
    "Topup",
    "TransactionList",
    "UsageTrendList",
]


def _no_problem() -> Any:
    """A view's ``problem``, overridden: never serialized, never in the schema."""
    return Field(default=None, exclude=True)


# -- access -------------------------------------------------------------------------------
class Session(BaseModel):
    """A login's session: its token mints access tokens (shown once)."""

    object: Literal["session"] = "session"
    token: str
    account: str
    username: str
    # Seconds since the epoch.
    expires_at: float


class TokenCreated(BaseModel):
    """A new personal access token; ``token`` is shown this once."""

    object: Literal["token"] = "token"
    token: str
    label: str = ""
    scopes: list[str]
    account: str


class Token(BaseModel):
    """A personal access token as listed: never the token itself."""

    id: str
    label: str = ""
    scopes: list[str] = Field(default_factory=list)
    created_at: str | None = None
    revoked: bool = False


class TokenList(BaseModel):
    """The account's tokens, revoked ones included."""

    object: Literal["list"] = "list"
    data: list[Token] = Field(default_factory=list)


class RevokedToken(BaseModel):
    """What revoking a token answers."""

    object: Literal["token"] = "token"
    id: str
    revoked: bool = True


class AccountCreated(BaseModel):
    """A new account and its first login."""

    object: Literal["account"] = "account"
    account: str
    username: str


class Me(BaseModel):
    """Who a credential speaks for (``kind``: ``pat`` or ``session``), and what it may do."""

    object: Literal["principal"] = "principal"
    account: str
    kind: str
    scopes: list[str]
    known_scopes: list[str]


# -- secrets and host policy --------------------------------------------------------------
class Secret(SecretView):
    """A secret: its rules and a masked preview, never its value. ``id`` is stable for the
    account and name."""

    object: Literal["secret"] = "secret"
    id: str


class SecretList(BaseModel):
    """The account's secrets."""

    object: Literal["list"] = "list"
    data: list[Secret] = Field(default_factory=list)


class DeletedSecret(BaseModel):
    """What deleting a secret answers."""

    object: Literal["secret"] = "secret"
    name: str
    deleted: bool = True


class HostPolicyRule(HostRule):
    """One rule of the host policy; ``id`` is its pattern's."""

    id: str


class HostPolicy(BaseModel):
    """Which hosts the account's sandboxes may reach: a default and rules by pattern."""

    object: Literal["host_policy"] = "host_policy"
    default_mode: HostAction = "allow"
    rules: list[HostPolicyRule] = Field(default_factory=list)


class BlockedHost(Answer, BlockedHostView):
    """A host the account's sandboxes (``run_id``'s, when set) were refused, how often
    and when first and last."""

    model_config = Answer.model_config  # the view's own ``extra="ignore"`` would win


class BlockedHostList(BaseModel):
    """Hosts the account's sandboxes were refused, with counts."""

    object: Literal["list"] = "list"
    data: list[BlockedHost] = Field(default_factory=list)


# -- billing ------------------------------------------------------------------------------
class Balance(BalanceView):
    """The account's balance, this month's spend, its cap and controls."""

    object: Literal["balance"] = "balance"
    problem: SkipJsonSchema[None] = _no_problem()


class Topup(TopupView):
    """Money added to the balance (``checkout_url`` when a provider takes the payment)."""

    object: Literal["topup"] = "topup"
    problem: SkipJsonSchema[None] = _no_problem()


class TransactionList(BaseModel):
    """A page of transactions, newest first."""

    object: Literal["list"] = "list"
    data: list[Transaction] = Field(default_factory=list)
    next_page_token: str | None = None


class BillingAlertList(BaseModel):
    """Alerts about the account's money, newest first."""

    object: Literal["list"] = "list"
    data: list[BillingAlert] = Field(default_factory=list)


class UsageTrendList(BaseModel):
    """Spend per day (UTC)."""

    object: Literal["list"] = "list"
    data: list[UsageDay] = Field(default_factory=list)


# -- settings -----------------------------------------------------------------------------
class Setting(BaseModel):
    """One of the account's defaults."""

    object: Literal["setting"] = "setting"
    key: str
    value: Any
    # ISO 8601, as stored.
    updated_at: str | None = None


class SettingList(BaseModel):
    """Every setting the account has set."""

    object: Literal["list"] = "list"
    data: list[Setting] = Field(default_factory=list)


class SettingKey(BaseModel):
    """A key a setting may have: its JSON type and what it does."""

    type: str
    description: str


class SettingsSchema(BaseModel):
    """The keys a setting may have."""

    object: Literal["settings_schema"] = "settings_schema"
    keys: dict[str, SettingKey]


class DeletedSetting(BaseModel):
    """What unsetting a key answers."""

    object: Literal["setting"] = "setting"
    key: str
    deleted: bool = True
