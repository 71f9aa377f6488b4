"""Model bindings: which run may call which model, under which fake key.

A run's proxy key is ``bw_proxy_<run hex>.<secret>``; only a hash of the
secret is stored, and a key is checked against the binding of the run it
names. Detaching a run revokes its key.

A run's sandboxes reach the outside through the egress injector with another
credential, ``bw_egress_<run hex>.<tag>``, whose tag is an HMAC of the stored
hash: it opens the injector only, never the model API. A sandbox that needs the
network but has no business calling the model (an agent's task, whose model
calls the orchestrator makes) holds the egress key alone. It is revoked with the
model key (a new key, a new tag; a detached binding accepts neither).

A run with judges (a scorer's second model, graded answers) has a third credential,
``bw_judge_<run hex>.<tag>``, made the same way: it opens the run's judges and never
its model under test, so a scorer cannot spend the judge's budget on the model or
the other way round, and each call is metered under its role (decision 0061).
"""

import hashlib
import hmac
import secrets
import uuid
from dataclasses import dataclass
from typing import Any, Literal

from eventsourcing.domain import Aggregate, event

KEY_PREFIX = "bw_proxy_"
EGRESS_PREFIX = "bw_egress_"
JUDGE_PREFIX = "bw_judge_"


class BindingError(Exception):
    pass


class InvalidProxyKeyError(BindingError):
    pass


def new_key(run_id: str, secret: str | None = None) -> tuple[str, str]:
    """A key for ``run_id`` (fresh, or with the ``secret`` given) and the hash to store."""
    secret = secret or secrets.token_urlsafe(24)
    return f"{KEY_PREFIX}{uuid.UUID(run_id).hex}.{secret}", hash_secret(secret)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def parse_key(key: str, prefix: str = KEY_PREFIX) -> tuple[str, str]:
    """(run_id, secret) from a proxy key (an egress key with ``EGRESS_PREFIX``: its
    tag); raises ``InvalidProxyKeyError``."""
    if not key.startswith(prefix) or "." not in key:
        raise InvalidProxyKeyError("not a Benchwright proxy key")
    run_hex, secret = key.removeprefix(prefix).split(".", 1)
    try:
        return str(uuid.UUID(hex=run_hex)), secret
    except ValueError:
        raise InvalidProxyKeyError("malformed proxy key") from None


def egress_tag(key_hash: str) -> str:
    return hmac.new(key_hash.encode(), b"egress", hashlib.sha256).hexdigest()


def judge_tag(key_hash: str) -> str:
    return hmac.new(key_hash.encode(), b"judge", hashlib.sha256).hexdigest()


def egress_key(run_id: str, key_hash: str) -> str:
    """The injector's credential for the run whose model key hashes to ``key_hash``."""
    return f"{EGRESS_PREFIX}{uuid.UUID(run_id).hex}.{egress_tag(key_hash)}"


# What a binding holds besides its key, each set by an event after ``Attached``.
_TERMS = (
    "secret_versions",
    "task_cost_micros",
    "attempt_cost_micros",
    "task_rows",
    "trials_k",
    "cache",
    "telemetry",
    "judges",
)


