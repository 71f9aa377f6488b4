"""The estimate reads a scorer's ``max_tokens`` the way it was written: every scorer
Benchwright ships, the ones the builtin Driver writes, BUILT subsets' code, and code
written by hand."""

import pytest

from benchwright_gateway.estimation import DEFAULT_MAX_TOKENS, read_scorer, workload
from benchwright_orchestrator.driver.builtin import analyze_rows, write_scorer
from benchwright_registry.catalog import builtin_catalog
from benchwright_registry.domain.build import RECIPE_DEFAULTS, generate_code
from benchwright_shared.scorers import SCORERS, read_recipe, read_settings, scorer_source

# What each shipped file asks for, as its settings block says (the runner of BUILT
# subsets asks for nothing of its own: its recipe, written in front of it, does).
SHIPPED_MAX_TOKENS: dict[str, int | None] = {
    "code": 512,
    "function_call": 512,
    "multiple_choice": 64,
    "math": 256,
    "exact_match": 64,
    # The model's answer; the judges' calls are theirs (JUDGE_PARAMS).
    "judge_qa": 512,
    "judge_fact": 512,
    "judge_rubric": 512,
    "judge_pairwise": 512,
    "judge_panel": 512,
    "built_runner": None,
}


def test_the_table_names_every_shipped_scorer() -> None:
    assert set(SHIPPED_MAX_TOKENS) == set(SCORERS)


@pytest.mark.parametrize("name", SCORERS)
def test_every_shipped_scorer_gets_its_own_max_tokens(name: str) -> None:
    scorer = read_scorer(scorer_source(name))
    assert scorer.known
    assert scorer.max_tokens == SHIPPED_MAX_TOKENS[name]


@pytest.mark.parametrize("name", [n for n, cap in SHIPPED_MAX_TOKENS.items() if cap])
def test_the_estimate_bounds_answers_by_the_scorer_s_max_tokens(name: str) -> None:
    cap = SHIPPED_MAX_TOKENS[name]
    assert cap is not None
    found = workload(10, 2, read_scorer(scorer_source(name)), [100])
    assert found.completion_tokens.high == found.calls.high * cap
    assert found.completion_tokens.expected == found.calls.expected * max(1, cap // 4)
    assert "the scorer's max_tokens" in found.derivation[-1]


def test_a_driver_written_scorer_gets_the_value_the_driver_wrote() -> None:
    gsm8k = next(b for b in builtin_catalog() if b.name == "GSM8K")
    rows = next(s for s in gsm8k.subsets if s.slug == "test").load_rows()[:30]
    written = write_scorer(analyze_rows(rows), "zero-shot, max_tokens 100")
    assert read_settings(written)["MAX_TOKENS"] == 100
    assert read_scorer(written).max_tokens == 100


@pytest.mark.parametrize(("asked", "read"), [(300, 300), (None, None)])
def test_a_built_subset_gets_its_recipe_s_max_tokens(asked: int | None, read: int | None) -> None:
    recipe = {**RECIPE_DEFAULTS, "max_tokens": asked}
    code = generate_code(recipe, scorer_source("built_runner"))
    assert read_recipe(code) == recipe
    assert read_scorer(code).max_tokens == read


def test_a_hand_written_scorer_gets_its_literal_or_named_max_tokens() -> None:
    keyword = "class Task:\n    def solve(self):\n        return self.complete(p, max_tokens=1024)"
    entry = 'def solve():\n    return chat({"temperature": 0, "max_tokens": 2048})\n'
    named = "LIMIT = 99\ndef solve():\n    return complete(p, max_tokens=LIMIT)\n"
    assert read_scorer(keyword).max_tokens == 1024
    assert read_scorer(entry).max_tokens == 2048
    assert read_scorer(named).max_tokens == 99


def test_without_a_max_tokens_the_default_bounds_the_answer() -> None:
    scorer = read_scorer("def solve():\n    return complete(p, max_tokens=n)\n")
    assert scorer.max_tokens is None
    found = workload(1, 1, scorer, [40])
    assert found.completion_tokens.high == found.calls.high * DEFAULT_MAX_TOKENS
    assert "no max_tokens in the scorer" in found.derivation[-1]
    assert read_scorer("def broken(:\n").max_tokens is None
