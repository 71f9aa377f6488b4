"""MMLU, BFCL and Natural Questions (open): real rows from the installed packages."""

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchwright_registry.catalog import CatalogBenchmark, CatalogDataMissing, builtin_catalog
from benchwright_registry.catalog import bfcl as bfcl_source
from benchwright_registry.catalog import mmlu as mmlu_source

Rows = list[dict[str, Any]]


def _benchmark(name: str) -> CatalogBenchmark:
    return next(b for b in builtin_catalog() if b.name == name)


def _rows(name: str, slug: str) -> Rows:
    return next(s for s in _benchmark(name).subsets if s.slug == slug).load_rows()


@pytest.fixture(scope="module")
def mmlu_all() -> Rows:
    return _rows("MMLU", "all")


# -- MMLU ----------------------------------------------------------------------------


def test_mmlu_has_all_and_one_subset_per_subject() -> None:
    mmlu = _benchmark("MMLU")
    slugs = [s.slug for s in mmlu.subsets]
    assert slugs[0] == "all"  # the default when a launch names no subset
    assert slugs[1:] == sorted(slugs[1:]) == list(mmlu_source.MMLU_TEST_ROWS)
    assert len(slugs) == 1 + 57
    assert sum(mmlu_source.MMLU_TEST_ROWS.values()) == 14042
    names = {s.slug: s.name for s in mmlu.subsets}
    assert names["abstract_algebra"] == "Abstract Algebra"
    assert names["high_school_us_history"] == "High School US History"
    assert names["high_school_government_and_politics"] == "High School Government and Politics"
    assert all(s.scorer is None for s in mmlu.subsets)


def test_mmlu_all_is_every_subject_in_order(mmlu_all: Rows) -> None:
    assert len(mmlu_all) == 14042
    subjects = list(mmlu_source.MMLU_TEST_ROWS)
    assert list(dict.fromkeys(r["category"] for r in mmlu_all)) == subjects
    assert Counter(r["category"] for r in mmlu_all) == mmlu_source.MMLU_TEST_ROWS
    assert len({r["task_id"] for r in mmlu_all}) == 14042
    for row in mmlu_all:
        subject = row["category"]
        assert set(row) == {"task_id", "category", "input", "expected"}
        assert set(row["input"]) == {"question", "choices", "subject"}
        assert row["input"]["subject"] == subject
        assert row["task_id"].startswith(f"mmlu/{subject}/test/")
        assert isinstance(row["input"]["question"], str)
        assert len(row["input"]["choices"]) == 4
        assert all(isinstance(c, str) for c in row["input"]["choices"])
        assert row["expected"] in {"A", "B", "C", "D"}
    # Every letter is a right answer often: the index was mapped, not copied.
    assert min(Counter(r["expected"] for r in mmlu_all).values()) > 3000


def test_mmlu_first_question_matches_the_dataset(mmlu_all: Rows) -> None:
    first = mmlu_all[0]
    assert first["task_id"] == "mmlu/abstract_algebra/test/0"
    assert first["input"]["question"].startswith("Find the degree for the given field extension")
    assert first["input"]["choices"] == ["0", "4", "2", "6"]
    assert first["expected"] == "B"


def test_each_mmlu_subject_subset_is_its_slice_of_all(mmlu_all: Rows) -> None:
    by_subject: dict[str, Rows] = {}
    for row in mmlu_all:
        by_subject.setdefault(row["category"], []).append(row)
    for subset in _benchmark("MMLU").subsets[1:]:
        rows = subset.load_rows()
        assert rows == by_subject[subset.slug]
        assert [r["task_id"] for r in rows] == [
            f"mmlu/{subset.slug}/test/{i}" for i in range(mmlu_source.MMLU_TEST_ROWS[subset.slug])
        ]


def test_mmlu_short_subject_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(mmlu_source.MMLU_TEST_ROWS, "anatomy", 136)
    with pytest.raises(CatalogDataMissing, match=r"anatomy test has 135 rows, expected 136"):
        mmlu_source.load_mmlu_subject("anatomy")


def test_mmlu_without_pyarrow_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(CatalogDataMissing, match=r"pip install pyarrow=="):
        mmlu_source.load_mmlu_subject("anatomy")


# -- BFCL ----------------------------------------------------------------------------

BFCL_COUNTS = {"simple": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 200}
BFCL_FILES = {
    "simple": "simple_python",
    "multiple": "multiple",
    "parallel": "parallel",
    "parallel_multiple": "parallel_multiple",
}


def test_bfcl_subsets() -> None:
    bfcl = _benchmark("BFCL v4")
    assert [s.slug for s in bfcl.subsets] == list(BFCL_COUNTS)
    assert [s.name for s in bfcl.subsets] == [
        "Simple function calling",
        "Multiple function calling",
        "Parallel function calling",
        "Parallel multiple function calling",
    ]
    assert all(s.scorer is None for s in bfcl.subsets)
    assert {"bfcl", "berkeley function calling", "function calling"} <= set(bfcl.aliases)
    # Renamed from "BFCL" (decision 0028): its id is still derived from the old name.
    assert bfcl.id_name == "BFCL"


