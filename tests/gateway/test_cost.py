"""``run.cost`` as the API shows it (concepts §9): each source on its own key."""

from benchwright_gateway.render import render_cost
from benchwright_shared.contracts import RunCost


def test_every_source_has_its_key_and_linger_is_in_no_total() -> None:
    cost = RunCost(
        run_id="r1",
        model_micros=120_000,
        sandbox_micros=30_000,
        driver_micros=10_000,
        model_calls=4,
        prompt_tokens=400,
        completion_tokens=40,
        proxy_linger_micros=1_234,
        proxy_linger_calls=1,
        proxy_linger_prompt_tokens=100,
        proxy_linger_completion_tokens=3,
        billed_micros=48_000,  # (sandbox + driver) x 1.2, as billing says
    )
    shown = render_cost(cost)
    assert shown is not None
    assert shown["model"] == {
        "amount_cents": 12,
        "currency": "USD",
        "amount_usd": 0.12,
        "calls": 4,
        "prompt_tokens": 400,
        "completion_tokens": 40,
    }
    # Narration asks no model: the key is there, with nothing spent and no calls.
    assert shown["narration"] == {
        "amount_cents": 0,
        "currency": "USD",
        "amount_usd": 0.0,
        "calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
    }
    assert shown["incurred"]["amount_usd"] == 0.16
    assert shown["billed"]["amount_usd"] == 0.048
    # Sub-cent: the cents round to 0, the dollars are exact.
    linger = shown["proxy_linger"]
    assert (linger["amount_cents"], linger["amount_usd"]) == (0, 0.001234)
    assert (linger["calls"], linger["prompt_tokens"], linger["completion_tokens"]) == (1, 100, 3)


def test_a_billing_that_does_not_say_what_it_billed_shows_the_platform_share() -> None:
    shown = render_cost(RunCost(run_id="r1", sandbox_micros=30_000, driver_micros=10_000))
    assert shown is not None and shown["billed"]["amount_usd"] == 0.04
    assert render_cost(None) is None
