"""``benchwright hooks``: webhooks that tell your CI when a run settles.

``hooks_app`` is the typer group; ``register(app)`` mounts it as ``hooks``.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ...resources.webhooks import EVENT_TYPES, RUN_EVENT_TYPES, Webhook, WebhookDelivery
from .._common import (
    EXIT_USAGE,
    OutputOption,
    dump,
    emit,
    fail,
    get_client,
    handle_errors,
    output_format,
)
from . import ACCOUNT, MARKUP, examples

__all__ = ["hooks_app", "register"]

ORDER = 35

hooks_app = typer.Typer(
    rich_markup_mode=MARKUP,
    no_args_is_help=True,
    help=(
        "Webhooks: a signed POST to your endpoint when a run of yours finishes, fails "
        "or is halted. Deliveries are retried with backoff and recorded, attempt by "
        "attempt; dedupe on `X-Benchwright-Delivery-Id`."
    ),
    epilog=examples(
        "benchwright hooks create https://ci.example.com/hooks/bw --events run.finished,run.failed",
        "benchwright hooks test whk_0123456789abcdef01234567 --event run.finished",
        "benchwright hooks deliveries whk_0123456789abcdef01234567 --status failed",
    ),
)

WebhookId = Annotated[str, typer.Argument(help="The webhook's id, whk_….")]


def _events(value: str) -> list[str]:
    events = [e.strip() for e in value.split(",") if e.strip()]
    unknown = sorted(set(events) - set(EVENT_TYPES))
    if unknown or not events:
        fail(f"--events takes some of {', '.join(EVENT_TYPES)} (got {value!r})", code=EXIT_USAGE)
    return events


def _text(value: Any) -> Text:
    # Text, not str: server-provided strings must never be parsed as rich markup.
    return Text("" if value is None else str(value))


def _hooks_table(hooks: list[Webhook]) -> Table:
    table = Table(box=None, pad_edge=False)
    for column in ("ID", "URL", "EVENTS", "ENABLED", "DESCRIPTION"):
        table.add_column(column, overflow="fold")
    for h in hooks:
        table.add_row(
            _text(h.id),
            _text(h.url),
            _text(",".join(h.events)),
            _text("yes" if h.enabled else "no"),
            _text(h.description),
        )
    return table


def _deliveries_table(deliveries: list[WebhookDelivery]) -> Table:
    table = Table(box=None, pad_edge=False)
    for column in ("ID", "EVENT", "RUN", "STATUS", "ATTEMPTS", "LAST", "NEXT"):
        table.add_column(column, overflow="fold")
    for d in deliveries:
        last = d.attempts[-1] if d.attempts else None
        outcome = None
        if last is not None:
            outcome = last.error or f"HTTP {last.status_code}"
        table.add_row(
            _text(d.id),
            _text(d.event + (" (test)" if d.test else "")),
            _text(d.run_id or "-"),
            _text(d.status),
            _text(d.attempt_count),
            _text(outcome or "-"),
            _text(d.next_attempt_at.isoformat() if d.next_attempt_at else "-"),
        )
    return table


def _print(table: Table) -> None:
    Console(highlight=False).print(table)


@hooks_app.command("list")
@handle_errors
def list_hooks(output: OutputOption = None) -> None:
    """List your webhooks (never their secrets)."""
    fmt = output_format(output)
    with get_client() as bw:
        hooks = bw.webhooks.list()
    data = [dump(h) for h in hooks]
    emit(
        {"object": "list", "data": data}, fmt, table=lambda: _print(_hooks_table(hooks)), items=data
    )


@hooks_app.command("create")
@handle_errors
def create(
    url: Annotated[str, typer.Argument(help="Where to POST: https://….")],
    events: Annotated[
        str,
        typer.Option(help="Comma-separated: run.finished, run.failed, run.halted, billing.alert."),
    ] = ",".join(RUN_EVENT_TYPES),
    description: Annotated[str, typer.Option(help="A note for you.")] = "",
    idempotency_key: Annotated[
        str | None, typer.Option(help="Makes a retried create return the same webhook.")
    ] = None,
    output: OutputOption = None,
) -> None:
    """Register an endpoint. Its signing secret is printed this once: store it."""
    fmt = output_format(output)
    with get_client() as bw:
        hook = bw.webhooks.create(
            url, _events(events), description=description, idempotency_key=idempotency_key
        )

    def table() -> None:
        typer.echo(f"created {hook.id} for {', '.join(hook.events)} -> {hook.url}")
        if hook.signing_secret:
            typer.echo(f"signing secret (shown once): {hook.signing_secret}")

    emit(dump(hook), fmt, table=table)


# The developer guide spells it `hooks add`.
hooks_app.command("add", hidden=True)(create)


@hooks_app.command("delete")
@handle_errors
def delete(webhook_id: WebhookId, output: OutputOption = None) -> None:
    """Delete a webhook; deliveries still pending are given up."""
    fmt = output_format(output)
    with get_client() as bw:
        gone = bw.webhooks.delete(webhook_id)
    emit(dump(gone), fmt, table=lambda: typer.echo(f"deleted {gone.id}"))


@hooks_app.command("test")
@handle_errors
def test(
    webhook_id: WebhookId,
    event: Annotated[
        str,
        typer.Option(
            help="ping, or a made-up run.finished / run.failed / run.halted / billing.alert."
        ),
    ] = "ping",
    output: OutputOption = None,
) -> None:
    """Send a test delivery now; `deliveries` shows how it went."""
    fmt = output_format(output)
    with get_client() as bw:
        sent = bw.webhooks.test_delivery(webhook_id, event=event)
    emit(dump(sent), fmt, table=lambda: typer.echo(f"queued {sent.id} ({sent.event})"))


@hooks_app.command("deliveries")
@handle_errors
def deliveries(
    webhook_id: WebhookId,
    status: Annotated[
        str | None, typer.Option(help="Only pending, succeeded or failed ones.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=200)] = 50,
    output: OutputOption = None,
) -> None:
    """What was sent to a webhook, newest first, with its attempts."""
    fmt = output_format(output)
    with get_client() as bw:
        page = bw.webhooks.deliveries(webhook_id, status, limit=limit)
    data = [dump(d) for d in page.data]
    emit(
        {"object": "list", "data": data, "next_page_token": page.next_page_token},
        fmt,
        table=lambda: _print(_deliveries_table(page.data)),
        items=data,
    )


@hooks_app.command("retry")
@handle_errors
def retry(
    webhook_id: WebhookId,
    delivery_id: Annotated[str, typer.Argument(help="The delivery's id, whd_….")],
    output: OutputOption = None,
) -> None:
    """Send a succeeded or failed delivery again."""
    fmt = output_format(output)
    with get_client() as bw:
        again = bw.webhooks.retry_delivery(webhook_id, delivery_id)
    emit(dump(again), fmt, table=lambda: typer.echo(f"queued {again.id} again"))


@hooks_app.command("rotate-secret")
@handle_errors
def rotate_secret(
    webhook_id: WebhookId,
    overlap: Annotated[
        int, typer.Option(help="Seconds the old secret keeps signing beside the new one.")
    ] = 0,
    output: OutputOption = None,
) -> None:
    """A new signing secret, printed this once."""
    fmt = output_format(output)
    with get_client() as bw:
        hook = bw.webhooks.rotate_secret(webhook_id, expire_previous_after_s=overlap)
    emit(
        dump(hook),
        fmt,
        table=lambda: typer.echo(f"signing secret (shown once): {hook.signing_secret}"),
    )


def register(app: typer.Typer) -> None:
    """Mount ``benchwright hooks``."""
    app.add_typer(hooks_app, name="hooks", rich_help_panel=ACCOUNT)
