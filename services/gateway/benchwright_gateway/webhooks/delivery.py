"""Delivering webhooks: from the run log to signed POSTs, durably, with retries.

1. A durable JetStream consumer of the run log (``bw.run.v1.*``) notes every
   ``PipelineFinished`` in the outbox (``run.finished`` / ``run.failed`` /
   ``run.halted``) and acks: nothing else happens on the consumer. Another
   notes billing's alerts (``bw.evt.billing.alert_raised.v1``) as
   ``billing.alert``, with the alert as the payload.
2. The deliverer waits until the gateway's runs view shows the run settled (it
   may lag the log), renders the run exactly as ``GET /v1/runs/{id}`` would,
   and records one delivery per endpoint that wants the event, in one save. An
   account event needs no view: its payload came with it.
3. Due deliveries are claimed (one worker at a time, across processes), POSTed
   with an HMAC signature, and every attempt is recorded with its status code,
   duration and error; a failure is tried again later with exponential backoff,
   up to a ceiling.

The outbox lives in the store, so a restarted gateway picks up what was left.
"""

import asyncio
import contextlib
import json
import logging
import os
import random
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
from faststream import AckPolicy
from faststream.nats import JStream, NatsRouter, PullSub
from nats.js.api import ConsumerConfig, DeliverPolicy
from pydantic import BaseModel, ConfigDict, Field

from benchwright_gateway.context import GatewayContext
from benchwright_gateway.render import render_run
from benchwright_gateway.webhooks.application import (
    AccountEvent,
    Job,
    Outcome,
    WebhooksApplication,
)
from benchwright_gateway.webhooks.crypto import WebhooksSealer
from benchwright_gateway.webhooks.domain import (
    BILLING_ALERT,
    DELIVERY_HEADER,
    EVENT_HEADER,
    EVENT_ID_HEADER,
    PING,
    SIGNATURE_HEADER,
    event_type_for,
    is_public_address,
    signature_header,
    url_problem,
)
from benchwright_gateway.webhooks.settings import WebhookSettings
from benchwright_shared import subjects
from benchwright_shared.contracts.billing import BillingAlert, BillingAlertRaised
from benchwright_shared.contracts.run_events import PipelineFinished
from benchwright_shared.projection import ViewCursor
from benchwright_shared.run_log import run_event_type
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore, eventsourcing_env

log = logging.getLogger(__name__)

USER_AGENT = "Benchwright-Webhooks/1"
CONSUMER = "gateway-webhooks-v1"
ALERTS_CONSUMER = "gateway-webhooks-billing-alerts-v1"
TERMINAL_EVENT = run_event_type(PipelineFinished)


class _Finished(BaseModel):
    """The parts of a ``PipelineFinished`` log entry a webhook needs."""

    model_config = ConfigDict(extra="ignore")

    run_id: str
    seq: int
    type: str
    ts: datetime
    data: dict[str, Any] = Field(default_factory=dict)


def outcome_of(message: dict[str, Any]) -> Outcome | None:
    """The webhook outcome a run-log entry announces, if any."""
    if message.get("type") != TERMINAL_EVENT:
        return None
    entry = _Finished.model_validate(message)
    return Outcome(
        run_id=entry.run_id,
        event_type=event_type_for(str(entry.data.get("status")), entry.data.get("error_type")),
        seq=entry.seq,
        occurred_at=entry.ts.timestamp(),
    )


def alert_data(alert: BillingAlert) -> dict[str, Any]:
    """What a ``billing.alert`` delivery carries: the alert as ``GET /v1/billing/alerts``
    lists it."""
    return {"object": "billing_alert", **alert.model_dump(mode="json")}


def account_event_of(message: dict[str, Any]) -> AccountEvent:
    """The webhook event a ``BillingAlertRaised`` announces."""
    alert = BillingAlertRaised.model_validate(message).alert
    return AccountEvent(
        source_id=alert.id,
        account=alert.account,
        event_type=BILLING_ALERT,
        data=alert_data(alert),
        occurred_at=alert.created_at.timestamp(),
    )


