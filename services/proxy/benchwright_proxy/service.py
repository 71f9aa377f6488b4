"""The proxy's moving parts: bindings, the HTTP endpoint, usage reporting."""

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit

import uvicorn
from faststream.nats import NatsBroker

from benchwright_proxy.application import ProxyApplication, litellm_config_yaml, model_id_for
from benchwright_proxy.ceilings import TaskSpend
from benchwright_proxy.credentials import RunCredentials
from benchwright_proxy.domain import (
    EGRESS_PREFIX,
    JUDGE_PREFIX,
    Caller,
    ModelBinding,
    hash_secret,
    parse_key,
)
from benchwright_proxy.http import ProviderPool, build_http_app
from benchwright_proxy.injector import EgressInjector
from benchwright_proxy.pricing import call_cost_micros
from benchwright_proxy.providers import unknown_provider
from benchwright_proxy.providers.auth import UpstreamAuth
from benchwright_proxy.providers.registry import (
    deployment_key,
    known_provider,
    max_concurrency,
    needs_key,
)
from benchwright_proxy.settings import ProxySettings
from benchwright_proxy.traces import CallTraces
from benchwright_proxy.usage import CallRecord, UsageMeter
from benchwright_shared.bus import publish_event
from benchwright_shared.contracts import (
    AttachModel,
    DetachModel,
    Egress,
    ModelAttached,
    ModelUsageRecorded,
    SutRef,
)
from benchwright_shared.contracts.queries import (
    CheckProviderKeys,
    ModelCallPrices,
    PriceModelCalls,
    ProviderKeys,
)
from benchwright_shared.service import HTTP_KEEP_ALIVE_S, listening
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore

log = logging.getLogger(__name__)

# How often a run's summed usage is reported.
USAGE_WINDOW_S = 0.5
# How long a copy trusts a binding it read: a key revoked through another copy stops
# working here within this long.
BINDING_TTL_S = 5.0
# How long a copy remembers that it detached a run: a call still in flight then (the
# upstream answers within its timeout and retries) is metered as the run's linger.
LINGER_MEMORY_S = 3600.0


