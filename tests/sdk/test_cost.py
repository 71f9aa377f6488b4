"""The SDK's view of ``run.cost``: every source, calls and tokens, exact dollars."""

from benchwright._models import LLMSpend, Run
from tests.sdk.fakes import run_body


def spend(usd: float, calls: int) -> dict[str, object]:
    return {
        "amount_cents": round(usd * 100),
        "currency": "USD",
        "amount_usd": usd,
        "calls": calls,
        "prompt_tokens": 10 * calls,
        "completion_tokens": calls,
    }


def test_a_runs_cost_reads_every_source() -> None:
    cost = {
        "model": spend(0.12, 4),
        "sandbox": {"amount_cents": 3, "currency": "USD", "amount_usd": 0.03},
        "driver": {"amount_cents": 1, "currency": "USD", "amount_usd": 0.01},
        "narration": spend(0.0, 0),
        "incurred": {"amount_cents": 16, "currency": "USD", "amount_usd": 0.16},
        "billed": {"amount_cents": 5, "currency": "USD", "amount_usd": 0.048},
        "proxy_linger": spend(0.001234, 1),
    }
    run = Run.model_validate(run_body("ok", cost=cost))
    assert isinstance(run.cost.model, LLMSpend) and run.cost.model.calls == 4
    assert run.cost.narration is not None and run.cost.narration.calls == 0
    linger = run.cost.proxy_linger
    assert linger is not None and linger.amount_cents == 0 and linger.amount_usd == 0.001234
    # An all-in figure adds the linger at the read site.
    assert run.cost.incurred is not None and run.cost.incurred.amount_usd is not None
    assert round(run.cost.incurred.amount_usd + linger.amount_usd, 6) == 0.161234


def test_an_older_server_without_the_new_keys_still_parses() -> None:
    run = Run.model_validate(run_body("ok"))
    assert run.cost.narration is None and run.cost.proxy_linger is None
    assert run.cost.model is not None and run.cost.model.calls == 0
    assert run.cost.billed is not None and run.cost.billed.amount_usd is None