class ModelBinding(Aggregate):
    """Which run may call which model, and on what terms (ceilings, cache, telemetry,
    pinned secret versions)."""

    # 2: the terms set by later events are on every binding from ``Attached`` on.
    # Bindings are rebuilt from their events (``Attached`` sets the defaults); a
    # version 1 snapshot, should one exist, is given them by the upcaster.
    class_version = 2

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        """Give a version 1 snapshot's state the terms it may lack, as unset."""
        for name in _TERMS:
            state.setdefault(name, None)

    @staticmethod
    def create_id(run_id: str) -> uuid.UUID:
        return uuid.UUID(run_id)

    @event("Attached")
    def __init__(
        self, run_id: str, account: str, sut: dict[str, Any], key_hash: str, model_id: str
    ) -> None:
        self.run_id = run_id
        self.account = account
        self.sut = sut
        self.key_hash = key_hash
        self.model_id = model_id
        self.active = True
        # Terms later events set; None: unset (no ceiling, cache off, default telemetry,
        # no pinned versions).
        self.secret_versions: dict[str, int] | None = None
        self.task_cost_micros: int | None = None
        self.attempt_cost_micros: int | None = None
        self.task_rows: int | None = None
        self.trials_k: int | None = None
        self.cache: dict[str, Any] | None = None
        self.telemetry: dict[str, bool] | None = None
        self.judges: list[dict[str, Any]] | None = None

    @event("KeyIssued")
    def issue_key(self, key_hash: str) -> None:
        """Replace the key (a repeated attach): the old one stops working."""
        self.key_hash = key_hash
        self.active = True

    @event("Detached")
    def detach(self) -> None:
        self.active = False

    @event("SecretsPinned")
    def pin_secrets(self, versions: dict[str, int]) -> None:
        """Fix which version of each vault secret the run's provider calls use.

        Only versions are recorded, never values: the vault opens them per call.
        """
        self.secret_versions = dict(versions)

    @event("CeilingsSet")
    def set_ceilings(
        self,
        task_cost_micros: int | None,
        attempt_cost_micros: int | None,
        task_rows: int | None = None,
        trials_k: int | None = None,
    ) -> None:
        """The run's per-task spend ceilings (``limits.task.cost``, ``limits.attempt.cost``)
        and the tasks it has: a call naming another task index or trial is not the run's."""
        self.task_cost_micros = task_cost_micros
        self.attempt_cost_micros = attempt_cost_micros
        self.task_rows = task_rows
        self.trials_k = trials_k

    @property
    def task_bounds(self) -> tuple[int | None, int | None]:
        """(dataset rows, trials a task) the run's calls must fall within; None unknown."""
        return self.task_rows, self.trials_k

    @event("CacheChosen")
    def choose_cache(self, cache: dict[str, Any] | None) -> None:
        """The run's response cache setting (``{"mode", "ttl"}``; None: off)."""
        self.cache = cache

    @property
    def cache_setting(self) -> dict[str, Any] | None:
        return self.cache

    @event("TelemetryChosen")
    def choose_telemetry(self, telemetry: dict[str, bool] | None) -> None:
        """The run's trace options (``{"traces", "message_content"}``; None: defaults)."""
        self.telemetry = telemetry

    @property
    def telemetry_setting(self) -> dict[str, bool] | None:
        return self.telemetry

    @event("JudgesChosen")
    def choose_judges(self, judges: list[dict[str, Any]] | None) -> None:
        """The run's judges (``AttachModel.judges``, each a ``SutRef`` as a dict)."""
        self.judges = judges

    @property
    def judge_setting(self) -> list[dict[str, Any]] | None:
        return self.judges

    def judge_named(self, model_id: str | None) -> dict[str, Any] | None:
        """The judge a call names by its model id (``provider/model``, or the bare model
        when that is unambiguous); the first judge when it names none; None if the
        name is not one of the run's judges."""
        judges = self.judges or []
        if not judges:
            return None
        if not model_id:
            return judges[0]
        exact = [j for j in judges if f"{j['provider']}/{j['model']}" == model_id]
        bare = [j for j in judges if j["model"] == model_id]
        found = exact or (bare if len(bare) == 1 else [])
        return found[0] if found else None

    @property
    def ceilings(self) -> tuple[int | None, int | None]:
        """(task, attempt) cost ceilings in micro-dollars; (None, None) when unset."""
        return self.task_cost_micros, self.attempt_cost_micros

    @property
    def pinned_versions(self) -> dict[str, int] | None:
        """The versions pinned at the first attach; None before (older bindings too)."""
        return self.secret_versions

    def accepts(self, secret: str) -> bool:
        return self.active and hmac.compare_digest(self.key_hash, hash_secret(secret))

    def accepts_egress(self, tag: str) -> bool:
        return self.active and hmac.compare_digest(egress_tag(self.key_hash), tag)

    def accepts_judge(self, tag: str) -> bool:
        return (
            self.active and bool(self.judges) and hmac.compare_digest(judge_tag(self.key_hash), tag)
        )

    @property
    def judge_key(self) -> str | None:
        """The run's judge credential; None when the run has no judge."""
        if not self.judges:
            return None
        return f"{JUDGE_PREFIX}{uuid.UUID(self.run_id).hex}.{judge_tag(self.key_hash)}"

    @property
    def egress_key(self) -> str:
        return egress_key(self.run_id, self.key_hash)


Role = Literal["model", "judge"]


@dataclass(frozen=True, slots=True)
class Caller:
    """What a key opens: the run's binding, and whether its calls reach the model under
    test or the run's judges."""

    binding: ModelBinding
    role: Role = "model"


class CachedAnswer(Aggregate):
    """A model's whole answer to one request (``response_cache.cache_key``), kept to be
    served again. A fresh answer stays; one past its reader's TTL is replaced."""

    @staticmethod
    def create_id(key: str) -> uuid.UUID:
        return uuid.uuid5(uuid.NAMESPACE_URL, f"benchwright:answer:{key}")

    @event("Kept")
    def __init__(self, key: str, account: str, answer: dict[str, Any], kept_at: float) -> None:
        self.key = key
        self.account = account
        self.answer = answer
        self.kept_at = kept_at

    @event("Replaced")
    def replace(self, answer: dict[str, Any], kept_at: float) -> None:
        self.answer = answer
        self.kept_at = kept_at
