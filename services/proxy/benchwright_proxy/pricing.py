"""What a call cost: an operator's own price list first, then the provider's.

``BW_MODEL_PRICES`` maps ``<provider>/<model>`` (or a bare model id) to dollars
per million prompt and completion tokens, e.g.
``{"openai_compatible/llama-3-70b": {"prompt_per_mtok": 0.6, "completion_per_mtok": 0.8}}``.
It covers self-hosted models, which have no public price, and overrides
LiteLLM's table where a contract price differs.
"""

from typing import Any

from benchwright_proxy.providers import Provider
from benchwright_shared.contracts import SutRef
from benchwright_shared.money import dollars_to_micros


def call_cost_micros(
    prices: dict[str, dict[str, float]],
    sut: SutRef,
    usage: dict[str, Any],
    provider: Provider | None,
) -> int:
    if not usage:
        return 0
    price = prices.get(f"{sut.provider}/{sut.model}") or prices.get(sut.model)
    if price is not None:
        dollars = (
            int(usage.get("prompt_tokens") or 0) * float(price.get("prompt_per_mtok", 0))
            + int(usage.get("completion_tokens") or 0) * float(price.get("completion_per_mtok", 0))
        ) / 1e6
        return dollars_to_micros(dollars)
    return provider.cost_micros(sut, usage) if provider else 0
