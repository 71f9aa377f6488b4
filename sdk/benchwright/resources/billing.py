"""``bw.billing``: balance, controls, top-ups, transactions, alerts, usage trend, export.

Money the account holds is in cents (``{"amount_cents": ..., "currency": "USD"}``);
a run's debit is its platform spend (sandboxes and the Driver) with the deployment's
markup. The model's own spend is on your provider key and shows on the run.
"""

from __future__ import annotations

from typing import Any

from .._async_http import AsyncHTTP
from .._http import SyncHTTP
from .._models import AttrDict
from ._common import parse_dict, path_id

__all__ = ["AsyncBilling", "Billing"]


def _key_header(idempotency_key: str | None) -> dict[str, str] | None:
    return {"Idempotency-Key": idempotency_key} if idempotency_key else None


def _bytes(data: Any) -> bytes:
    return data if isinstance(data, bytes) else str(data or "").encode()


class _Balance:
    """``billing.balance``: what the account holds."""

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http

    def get(self) -> AttrDict:
        """The balance, this month's spend, the monthly cap and the controls."""
        return parse_dict(self._http.request("GET", "/v1/billing/balance"))


class _Controls:
    """``billing.controls``: the monthly cap, auto-refill and alerts."""

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http

    def update(self, *, idempotency_key: str | None = None, **fields: Any) -> AttrDict:
        """Set ``monthly_cap_cents``, ``auto_refill_*`` or ``alert_*``; the rest stay."""
        return parse_dict(
            self._http.request(
                "PATCH",
                "/v1/billing/controls",
                json=fields,
                headers=_key_header(idempotency_key),
                retry_safe=True,  # setting the same fields twice is the same change
            )
        )


class _Topups:
    """``billing.topups``: money added to the balance."""

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http

    def create(
        self, amount_cents: int, flow: str = "hosted", *, idempotency_key: str | None = None
    ) -> AttrDict:
        """Add ``amount_cents`` to the balance. Pass ``idempotency_key`` to retry safely."""
        body = {"amount_cents": amount_cents, "flow": flow}
        return parse_dict(
            self._http.request(
                "POST", "/v1/billing/topups", json=body, headers=_key_header(idempotency_key)
            )
        )

    def get(self, topup_id: str) -> AttrDict:
        """One top-up: amount, status, when."""
        return parse_dict(self._http.request("GET", f"/v1/billing/topups/{path_id(topup_id)}"))


class _Transactions:
    """``billing.transactions``: top-ups, auto-refills and run debits."""

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http

    def list(
        self,
        filters: dict[str, str] | None = None,
        limit: int = 100,
        page_token: str | None = None,
    ) -> AttrDict:
        """Top-ups and run debits, newest first; ``filters={"kind": "trace_debit"}``.

        The answer's ``next_page_token`` fetches the next page (None on the last).
        """
        params = {"kind": (filters or {}).get("kind"), "limit": limit, "page_token": page_token}
        return parse_dict(self._http.request("GET", "/v1/billing/transactions", params=params))


class _Alerts:
    """``billing.alerts``: what the account was told about its money."""

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http

    def list(self, limit: int = 100) -> AttrDict:
        """Alerts, newest first: ``cap_threshold`` (this month's spend reached
        ``alert_at_cap_pct`` or all of the monthly cap) and ``refill_declined``."""
        return parse_dict(self._http.request("GET", "/v1/billing/alerts", params={"limit": limit}))


class Billing:
    """Reach it as ``Benchwright().billing``."""

    def __init__(self, http: SyncHTTP) -> None:
        self._http = http
        self.balance = _Balance(http)
        self.controls = _Controls(http)
        self.topups = _Topups(http)
        self.transactions = _Transactions(http)
        self.alerts = _Alerts(http)

    def usage_trend(self, days: int = 30) -> list[AttrDict]:
        """Spend per day (UTC) for the last ``days`` days."""
        found = self._http.request("GET", "/v1/billing/usage_trend", params={"days": days})
        return [parse_dict(d) for d in found["data"]]

    def export(self, type: str = "transactions") -> bytes:
        """``transactions`` or ``runs`` as CSV bytes, ready to write to a file."""
        found = self._http.request("GET", "/v1/billing/export", params={"type": type}, raw=True)
        return _bytes(found)


