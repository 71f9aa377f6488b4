"""``benchwright billing``: balance, top-ups, alerts and the ledger export."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from .._common import (
    EXIT_USAGE,
    OutputOption,
    emit,
    fail,
    get_client,
    handle_errors,
    output_format,
    requires_endpoint,
)
from .._render import key_value_table, money_text
from . import ACCOUNT, MARKUP, examples

__all__ = ["ORDER", "billing_app", "register"]

ORDER = 40

billing_app = typer.Typer(
    rich_markup_mode=MARKUP,
    no_args_is_help=True,
    help="Your balance, top-ups, alerts and a CSV of the ledger.",
    epilog=examples(
        "benchwright billing balance",
        "benchwright billing topup 50",
        "benchwright billing alerts",
        "benchwright billing export --type transactions > ledger.csv",
    ),
)


class ExportType(StrEnum):
    """What ``billing export`` writes."""

    transactions = "transactions"
    runs = "runs"


@billing_app.command("balance")
@handle_errors
def balance(output: OutputOption = None) -> None:
    """Show the balance, this month's spend and the monthly cap."""
    fmt = output_format(output)
    with get_client() as bw, requires_endpoint("billing (GET /v1/billing/balance)"):
        found = dict(bw.billing.balance.get())

    def table() -> None:
        rows: list[tuple[str, Any]] = [
            ("balance", money_text(found.get("balance"))),
            ("spent this month", money_text(found.get("month_spent"))),
            ("monthly cap", money_text(found.get("monthly_cap"))),
        ]
        if found.get("stop_reason"):
            rows.append(("runs stopped", found["stop_reason"]))
        Console(highlight=False).print(key_value_table(rows))

    emit(found, fmt, table=table)


@billing_app.command("topup")
@handle_errors
def topup(
    amount: Annotated[float, typer.Argument(help="Dollars to add, e.g. 50.")],
    idempotency_key: Annotated[
        str | None,
        typer.Option(help="Re-running with the same key never charges twice.", show_default=False),
    ] = None,
    output: OutputOption = None,
) -> None:
    """Add money to the balance; prints where to pay when the server asks for it."""
    cents = round(amount * 100)
    if cents <= 0:
        fail("the amount must be positive, in dollars (e.g. 50)", code=EXIT_USAGE)
    fmt = output_format(output)
    with get_client() as bw, requires_endpoint("top-ups (POST /v1/billing/topups)"):
        created = dict(bw.billing.topups.create(cents, idempotency_key=idempotency_key))

    def table() -> None:
        typer.echo(
            f"top-up {created.get('id')}: {money_text(created.get('amount'))}, "
            f"{created.get('status')}"
        )
        if created.get("checkout_url"):
            typer.echo(f"pay here: {created['checkout_url']}")

    emit(created, fmt, table=table)


@billing_app.command("alerts")
@handle_errors
def alerts(
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 20,
    output: OutputOption = None,
) -> None:
    """Alerts about your money: a threshold of the monthly cap reached, a refill declined."""
    fmt = output_format(output)
    with get_client() as bw, requires_endpoint("alerts (GET /v1/billing/alerts)"):
        found = dict(bw.billing.alerts.list(limit=limit))
    data = [dict(a) for a in found.get("data") or []]

    def table() -> None:
        if not data:
            typer.echo("no alerts")
        for a in data:
            typer.echo(f"{a.get('created_at')}  {a.get('kind')}  {a.get('detail')}")

    emit(found, fmt, table=table, items=data)


@billing_app.command("export")
@handle_errors
def export(
    type: Annotated[ExportType, typer.Option("--type", help="What to export.")] = (
        ExportType.transactions
    ),
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write to this file instead of stdout.", show_default=False),
    ] = None,
) -> None:
    """Write the ledger (transactions) or per-run spend (runs) as CSV."""
    with get_client() as bw, requires_endpoint("exports (GET /v1/billing/export)"):
        data = bw.billing.export(type=type.value)
    if out is not None:
        out.write_bytes(data)
        typer.echo(f"wrote {len(data)} bytes to {out}", err=True)
    else:
        stdout = typer.get_binary_stream("stdout")
        stdout.write(data)
        stdout.flush()


def register(app: typer.Typer) -> None:
    """Mount ``benchwright billing``."""
    app.add_typer(billing_app, name="billing", rich_help_panel=ACCOUNT)
