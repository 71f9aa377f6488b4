"""The ledger counts each cost-bearing fact once and sums per run."""

from pathlib import Path

from benchwright_billing.projections import LedgerProjection, run_cost
from benchwright_shared.projection import ProjectionStore
from benchwright_shared.settings import Settings


def usage(usage_id: str, calls: int, micros: int) -> dict[str, object]:
    return {
        "usage_id": usage_id,
        "run_id": "r1",
        "account": "a",
        "calls": calls,
        "cost_micros": micros,
        "prompt_tokens": 10 * calls,
        "completion_tokens": calls,
    }


def test_usage_windows_and_sandbox_kills_add_up_once(tmp_path: Path) -> None:
    store = ProjectionStore(Settings(data_dir=tmp_path), "billing", [LedgerProjection()])
    try:
        store.apply_many("ledger", [(1, usage("u1", 3, 300)), (2, usage("u2", 2, 200))])
        # The same window re-published (a new stream position): counted once.
        store.apply("ledger", 3, usage("u1", 3, 300))
        store.apply(
            "ledger",
            4,
            {
                "sandbox_id": "sbx_1",
                "run_id": "r1",
                "role": "work",
                "reason": "run_finished",
                "duration_ms": 5,
                "cost_micros": 7,
                "metadata": {"account": "a"},
            },
        )
        store.apply("ledger", 5, {"something": "else"})
        # An exec's reply also names a sandbox and a duration: it is not a cost line.
        store.apply(
            "ledger",
            6,
            {"sandbox_id": "sbx_2", "run_id": "r1", "duration_ms": 9, "exit_code": 0},
        )
        # The Driver's own spend is its own line, never the model's.
        store.apply(
            "ledger",
            7,
            {**usage("d1", 2, 40), "source": "driver"},
        )
        totals = store.read(lambda cur: run_cost(cur, "r1"))
        assert totals["driver_micros"] == 40
        assert totals["model_calls"] == 5
        assert totals["model_micros"] == 500
        assert totals["prompt_tokens"] == 50
        assert totals["sandbox_micros"] == 7
    finally:
        store.close()


def test_a_lingering_call_is_its_own_line_and_narration_is_counted_when_it_spends(
    tmp_path: Path,
) -> None:
    store = ProjectionStore(Settings(data_dir=tmp_path), "billing", [LedgerProjection()])
    try:
        totals = store.read(lambda cur: run_cost(cur, "r1"))
        # Nothing spent yet, and nothing narrated: every key is there, at zero.
        assert totals["narration_micros"] == totals["narration_calls"] == 0
        assert totals["proxy_linger_micros"] == totals["proxy_linger_calls"] == 0
        store.apply_many(
            "ledger",
            [
                (1, usage("u1", 3, 300)),
                # Finished after the run's key was revoked: not the run's model spend.
                (2, {**usage("u2", 1, 2), "source": "proxy_linger"}),
                (3, {**usage("n1", 1, 90), "source": "narration"}),
            ],
        )
        totals = store.read(lambda cur: run_cost(cur, "r1"))
        assert (totals["model_calls"], totals["model_micros"]) == (3, 300)
        assert (totals["proxy_linger_calls"], totals["proxy_linger_micros"]) == (1, 2)
        assert totals["proxy_linger_prompt_tokens"] == 10
        assert totals["proxy_linger_completion_tokens"] == 1
        assert (totals["narration_calls"], totals["narration_micros"]) == (1, 90)
        assert totals["prompt_tokens"] == 30
    finally:
        store.close()


def test_a_judges_calls_are_their_own_line_lingering_or_not(tmp_path: Path) -> None:
    store = ProjectionStore(Settings(data_dir=tmp_path), "billing", [LedgerProjection()])
    try:
        store.apply_many(
            "ledger",
            [
                (1, usage("u1", 2, 200)),
                (2, {**usage("j1", 4, 80), "role": "judge"}),
                # A judge call that finished after the key was revoked is still the judge's.
                (3, {**usage("j2", 1, 20), "role": "judge", "source": "proxy_linger"}),
            ],
        )
        totals = store.read(lambda cur: run_cost(cur, "r1"))
        assert (totals["model_calls"], totals["model_micros"]) == (2, 200)
        assert (totals["judge_calls"], totals["judge_micros"]) == (5, 100)
        assert totals["judge_prompt_tokens"] == 50
        assert totals["proxy_linger_calls"] == 0
    finally:
        store.close()