class _AsyncBalance:
    """``billing.balance``: what the account holds."""

    def __init__(self, http: AsyncHTTP) -> None:
        self._http = http

    async def get(self) -> AttrDict:
        """The balance, this month's spend, the monthly cap and the controls."""
        return parse_dict(await self._http.request("GET", "/v1/billing/balance"))


class _AsyncControls:
    """``billing.controls``: the monthly cap, auto-refill and alerts."""

    def __init__(self, http: AsyncHTTP) -> None:
        self._http = http

    async def update(self, *, idempotency_key: str | None = None, **fields: Any) -> AttrDict:
        """Set ``monthly_cap_cents``, ``auto_refill_*`` or ``alert_*``; the rest stay."""
        return parse_dict(
            await self._http.request(
                "PATCH",
                "/v1/billing/controls",
                json=fields,
                headers=_key_header(idempotency_key),
                retry_safe=True,
            )
        )


class _AsyncTopups:
    """``billing.topups``: money added to the balance."""

    def __init__(self, http: AsyncHTTP) -> None:
        self._http = http

    async def create(
        self, amount_cents: int, flow: str = "hosted", *, idempotency_key: str | None = None
    ) -> AttrDict:
        """Add ``amount_cents`` to the balance. Pass ``idempotency_key`` to retry safely."""
        body = {"amount_cents": amount_cents, "flow": flow}
        return parse_dict(
            await self._http.request(
                "POST", "/v1/billing/topups", json=body, headers=_key_header(idempotency_key)
            )
        )

    async def get(self, topup_id: str) -> AttrDict:
        """One top-up: amount, status, when."""
        path = f"/v1/billing/topups/{path_id(topup_id)}"
        return parse_dict(await self._http.request("GET", path))


class _AsyncTransactions:
    """``billing.transactions``: top-ups, auto-refills and run debits."""

    def __init__(self, http: AsyncHTTP) -> None:
        self._http = http

    async def list(
        self,
        filters: dict[str, str] | None = None,
        limit: int = 100,
        page_token: str | None = None,
    ) -> AttrDict:
        """Top-ups and run debits, newest first; ``filters={"kind": "trace_debit"}``."""
        params = {"kind": (filters or {}).get("kind"), "limit": limit, "page_token": page_token}
        return parse_dict(
            await self._http.request("GET", "/v1/billing/transactions", params=params)
        )


class _AsyncAlerts:
    """``billing.alerts``: what the account was told about its money."""

    def __init__(self, http: AsyncHTTP) -> None:
        self._http = http

    async def list(self, limit: int = 100) -> AttrDict:
        """Alerts, newest first: ``cap_threshold`` (this month's spend reached
        ``alert_at_cap_pct`` or all of the monthly cap) and ``refill_declined``."""
        return parse_dict(
            await self._http.request("GET", "/v1/billing/alerts", params={"limit": limit})
        )


class AsyncBilling:
    """Reach it as ``AsyncBenchwright().billing``."""

    def __init__(self, http: AsyncHTTP) -> None:
        self._http = http
        self.balance = _AsyncBalance(http)
        self.controls = _AsyncControls(http)
        self.topups = _AsyncTopups(http)
        self.transactions = _AsyncTransactions(http)
        self.alerts = _AsyncAlerts(http)

    async def usage_trend(self, days: int = 30) -> list[AttrDict]:
        """Spend per day (UTC) for the last ``days`` days."""
        found = await self._http.request("GET", "/v1/billing/usage_trend", params={"days": days})
        return [parse_dict(d) for d in found["data"]]

    async def export(self, type: str = "transactions") -> bytes:
        """``transactions`` or ``runs`` as CSV bytes."""
        found = await self._http.request(
            "GET", "/v1/billing/export", params={"type": type}, raw=True
        )
        return _bytes(found)
