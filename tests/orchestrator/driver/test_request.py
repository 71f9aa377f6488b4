"""parse_request: plain-English run requests read against a small catalog."""

import dataclasses

import pytest

from benchwright_orchestrator.driver.builtin import (
    ParsedRequest,
    RequestNotUnderstood,
    Scope,
    parse_request,
)
from benchwright_shared.contracts import CatalogBenchmarkEntry, CatalogSubsetEntry
from tests.orchestrator.driver.data import CATALOG


def parse(text: str) -> ParsedRequest:
    return parse_request(text, CATALOG)


@pytest.mark.parametrize(
    ("text", "benchmark", "subset", "model", "provider", "scope"),
    [
        ("Run GSM8K on local/smollm2", "GSM8K", "test", "smollm2", "local", Scope("all")),
        (
            "Run GSM8K on local/smollm2 with 20 samples",
            "GSM8K", "test", "smollm2", "local", Scope("first_n", 20),
        ),
        (
            "Run GSM8K on local/smollm2, first 20 tasks",
            "GSM8K", "test", "smollm2", "local", Scope("first_n", 20),
        ),
        (
            "Run MMLU abstract algebra on openai/gpt-4o-mini via OpenRouter",
            "MMLU", "abstract_algebra", "openai/gpt-4o-mini", "openrouter", Scope("all"),
        ),
        (
            "Run BFCL v4 parallel function calling on qwen3-32b",
            "BFCL", "parallel", "qwen3-32b", None, Scope("all"),
        ),
        (
            "one sample from each MMLU category",
            "MMLU", "all", None, None, Scope("per_category", 1),
        ),
        (
            "Evaluate humaneval with qwen/qwen3-32b on together",
            "HumanEval", "test", "qwen/qwen3-32b", "together", Scope("all"),
        ),
        (
            "5 questions from each MMLU subject",
            "MMLU", "all", None, None, Scope("per_category", 5),
        ),
        # Spelling, spacing and punctuation of names do not matter.
        ("run gsm 8k on smollm2@local", "GSM8K", "test", "smollm2", "local", Scope("all")),
        ("Run GSM-8K", "GSM8K", "test", None, None, Scope("all")),
        ("benchmark Human Eval against gpt-4o via open router", "HumanEval", "test", "gpt-4o",
         "openrouter", Scope("all")),
        ("Run BFCL parallel multiple on Qwen/Qwen3-32B", "BFCL", "parallel_multiple",
         "Qwen/Qwen3-32B", None, Scope("all")),
        ("run nq-open with llama-3.1-8b on together.ai, top ten", "Natural Questions",
         "validation", "llama-3.1-8b", "together", Scope("first_n", 10)),
        ("Run MMLU anatomy with openai/gpt-4o-mini", "MMLU", "anatomy", "gpt-4o-mini", "openai",
         Scope("all")),
        ("Run MMLU on all subjects, 3 per subject", "MMLU", "all", None, None,
         Scope("per_category", 3)),
        ("Run GSM8K train split for claude", "GSM8K", "train", "claude", None, Scope("all")),
        ("run bm_humaneval --limit 3", "HumanEval", "test", None, None, Scope("first_n", 3)),
    ],
)  # fmt: skip
def test_requests_are_read(
    text: str,
    benchmark: str,
    subset: str,
    model: str | None,
    provider: str | None,
    scope: Scope,
) -> None:
    parsed = parse(text)
    assert (parsed.benchmark_name, parsed.subset_slug) == (benchmark, subset)
    assert (parsed.model, parsed.provider, parsed.scope) == (model, provider, scope)
    entry = next(b for b in CATALOG if b.name == benchmark)
    assert parsed.benchmark_id == entry.benchmark_id
    assert parsed.subset_id == next(s.subset_id for s in entry.subsets if s.slug == subset)


def test_notes_explain_how_the_request_was_read() -> None:
    parsed = parse("Run BFCL v4 parallel function calling on qwen3-32b")
    assert "matched 'BFCL' by alias 'bfcl v4' (from 'BFCL v4')" in parsed.notes
    assert "subset 'parallel' -> parallel" in parsed.notes
    assert "model 'qwen3-32b' (no provider named)" in parsed.notes

    parsed = parse("Run MMLU abstract algebra on openai/gpt-4o-mini via OpenRouter")
    assert "subset 'abstract algebra' -> abstract_algebra" in parsed.notes
    assert any("provider 'openrouter'" in note for note in parsed.notes)

    parsed = parse("one sample from each MMLU category")
    assert "subset all (its rows carry 2 categories)" in parsed.notes
    assert parse("Run GSM8K").notes[-1] == "subset test (the default 'test' subset; none was named)"


def test_parsed_request_is_frozen_and_serialisable() -> None:
    parsed = parse("Run GSM8K on local/smollm2 with 20 samples")
    with pytest.raises(dataclasses.FrozenInstanceError):
        parsed.model = "other"  # type: ignore[misc]
    assert dataclasses.asdict(parsed)["scope"] == {"kind": "first_n", "n": 20}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the request is empty"),
        ("Run SuperGLUE on local/smollm2", "no benchmark is named"),
        ("Run BFCL on qwen3-32b", "name a subset of BFCL: one of simple, multiple, parallel"),
        ("one sample from each GSM8K category", "GSM8K has no subset whose rows carry categories"),
        ("3 per category of MMLU anatomy", "MMLU subset anatomy has no categories"),
        ("Run GSM8K on smollm2@local via OpenRouter", "two providers, openrouter and local"),
        ("Run GSM8K, first 0 tasks", "at least one is needed"),
    ],
)
def test_requests_that_cannot_be_read_say_why(text: str, message: str) -> None:
    with pytest.raises(RequestNotUnderstood) as raised:
        parse(text)
    assert message in str(raised.value)