class ProxyRuntime:
    def __init__(
        self,
        settings: Settings,
        app: ProxyApplication,
        store: BlockingStore,
        proxy_settings: ProxySettings | None = None,
    ) -> None:
        self.settings = settings
        self.app = app
        self.store = store
        self.pool = ProviderPool(settings, proxy_settings)
        self.broker: NatsBroker | None = None
        self.meter = UsageMeter()
        self.spend = TaskSpend()
        self._unpublished: list[ModelUsageRecorded] = []
        # Bindings by run id, with when they were read: a key check must not cost a
        # store read per call.
        self._bindings: dict[str, tuple[ModelBinding, float]] = {}
        # Runs this copy detached, with when: calls that finish after it linger.
        self._detached: dict[str, float] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._server: uvicorn.Server | None = None
        self.url = f"http://{settings.proxy_host}:{settings.proxy_port}"
        # Set by the service once the egress injector listens; None runs sandboxes offline.
        self.injector: EgressInjector | None = None
        # Set once the injector is listening or has failed to: attaches wait for it.
        self.injector_settled = asyncio.Event()
        # Set by the service: the run's provider credentials from the vault.
        self.credentials: RunCredentials | None = None
        # Set by the service: derives a run's key from its attach command, the same on
        # every copy that shares the vault key (a redelivered attach changes nothing).
        self.derive: Callable[[str, str], str] | None = None
        # Set by the service when tracing is on: a span per model call.
        self.call_traces: CallTraces | None = None

    async def authenticate(self, key: str) -> Caller:
        """The run a model or judge key belongs to. Bindings are cached for ``BINDING_TTL_S``:
        another copy may have revoked the key (``DetachModel`` reaches one copy) or
        re-attached the run."""
        if key.startswith(JUDGE_PREFIX):
            run_id, tag = parse_key(key, JUDGE_PREFIX)
            binding = await self._opened(
                run_id, key, self.app.authenticate_judge, lambda b: b.accepts_judge(tag)
            )
            return Caller(binding, "judge")
        run_id, secret = parse_key(key)
        return Caller(
            await self._opened(run_id, key, self.app.authenticate, lambda b: b.accepts(secret))
        )

    async def authenticate_egress(self, key: str) -> ModelBinding:
        """The run an egress key belongs to (the injector's check), cached alike."""
        run_id, tag = parse_key(key, EGRESS_PREFIX)
        return await self._opened(
            run_id, key, self.app.authenticate_egress, lambda b: b.accepts_egress(tag)
        )

    async def _opened(
        self,
        run_id: str,
        key: str,
        check: Callable[[str], ModelBinding],
        accepts: Callable[[ModelBinding], bool],
    ) -> ModelBinding:
        cached = self._bindings.get(run_id)
        fresh = cached is not None and time.monotonic() - cached[1] <= BINDING_TTL_S
        if cached is not None and fresh and accepts(cached[0]):
            return cached[0]
        # Unknown here, stale, or perhaps re-attached through another copy: ask the store.
        binding = await self.store.run(check, key)
        self._bindings[run_id] = (binding, time.monotonic())
        return binding

    async def bind(
        self,
        run_id: str,
        account: str,
        sut: SutRef,
        command_id: str | None = None,
        ceilings: tuple[int | None, int | None] = (None, None),
        cache: dict[str, Any] | None = None,
        bounds: tuple[int | None, int | None] = (None, None),
        telemetry: dict[str, bool] | None = None,
        judges: list[SutRef] | None = None,
    ) -> tuple[ModelBinding, str]:
        """Bind ``run_id`` to ``sut`` (and its ``judges``): the binding and the run's key
        for this attach."""
        for model in (sut, *(judges or [])):
            if not known_provider(model):
                raise unknown_provider(model)
        secret = self._key_secret(run_id, command_id)
        binding, key = await self.store.run(
            self.app.attach,
            run_id,
            account,
            sut,
            secret,
            ceilings,
            cache,
            bounds,
            telemetry,
            judges,
        )
        self._bindings[run_id] = (binding, time.monotonic())
        self._detached.pop(run_id, None)  # attached again (a resumed run): its calls count
        if self.credentials is not None:
            await self.credentials.pin(binding, self._pin_versions)
        # Warm the providers now, not on the sweep's first call.
        for model in (sut, *(judges or [])):
            await self.pool.get(model)
        return binding, key

    async def _pin_versions(self, run_id: str, versions: dict[str, int]) -> dict[str, int]:
        pinned = await self.store.run(self.app.pin_secrets, run_id, versions)
        self._bindings.pop(run_id, None)  # the cached binding predates the pins
        return pinned

    async def credentials_for(self, binding: ModelBinding, sut: SutRef) -> UpstreamAuth | None:
        if self.credentials is None:
            return None
        return await self.credentials.for_binding(binding, sut)

    async def attach(self, command: AttachModel) -> None:
        assert self.broker is not None
        await self.injector_settled.wait()
        binding, key = await self.bind(
            command.run_id,
            command.account,
            command.sut,
            command.command_id,
            (command.task_cost_micros, command.attempt_cost_micros),
            command.cache,
            (command.task_rows, command.trials_k),
            command.telemetry,
            command.judges,
        )
        reply = ModelAttached(
            command_id=command.command_id,
            run_id=command.run_id,
            proxy_url=self.settings.proxy_public_url or self.url,
            proxy_key=key,
            model_id=binding.model_id,
            litellm_config_yaml=litellm_config_yaml(command.sut, command.judges),
            max_concurrency=max_concurrency(command.sut),
            egress=self.egress(binding.egress_key),
            judge_key=binding.judge_key,
            judge_models=[model_id_for(judge) for judge in command.judges or []],
        )
        await publish_event(self.broker, reply, msg_id=f"{command.command_id}:attached")

    def egress(self, key: str) -> Egress | None:
        """The injector's address for the run whose egress key is ``key``, with the CA
        to trust."""
        if self.injector is None:
            return None
        public = self.settings.injector_public_url
        if public:
            # Several copies behind one address: sandboxes get the address, not ours.
            where = urlsplit(public)
            proxy_url = f"{where.scheme or 'http'}://run:{quote(key, safe='')}@{where.netloc}"
        else:
            proxy_url = self.injector.proxy_url(key)
        return Egress(proxy_url=proxy_url, ca_cert_pem=self.injector.ca_cert_path.read_text())

    async def detach(self, command: DetachModel) -> None:
        key_hash = self._attached_key_hash(command)
        if key_hash is not None and not await self.store.run(
            self.app.bound_to, command.run_id, key_hash
        ):
            # A detach that lost the race to the resumed run's attach: the key it ends
            # is already replaced, and the new one must keep working.
            log.info("ignoring a late detach of run %s", command.run_id)
            return
        # First: a call in flight now finishes after the run's ledger closed (it lingers).
        self._detached[command.run_id] = time.monotonic()
        self._bindings.pop(command.run_id, None)
        self.spend.forget(command.run_id)
        if self.credentials is not None:
            self.credentials.forget(command.run_id)
        if self.injector is not None:
            self.injector.forget_run(command.run_id)
        await self.store.run(self.app.detach, command.run_id, key_hash)
        await self.flush_usage()

    def _key_secret(self, run_id: str, attach_command_id: str | None) -> str | None:
        """The secret of the run's key as its attach command derives it; None when it
        is not derived (no deriver, or no command: a fresh random key)."""
        if self.derive is None or not attach_command_id:
            return None
        return self.derive("proxy-key", f"{run_id}\x1f{attach_command_id}")

    def _attached_key_hash(self, command: DetachModel) -> str | None:
        """The hash of the key the attach ``command`` ends gave; None when that cannot be
        known, and any key is detached."""
        secret = self._key_secret(command.run_id, command.attach_command_id)
        return None if secret is None else hash_secret(secret)

    async def price(self, query: PriceModelCalls) -> ModelCallPrices:
        """What calls of the sizes asked would cost on ``query.sut``, as a call is billed."""
        prices = self.settings.model_prices
        sut = query.sut
        operator = f"{sut.provider}/{sut.model}" in prices or sut.model in prices
        # A provider that cannot serve ``sut`` refuses with its own cause (ProviderError).
        provider = None if operator else await self.pool.get(sut)
        micros = [call_cost_micros(prices, sut, usage, provider) for usage in query.usages]
        source = "operator" if operator else ("provider" if any(micros) else "unpriced")
        return ModelCallPrices(micros=micros, source=source)

    async def check_keys(self, query: CheckProviderKeys) -> ProviderKeys:
        """Which of the models asked no key reaches: the deployment's for the provider,
        or one of the account's secrets for its host (what a call would carry)."""
        missing: dict[int, str] = {}
        for index, sut in enumerate(query.suts):
            if not known_provider(sut):
                missing[index] = unknown_provider(sut).detail
            elif needs_key(sut) and deployment_key(self.settings, sut) is None:
                has = self.credentials is not None and await self.credentials.account_has_key(
                    query.account, sut
                )
                if not has:
                    missing[index] = (
                        f"no {sut.provider} key: add a secret for its host (POST /v1/secrets) "
                        f"or set BW_{sut.provider.upper()}_API_KEY"
                    )
        return ProviderKeys(missing=missing)

    def record_usage(self, call: CallRecord) -> None:
        """Meter a finished call; one that finished after its run was detached lingers."""
        if call.run_id in self._detached:
            call = dataclasses.replace(call, linger=True)
        self.meter.record(call)

    def _forget_detached(self) -> None:
        horizon = time.monotonic() - LINGER_MEMORY_S
        for run_id, at in list(self._detached.items()):
            if at < horizon:
                del self._detached[run_id]

    async def flush_usage(self) -> None:
        if self.broker is None:
            return  # the endpoint alone (a bench): usage stays in the meter
        pending, self._unpublished = [*self._unpublished, *self.meter.drain()], []
        for usage in pending:
            try:
                await publish_event(self.broker, usage, msg_id=usage.usage_id)
            except Exception as exc:
                # Kept for the next window: its id makes a late repeat harmless.
                log.warning("could not publish model usage for %s (%s)", usage.run_id, exc)
                self._unpublished.append(usage)

    async def _publish_usage(self) -> None:
        while True:
            await asyncio.sleep(USAGE_WINDOW_S)
            await self.flush_usage()
            self._forget_detached()

    async def start(self, broker: NatsBroker) -> None:
        self.broker = broker
        self._tasks.append(asyncio.create_task(self._publish_usage(), name="proxy-usage"))
        await self.serve_http()

    async def serve_http(self) -> str:
        """Start the model endpoint; returns its URL (the real port when 0 was asked)."""
        http_app = build_http_app(
            self.pool,
            self.authenticate,
            self.record_usage,
            self.credentials_for,
            spend=self.spend,
            answers=StoredAnswers(self.app, self.store),
            traces=self.call_traces,
        )
        config = uvicorn.Config(
            http_app,
            host=self.settings.proxy_host,
            port=self.settings.proxy_port,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_keep_alive=HTTP_KEEP_ALIVE_S,
            # Streams still open at shutdown get this long to finish.
            timeout_graceful_shutdown=5,
        )
        self._server = uvicorn.Server(config)
        serving = listening(self._server.serve(), config.host, config.port)
        self._tasks.append(asyncio.create_task(serving, name="proxy-http"))
        while not self._server.started:
            if self._tasks[-1].done():
                self._tasks[-1].result()  # surfaces a bind error
            await asyncio.sleep(0.01)
        # Port 0 means "any free port": report the one we got.
        sockets = self._server.servers[0].sockets if self._server.servers else []
        if sockets:
            self.url = f"http://{self.settings.proxy_host}:{sockets[0].getsockname()[1]}"
        return self.url

    async def stop(self) -> None:
        if self._server:
            self._server.should_exit = True
        for task in self._tasks:
            if task.get_name() == "proxy-usage":
                task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.flush_usage()
        await self.pool.close()


class StoredAnswers:
    """The response cache over the proxy's store (``ProxyApplication.kept_answer``)."""

    def __init__(self, app: ProxyApplication, store: BlockingStore) -> None:
        self.app = app
        self.store = store

    async def get(self, key: str, max_age_s: float) -> dict[str, Any] | None:
        found: dict[str, Any] | None = await self.store.run(
            self.app.kept_answer, key, time.time() - max_age_s
        )
        return found

    async def put(self, key: str, account: str, answer: dict[str, Any], max_age_s: float) -> None:
        now = time.time()
        await self.store.run(self.app.keep_answer, key, account, answer, now, now - max_age_s)
