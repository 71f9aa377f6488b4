"""``/v1/settings``: an account's defaults, from a fixed allowlist (``/v1/settings/schema``).

Each key is checked by the same rules a launch applies to the field it stands in
for, so a stored default is always one a launch would accept. Launches read them
only for the fields their body leaves out (``launch.py``).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict

from benchwright_gateway.api.deps import Caller, Ctx
from benchwright_gateway.context import GatewayContext
from benchwright_gateway.requests import check_driver, check_limits
from benchwright_shared.api.account import (
    DeletedSetting,
    Setting,
    SettingKey,
    SettingList,
    SettingsSchema,
)
from benchwright_shared.contracts import COMPUTE_CHOICES
from benchwright_shared.refusal import Refused


@dataclass(frozen=True)
class SettingSpec:
    type: str
    description: str
    check: Callable[[Any], Any]


def _driver(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError("a driver is a string")
    return check_driver(value)


def _compute(value: Any) -> Any:
    if value not in COMPUTE_CHOICES:
        raise ValueError(f"one of {', '.join(COMPUTE_CHOICES)}")
    return value


def _limits(value: Any) -> Any:
    if not isinstance(value, dict):
        raise ValueError("limits are an object: {level: {quantity: number}}")
    return check_limits(value)


SCHEMA: dict[str, SettingSpec] = {
    "default_driver": SettingSpec(
        "string",
        "The Driver for launches that name none: builtin, litellm or <provider>://<model>.",
        _driver,
    ),
    "default_compute": SettingSpec(
        "string",
        f"Where sandboxes live when a launch names no compute: {', '.join(COMPUTE_CHOICES)}.",
        _compute,
    ),
    "default_limits": SettingSpec(
        "object",
        "Ceilings (dollars and seconds) for launches that send no limits.",
        _limits,
    ),
}


class SettingIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    value: Any


def _unknown(key: str) -> Refused:
    return Refused(
        404,
        "unknown setting",
        f"no setting {key!r}; GET /v1/settings/schema lists them",
        field="key",
    )


def _show(key: str, value: Any, updated_at: str | None) -> Setting:
    return Setting(key=key, value=value, updated_at=updated_at)


async def account_defaults(ctx: GatewayContext, account: str) -> dict[str, Any]:
    """The account's stored defaults, for a launch to fill what its body leaves out."""
    held = await ctx.call(ctx.app.account_settings, account)
    return dict(held.values)


router = APIRouter(prefix="/v1/settings", tags=["settings"])


@router.get("")
async def list_settings(ctx: Ctx, caller: Caller) -> SettingList:
    """Every setting the account has set."""
    caller.require("settings:read")
    held = await ctx.call(ctx.app.account_settings, caller.account)
    data = [_show(k, v, held.updated.get(k)) for k, v in sorted(held.values.items())]
    return SettingList(data=data)


@router.get("/schema")
async def schema(caller: Caller) -> SettingsSchema:
    """The keys a setting may have, their types and what each does."""
    caller.require("settings:read")
    keys = {k: SettingKey(type=s.type, description=s.description) for k, s in SCHEMA.items()}
    return SettingsSchema(keys=keys)


@router.get("/{key}")
async def get_setting(key: str, ctx: Ctx, caller: Caller) -> Setting:
    """One setting the account has set."""
    caller.require("settings:read")
    if key not in SCHEMA:
        raise _unknown(key)
    held = await ctx.call(ctx.app.account_settings, caller.account)
    if key not in held.values:
        raise Refused(404, "setting not set", f"{key!r} is not set", field="key")
    return _show(key, held.values[key], held.updated.get(key))


@router.put("/{key}")
async def set_setting(key: str, body: SettingIn, ctx: Ctx, caller: Caller) -> Setting:
    """Set ``key`` to ``value``, checked as a launch would check it."""
    caller.require("settings:write")
    spec = SCHEMA.get(key)
    if spec is None:
        raise _unknown(key)
    try:
        value = spec.check(body.value)
    except ValueError as exc:
        raise Refused(400, "invalid setting", f"{key}: {exc}", field="value") from None
    held = await ctx.call(ctx.app.put_setting, caller.account, key, value)
    return _show(key, held.values[key], held.updated.get(key))


@router.delete("/{key}")
async def delete_setting(key: str, ctx: Ctx, caller: Caller) -> DeletedSetting:
    """Unset ``key``: launches fall back to the platform's default."""
    caller.require("settings:write")
    if key not in SCHEMA:
        raise _unknown(key)
    await ctx.call(ctx.app.put_setting, caller.account, key, None)
    return DeletedSetting(key=key)