@pytest.mark.parametrize("slug", list(BFCL_COUNTS))
def test_bfcl_rows_join_questions_to_answers(slug: str) -> None:
    rows = _rows("BFCL v4", slug)
    assert len(rows) == BFCL_COUNTS[slug]
    prefix = f"bfcl/{slug}/{BFCL_FILES[slug]}_"
    assert [r["task_id"] for r in rows] == [f"{prefix}{i}" for i in range(len(rows))]
    for row in rows:
        assert set(row) == {"task_id", "category", "input", "expected"}
        assert row["category"] == slug
        # The guide's shape (section 8.2 reads "question" and "functions").
        assert set(row["input"]) == {"question", "functions"}
        assert isinstance(row["input"]["question"], str) and row["input"]["question"].strip()
        offered = {f["name"] for f in row["input"]["functions"]}
        assert offered and all("parameters" in f for f in row["input"]["functions"])
        calls = row["expected"]
        assert isinstance(calls, list) and calls
        for call in calls:
            ((name, args),) = call.items()
            assert name in offered
            assert all(isinstance(v, list) for v in args.values())  # acceptable values
    if slug == "simple":
        assert rows[0]["expected"] == [
            {"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}}
        ]
    if slug.startswith("parallel"):
        assert any(len(r["expected"]) > 1 for r in rows)
    if slug == "parallel":
        assert rows[0]["input"]["question"].startswith("Play songs from the artists Taylor Swift")


@pytest.mark.parametrize("slug", list(BFCL_COUNTS))
def test_bfcl_rows_as_the_catalog_shaped_them_before(slug: str) -> None:
    """The retired shape (BFCL's own "question" turns and "function") comes back exactly
    from the current rows: the registry serves it to the runs made against it."""
    (earlier,) = next(s for s in _benchmark("BFCL v4").subsets if s.slug == slug).earlier
    category = BFCL_FILES[slug]
    questions = bfcl_source.read_jsonl(
        bfcl_source.data_file("bfcl_eval", f"data/BFCL_v4_{category}.json", "x")
    )
    for row, question in zip(_rows("BFCL v4", slug), questions, strict=True):
        old = earlier(row)
        assert old["input"] == {"question": question["question"], "function": question["function"]}
        assert {k: v for k, v in old.items() if k != "input"} == {
            k: v for k, v in row.items() if k != "input"
        }


def test_bfcl_question_of_several_messages_is_refused() -> None:
    turns = [[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]]
    with pytest.raises(CatalogDataMissing, match="is not one user message"):
        bfcl_source._user_text(turns, "BFCL x 'x_0'")


def test_bfcl_question_without_an_answer_fails_loudly(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    real = bfcl_source.data_file("bfcl_eval", "data/BFCL_v4_multiple.json", "x")
    answers = real.parent / "possible_answer" / real.name
    (tmp_path / "data" / "possible_answer").mkdir(parents=True)
    (tmp_path / "data" / real.name).write_bytes(real.read_bytes())
    kept = answers.read_text().splitlines()
    dropped = json.loads(kept.pop(7))["id"]
    (tmp_path / "data" / "possible_answer" / real.name).write_text("\n".join(kept) + "\n")
    monkeypatch.setattr(bfcl_source, "data_file", lambda _p, rel, _d: tmp_path / rel)
    with pytest.raises(CatalogDataMissing, match=rf"{dropped}' has no possible answer"):
        bfcl_source.load_bfcl("multiple", "multiple", 200)


def test_missing_bfcl_package_raises_with_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return None if name == "bfcl_eval" else real_find_spec(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(CatalogDataMissing, match=r"pip install --no-deps bfcl-eval==2026\.3\.23"):
        _benchmark("BFCL v4").subsets[0].load_rows()


# -- Natural Questions (open) ---------------------------------------------------------


def test_nq_open_validation_sample() -> None:
    nq = _benchmark("Natural Questions (open)")
    assert [s.slug for s in nq.subsets] == ["validation"]
    assert nq.subsets[0].scorer is None
    rows = nq.subsets[0].load_rows()
    assert len(rows) == 1000
    indexes = [int(r["task_id"].rsplit("/", 1)[1]) for r in rows]
    assert indexes == sorted(set(indexes))  # ordered by the index in NQ-open's split
    assert all(0 <= i < 3610 for i in indexes)
    for row in rows:
        assert set(row) == {"task_id", "input", "expected"}
        assert row["task_id"].startswith("nq_open/validation/")
        assert set(row["input"]) == {"question"} and row["input"]["question"].strip()
        assert row["expected"] and all(isinstance(a, str) for a in row["expected"])
    by_question = {r["input"]["question"]: r["expected"] for r in rows}
    assert by_question["who is playing halftime show super bowl 2018"] == ["Justin Timberlake"]
    assert any(len(answers) > 1 for answers in by_question.values())
