"""The proxy's application: attach and detach runs, check keys."""

import contextlib
import uuid
from typing import Any

import yaml
from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import RecordConflictError

from benchwright_proxy.domain import (
    EGRESS_PREFIX,
    JUDGE_PREFIX,
    CachedAnswer,
    InvalidProxyKeyError,
    ModelBinding,
    new_key,
    parse_key,
)
from benchwright_shared.contracts import SutRef


def model_id_for(sut: SutRef) -> str:
    return f"{sut.provider}/{sut.model}"


def litellm_config_yaml(sut: SutRef, judges: list[SutRef] | None = None) -> str:
    """The proxy's configuration for this model (and the run's judges after it, each
    marked as one), frozen into ``ModelProxyArtifact``: so the run's fingerprint moves
    with its judges, and a run without judges keeps the fingerprint it always had."""

    def entry(model: SutRef, role: str | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"model": model_id_for(model)}
        if model.api_base:
            params["api_base"] = model.api_base
        found: dict[str, Any] = {"model_name": model_id_for(model), "litellm_params": params}
        if role is not None:
            found["model_info"] = {"role": role}
        return found

    models = [entry(sut), *(entry(judge, "judge") for judge in judges or [])]
    return yaml.safe_dump({"model_list": models}, sort_keys=True)


class ProxyApplication(Application[uuid.UUID]):
    name = "proxy"

    def attach(
        self,
        run_id: str,
        account: str,
        sut: SutRef,
        secret: str | None = None,
        ceilings: tuple[int | None, int | None] = (None, None),
        cache: dict[str, Any] | None = None,
        bounds: tuple[int | None, int | None] = (None, None),
        telemetry: dict[str, bool] | None = None,
        judges: list[SutRef] | None = None,
    ) -> tuple[ModelBinding, str]:
        """Bind ``run_id`` to ``sut``; returns (binding, key).

        A new attach issues a new key (the old one stops working). ``secret`` makes
        the key a function of the attach command: the same command handled again (a
        redelivery, on any copy) gives the same key and changes nothing.
        """
        key, key_hash = new_key(run_id, secret)
        binding = ModelBinding(
            run_id=run_id,
            account=account,
            sut=sut.model_dump(),
            key_hash=key_hash,
            model_id=model_id_for(sut),
        )
        try:
            self.save(binding)
        except RecordConflictError:
            binding = self.repository.get(ModelBinding.create_id(run_id))
            if binding.key_hash != key_hash or not binding.active:
                binding.issue_key(key_hash)
                self.save(binding)
        if binding.ceilings != ceilings or binding.task_bounds != bounds:
            binding.set_ceilings(*ceilings, *bounds)
            self.save(binding)
        if binding.cache_setting != cache:
            binding.choose_cache(cache)
            self.save(binding)
        if binding.telemetry_setting != telemetry:
            binding.choose_telemetry(telemetry)
            self.save(binding)
        chosen = [judge.model_dump() for judge in judges] if judges else None
        if binding.judge_setting != chosen:
            binding.choose_judges(chosen)
            self.save(binding)
        return binding, key

    def pin_secrets(self, run_id: str, versions: dict[str, int]) -> dict[str, int]:
        """Pin ``versions`` for the run unless an earlier attach already did; the pins."""
        binding: ModelBinding = self.repository.get(ModelBinding.create_id(run_id))
        if binding.pinned_versions is None:
            binding.pin_secrets(versions)
            self.save(binding)
        assert binding.pinned_versions is not None
        return binding.pinned_versions

    def detach(self, run_id: str, key_hash: str | None = None) -> None:
        """Revoke the run's key; with ``key_hash``, only if that key is still the one
        bound (a detach of a key a later attach replaced changes nothing)."""
        try:
            binding: ModelBinding = self.repository.get(ModelBinding.create_id(run_id))
        except (AggregateNotFoundError, ValueError):
            return
        if key_hash is not None and binding.key_hash != key_hash:
            return
        if binding.active:
            binding.detach()
            self.save(binding)

    def bound_to(self, run_id: str, key_hash: str) -> bool:
        """Whether the run's binding still holds the key whose hash is ``key_hash``."""
        try:
            binding: ModelBinding = self.repository.get(ModelBinding.create_id(run_id))
        except (AggregateNotFoundError, ValueError):
            return False
        return binding.key_hash == key_hash

    def authenticate(self, key: str) -> ModelBinding:
        """The binding a model key opens; raises ``InvalidProxyKeyError``."""
        run_id, secret = parse_key(key)
        binding = self._binding(run_id)
        if not binding.accepts(secret):
            raise InvalidProxyKeyError("key revoked or wrong")
        return binding

    def authenticate_egress(self, key: str) -> ModelBinding:
        """The binding an egress key opens; raises ``InvalidProxyKeyError``."""
        run_id, tag = parse_key(key, EGRESS_PREFIX)
        binding = self._binding(run_id)
        if not binding.accepts_egress(tag):
            raise InvalidProxyKeyError("key revoked or wrong")
        return binding

    def authenticate_judge(self, key: str) -> ModelBinding:
        """The binding a judge key opens; raises ``InvalidProxyKeyError``."""
        run_id, tag = parse_key(key, JUDGE_PREFIX)
        binding = self._binding(run_id)
        if not binding.accepts_judge(tag):
            raise InvalidProxyKeyError("key revoked or wrong, or the run has no judge")
        return binding

    def _binding(self, run_id: str) -> ModelBinding:
        try:
            binding: ModelBinding = self.repository.get(ModelBinding.create_id(run_id))
        except AggregateNotFoundError:
            raise InvalidProxyKeyError("unknown run") from None
        return binding

    # -- the response cache ----------------------------------------------------------
    def kept_answer(self, key: str, newer_than: float) -> dict[str, Any] | None:
        """The answer kept for ``key`` (whose hash holds the account), if it was kept
        after ``newer_than`` (a time.time() value)."""
        try:
            found: CachedAnswer = self.repository.get(CachedAnswer.create_id(key))
        except AggregateNotFoundError:
            return None
        if found.kept_at <= newer_than:
            return None
        return found.answer

    def keep_answer(
        self, key: str, account: str, answer: dict[str, Any], now: float, stale_before: float
    ) -> None:
        """Keep an answer. One kept already for the key stays, unless it was kept before
        ``stale_before`` (past the TTL of the run writing): then this one replaces it."""
        try:
            self.save(CachedAnswer(key=key, account=account, answer=answer, kept_at=now))
            return
        except RecordConflictError:
            pass
        found: CachedAnswer = self.repository.get(CachedAnswer.create_id(key))
        if found.kept_at <= stale_before:
            found.replace(answer, now)
            # Another copy replaced it meanwhile: theirs is as fresh.
            with contextlib.suppress(RecordConflictError):
                self.save(found)