def encode_event(
    event_id: str, event_type: str, created: float, data: dict[str, Any], *, test: bool
) -> str:
    """The body a delivery sends, byte for byte (it is signed as sent)."""
    document = {
        "id": event_id,
        "object": "event",
        "type": event_type,
        "created": datetime.fromtimestamp(created, UTC).isoformat(),
        "test": test,
        "data": data,
    }
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


def sample_data(event_type: str, endpoint_id: str, base_url: str, now: float) -> dict[str, Any]:
    """What a test delivery carries: a ping, or a made-up run shaped like a real one."""
    if event_type == PING:
        return {"object": "ping", "webhook_id": endpoint_id, "message": "pong"}
    if event_type == BILLING_ALERT:
        sample = BillingAlert.model_validate(
            {
                "id": "alrt_000000000000000000000000",
                "kind": "cap_threshold",
                "account": "acct_example",
                "period": datetime.fromtimestamp(now, UTC).strftime("%Y-%m"),
                "threshold_pct": 80,
                "month_spent": {"amount_cents": 8_000},
                "monthly_cap": {"amount_cents": 10_000},
                "balance": {"amount_cents": 2_500},
                "detail": "a test event: this month's spend reached 80% of the monthly cap",
                "created_at": datetime.fromtimestamp(now, UTC),
            }
        )
        return alert_data(sample)
    status = "ok" if event_type == "run.finished" else "error"
    halted = event_type == "run.halted"
    at = datetime.fromtimestamp(now, UTC).isoformat()
    row: dict[str, Any] = {
        "run_id": "00000000-0000-4000-8000-000000000000",
        "status": status,
        "halted": halted,
        "halt_reason": "operator_kill: test" if halted else None,
        "benchmark_id": "bm_example",
        "benchmark_name": "Example",
        "subset_id": "sub_example",
        "subset_slug": "test",
        "model": json.dumps({"model": "example-model", "provider": "openai_compatible"}),
        "metadata": json.dumps({"test": True}),
        "summary": json.dumps({"total": 2, "passed": 1, "failed": 1, "errored": 0}),
        "created_at": at,
        "finished_at": at,
        "error_type": None if status == "ok" else ("halted" if halted else "example_error"),
        "detail": None if status == "ok" else "a test event, not a real run",
    }
    return render_run(row, None, base_url)


def _run_row(cur: ViewCursor, run_id: str) -> dict[str, Any] | None:
    # Deleted runs too: a deleted run's outcome is dropped, not waited for.
    cur.execute(f"SELECT * FROM {cur.table('runs')} WHERE run_id = ?", [run_id])
    return cur.fetchone()


