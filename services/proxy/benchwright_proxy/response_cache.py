"""The response cache: a model's answer kept and served again for the same request.

Chosen per launch (``cache: off | read | read_write``, with a TTL; off by default, so
nothing changes unless asked). An answer is keyed by a hash of everything that
shapes it: the account (a hit never crosses accounts), the provider, model and
endpoint, the request body as the scorer sent it (messages, sampling parameters,
tools...) and the trial index, so that k trials stay k samples rather than one
answer served k times. Only whole (non-streamed) answers are kept; they live in the
proxy's store, so they outlive a restart. A hit costs nothing, is metered as a
cached call, and is stamped ``x-benchwright-cache: hit`` for the runtime, which
records it in the task's result. A run's judge calls are always cached
(``judge_cache``), keyed by the judge's model like any call.
"""

import hashlib
import json
from typing import Any, Protocol

from benchwright_shared.contracts import SutRef

# Body fields that change how an answer is delivered, not what it says.
DELIVERY_FIELDS = frozenset({"stream", "stream_options", "user"})


def cache_key(account: str, sut: SutRef, body: dict[str, Any], trial: int) -> str:
    material = {
        "account": account,
        "provider": sut.provider,
        "model": sut.model,
        "api_base": sut.api_base,
        "trial": trial,
        "request": {k: v for k, v in body.items() if k not in DELIVERY_FIELDS},
    }
    canonical = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


# A judge's answers are kept this long unless the run's cache says otherwise.
JUDGE_CACHE_TTL_S = 30 * 24 * 3600


def judge_cache(run_setting: dict[str, Any] | None) -> dict[str, Any]:
    """The cache a run's judge calls use: read and write, with the run's TTL if it set
    one. Judge calls are cached whatever the run chose for its model's: the prompt
    holds the graded output, so a hit is the same judge grading the same answer."""
    ttl = (run_setting or {}).get("ttl") or JUDGE_CACHE_TTL_S
    return {"mode": "read_write", "ttl": ttl}


def reads(setting: dict[str, Any] | None) -> bool:
    return setting is not None and setting.get("mode") in ("read", "read_write")


def writes(setting: dict[str, Any] | None) -> bool:
    return setting is not None and setting.get("mode") == "read_write"


class Answers(Protocol):
    """Where answers are kept (the proxy's store)."""

    async def get(self, key: str, max_age_s: float) -> dict[str, Any] | None: ...

    async def put(
        self, key: str, account: str, answer: dict[str, Any], max_age_s: float
    ) -> None: ...