def test_an_unknown_benchmark_lists_the_known_ones() -> None:
    with pytest.raises(RequestNotUnderstood) as raised:
        parse("Run SuperGLUE")
    text = str(raised.value)
    for name in ("GSM8K", "HumanEval", "MMLU", "BFCL", "Natural Questions", "nq-open"):
        assert name in text


def test_two_benchmarks_matching_equally_is_ambiguous() -> None:
    subsets = [CatalogSubsetEntry(subset_id="s", slug="test", name="Test", task_count=1)]
    catalog = [
        *CATALOG,
        CatalogBenchmarkEntry(
            benchmark_id="bm_mmlu_redux", name="MMLU-Redux", aliases=["mmlu"], subsets=subsets
        ),
    ]
    with pytest.raises(RequestNotUnderstood) as raised:
        parse_request("Run mmlu on gpt-4o", catalog)
    assert "MMLU" in str(raised.value) and "MMLU-Redux" in str(raised.value)
    # The longer, more specific name is not ambiguous.
    assert parse_request("Run MMLU Redux on gpt-4o", catalog).benchmark_name == "MMLU-Redux"


def test_the_longest_subset_name_wins() -> None:
    assert parse("Run BFCL parallel on gpt-4o").subset_slug == "parallel"
    assert parse("Run BFCL parallel_multiple on gpt-4o").subset_slug == "parallel_multiple"


def test_counts_and_model_ids_are_not_taken_for_each_other() -> None:
    parsed = parse("Run GSM8K with 20 samples on local/smollm2")
    assert (parsed.model, parsed.provider, parsed.scope) == (
        "smollm2",
        "local",
        Scope("first_n", 20),
    )
    # A benchmark or subset name after "on" is not a model.
    parsed = parse("Evaluate on MMLU anatomy with gpt-4o-mini")
    assert (parsed.benchmark_name, parsed.subset_slug, parsed.model) == (
        "MMLU",
        "anatomy",
        "gpt-4o-mini",
    )


def test_providers_can_be_configured() -> None:
    parsed = parse_request("Run GSM8K on myhost/smollm2", CATALOG, providers=("myhost",))
    assert (parsed.model, parsed.provider) == ("smollm2", "myhost")


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        ("Run MMLU Pro (full) on openai/gpt-4o-mini", "MMLU Pro"),
        ("Run MMLU-Pro on openai/gpt-4o-mini", "MMLU Pro"),
        ("Run GSM8K hard on local/smollm2", "GSM8K hard"),
        ("Run HumanEval+ on qwen/qwen3-32b@together", "HumanEval+"),
        ("Run GSM8K v2 on local/smollm2", "GSM8K v2"),
    ],
)
def test_a_variant_the_catalog_lacks_is_refused_with_the_nearest(text: str, asked: str) -> None:
    with pytest.raises(RequestNotUnderstood) as raised:
        parse(text)
    message = str(raised.value)
    assert f"no {asked!r}" in message
    assert asked.split()[0].rstrip("+") in message.split("the nearest:")[1]
    assert "or the nearest benchmark" in message


@pytest.mark.parametrize(
    "text",
    [
        "Run MMLU Pro (full), or the nearest benchmark, on openai/gpt-4o-mini",
        "Run MMLU Pro or closest on openai/gpt-4o-mini",
        "Run MMLU Pro on openai/gpt-4o-mini; substitutes are fine",
    ],
)
def test_a_substitute_runs_only_when_the_request_allows_it_and_says_so(text: str) -> None:
    parsed = parse(text)
    assert (parsed.benchmark_name, parsed.substituted_for) == ("MMLU", "MMLU Pro")
    assert (parsed.model, parsed.provider) == ("gpt-4o-mini", "openai")
    assert any("in place of" in n or "instead" in n for n in parsed.notes)


@pytest.mark.parametrize(
    "text",
    [
        "Run BFCL v4 parallel function calling on qwen3-32b",  # v4 is BFCL's alias
        "Run MMLU abstract algebra on openai/gpt-4o-mini",  # a subset, not a variant
        "Run GSM8K on local/smollm2, first 20 tasks",
    ],
)
def test_named_benchmarks_are_not_taken_for_variants(text: str) -> None:
    assert parse(text).substituted_for is None


def test_a_subset_whose_name_starts_like_a_variant_is_still_a_subset() -> None:
    bench = next(b for b in CATALOG if b.name == "MMLU")
    pro = CatalogSubsetEntry(
        subset_id="sub_pro", slug="pro_law", name="Professional law", task_count=1
    )
    catalog = [b.model_copy(update={"subsets": [*b.subsets, pro]}) if b is bench else b
               for b in CATALOG]  # fmt: skip
    assert parse_request("Run MMLU pro law on x/y-1", catalog).subset_slug == "pro_law"
    with pytest.raises(RequestNotUnderstood):
        parse_request("Run MMLU Pro on x/y-1", catalog)