class Webhooks:
    """The webhooks context of one gateway process: store, consumer and deliverer."""

    def __init__(
        self,
        settings: Settings,
        router: NatsRouter,
        ctx: GatewayContext,
        show_run: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
        webhook_settings: WebhookSettings | None = None,
    ) -> None:
        self.settings = webhook_settings or WebhookSettings()
        self.ctx = ctx
        # A run's row as the API shows it (cost included): what a run event carries.
        self.show_run = show_run
        self.blocking = BlockingStore("gateway-webhooks")
        self.app = WebhooksApplication(
            eventsourcing_env(settings, "gateway", part="webhooks"),
            sealer=WebhooksSealer.from_config(self.settings.key, settings.service_dir("gateway")),
            settings=self.settings,
        )
        # Who holds a claim: this process, and no earlier life of it.
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._wake = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self._tasks: dict[str, asyncio.Task[bool]] = {}
        self._slots = asyncio.Semaphore(self.settings.concurrency)
        self._client: httpx.AsyncClient | None = None
        self._register_consumer(router, settings.max_deliver)

    async def call[T](self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run an application call on the store's worker thread."""
        return await self.blocking.run(lambda: fn(*args, **kwargs))

    def wake(self) -> None:
        """Something is due now: look at the outbox without waiting for the poll."""
        self._wake.set()

    # -- the run log -------------------------------------------------------------------
    def _register_consumer(self, router: NatsRouter, max_deliver: int) -> None:
        @router.subscriber(
            subjects.RUN_LOG_ALL,
            stream=JStream(subjects.RUNS_STREAM, declare=False),
            durable=CONSUMER,
            pull_sub=PullSub(batch_size=256, timeout=0.2, batch=True),
            ack_policy=AckPolicy.NACK_ON_ERROR,
            config=ConsumerConfig(
                durable_name=CONSUMER,
                max_deliver=max_deliver,
                ack_wait=10,
                deliver_policy=DeliverPolicy.ALL,
            ),
        )
        async def note_outcomes(bodies: list[dict[str, Any]]) -> None:
            outcomes = [o for o in (outcome_of(b) for b in bodies) if o is not None]
            if outcomes:
                await self.call(self.app.notice_outcomes, outcomes, now=time.time())
                self.wake()

        @router.subscriber(
            subjects.BILLING_ALERT_RAISED,
            stream=JStream(subjects.EVENTS_STREAM, declare=False),
            durable=ALERTS_CONSUMER,
            pull_sub=PullSub(batch_size=64, timeout=0.2, batch=True),
            ack_policy=AckPolicy.NACK_ON_ERROR,
            config=ConsumerConfig(
                durable_name=ALERTS_CONSUMER,
                max_deliver=max_deliver,
                ack_wait=10,
                deliver_policy=DeliverPolicy.ALL,
            ),
        )
        async def note_alerts(bodies: list[dict[str, Any]]) -> None:
            events = [account_event_of(b) for b in bodies]
            if events:
                await self.call(self.app.notice_account_events, events, now=time.time())
                self.wake()

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> None:
        # Direct connections only: the address check below must judge where the
        # request really goes, which an environment proxy would hide.
        self._client = httpx.AsyncClient(
            timeout=self.settings.timeout_s, follow_redirects=False, trust_env=False
        )
        self._loop = asyncio.create_task(self._run(), name="webhook-deliverer")

    async def stop(self) -> None:
        tasks: list[asyncio.Task[Any]] = [*self._tasks.values()]
        if self._loop is not None:
            tasks.append(self._loop)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._client is not None:
            await self._client.aclose()
        self.close()

    def close(self) -> None:
        self.app.close()
        self.blocking.close()

    # -- the deliverer -----------------------------------------------------------------
    async def _run(self) -> None:
        while True:
            self._wake.clear()
            try:
                delay = await self._tick()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("webhook deliverer: looking at the outbox failed; retrying")
                delay = self.settings.poll_interval_s
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    async def _tick(self) -> float:
        """Start what is due; how long until something else will be."""
        state: tuple[dict[str, dict[str, Any]], dict[str, float]]
        state = await self.call(self.app.outbox_state)
        triggers, pending = state
        now = time.time()
        delay = self.settings.poll_interval_s
        for event_id, trigger in triggers.items():
            self._spawn(event_id, self._fan_out(event_id, trigger))
            # The run's view may not show it settled yet: look again soon.
            delay = min(delay, 0.2)
        for delivery_id, due in pending.items():
            if due <= now:
                self._spawn(delivery_id, self._attempt(delivery_id))
            else:
                delay = min(delay, due - now)
        return max(delay, 0.01)

    def _spawn(self, key: str, work: Coroutine[Any, Any, bool]) -> None:
        """Run ``work`` unless it already runs; when it changed the outbox, look again."""
        if key in self._tasks:
            work.close()
            return
        task = asyncio.create_task(work, name=f"webhook-{key}")
        self._tasks[key] = task

        def done(t: asyncio.Task[bool]) -> None:
            self._tasks.pop(key, None)
            if t.cancelled():
                return
            if t.exception() is not None:
                log.error("webhook work %s failed", key, exc_info=t.exception())
            elif t.result():
                self.wake()

        task.add_done_callback(done)

    async def _fan_out(self, event_id: str, trigger: dict[str, Any]) -> bool:
        """Once the run's view shows it settled: render it and record the deliveries.

        False while the view has not caught up (the outbox is unchanged)."""
        if trigger.get("data") is not None:
            return await self._fan_out_account_event(event_id, trigger)
        row: dict[str, Any] | None = await self.ctx.read(_run_row, trigger["run_id"])
        waited = time.time() - float(trigger["noticed_at"])
        overdue = waited > self.settings.payload_wait_s
        if row is None or row.get("deleted"):
            if row is not None or overdue:
                if row is None:
                    log.warning("webhook %s: run %s never showed up", event_id, trigger["run_id"])
                await self.call(self.app.drop_outcome, event_id)
                return True
            return False
        settled = row["status"] != "running" and int(row.get("last_seq") or 0) >= trigger["seq"]
        if not settled:
            if not (overdue and row.get("final_status")):
                return False
            # The view never caught up (a task row missing): send what it has, settled.
            row = {**row, "status": row["final_status"], "phase": None}
        account = str(row["account"])
        wanted: list[Any] = await self.call(
            self.app.matching, account, trigger["event_type"], float(trigger["occurred_at"])
        )
        if not wanted:
            await self.call(self.app.drop_outcome, event_id)
            return True
        run = await self.show_run(row)
        body = encode_event(
            event_id, trigger["event_type"], float(trigger["occurred_at"]), run, test=False
        )
        await self.call(self.app.fan_out, event_id, account=account, body=body, now=time.time())
        return True

    async def _fan_out_account_event(self, event_id: str, trigger: dict[str, Any]) -> bool:
        """An account event (a billing alert) to every endpoint of the account that wants it."""
        account = str(trigger["account"])
        occurred_at = float(trigger["occurred_at"])
        wanted: list[Any] = await self.call(
            self.app.matching, account, trigger["event_type"], occurred_at
        )
        if not wanted:
            await self.call(self.app.drop_outcome, event_id)
            return True
        body = encode_event(
            event_id, trigger["event_type"], occurred_at, trigger["data"], test=False
        )
        await self.call(self.app.fan_out, event_id, account=account, body=body, now=time.time())
        return True

    async def _attempt(self, delivery_id: str) -> bool:
        """One attempt, if this worker can claim it; False when it could not."""
        async with self._slots:
            job: Job | None = await self.call(self.app.claim, delivery_id, self.worker, time.time())
            if job is None:
                return False
            status_code, error, duration_ms = await self._send(job)
            await self.call(
                self.app.record_attempt,
                delivery_id,
                self.worker,
                at=time.time(),
                status_code=status_code,
                duration_ms=duration_ms,
                error=error,
                jitter=random.uniform(0.8, 1.2),
            )
            if error:
                log.info("webhook %s attempt %d: %s", delivery_id, job.attempt, error)
            return True

    async def _send(self, job: Job) -> tuple[int | None, str | None, int]:
        """POST the job's body, signed now: (status code, error, duration in ms)."""
        assert self._client is not None
        body = job.body.encode()
        timestamp = int(time.time())
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            SIGNATURE_HEADER: signature_header(job.secrets, timestamp, body),
            DELIVERY_HEADER: job.delivery_id,
            EVENT_HEADER: job.event_type,
            EVENT_ID_HEADER: job.event_id,
        }
        started = time.monotonic()
        refused = await self._refusal(job.url)
        if refused:
            return None, refused, 0
        status_code: int | None = None
        error: str | None = None
        try:
            async with self._client.stream("POST", job.url, content=body, headers=headers) as r:
                status_code = r.status_code  # the body is never read: only the status counts
        except httpx.TimeoutException:
            error = f"timed out after {self.settings.timeout_s:g}s"
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"[:500]
        duration_ms = int((time.monotonic() - started) * 1000)
        if status_code is not None and not 200 <= status_code < 300:
            error = f"HTTP {status_code}" + (
                " (redirects are not followed)" if 300 <= status_code < 400 else ""
            )
        return status_code, error, duration_ms

    async def _refusal(self, url: str) -> str | None:
        """Why this URL may not be called now (its host resolves to a private address)."""
        allow = self.settings.allow_insecure_urls
        problem = url_problem(url, allow_insecure=allow)
        if problem:
            return f"refused: {problem}"
        if allow:
            return None
        parts = urlsplit(url)
        host = parts.hostname or ""
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, parts.port or 443, type=socket.SOCK_STREAM
            )
        except OSError as exc:
            return f"could not resolve {host}: {exc}"
        if any(not is_public_address(str(info[4][0])) for info in infos):
            return f"refused: {host} resolves to a non-public address"
        return None

    # -- what the API asks of it ---------------------------------------------------------
    def sample(self, event_type: str, endpoint_id: str, now: float) -> dict[str, Any]:
        return sample_data(event_type, endpoint_id, self.ctx.settings.gateway_url, now)
