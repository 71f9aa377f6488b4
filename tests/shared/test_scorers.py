"""The scorer files (``benchwright_shared.scorers``): one source for the built-in catalog's
scorers and for every scorer the builtin Driver writes."""

import ast
from typing import Any

import pytest

from benchwright_orchestrator.driver.builtin import TEMPLATES, analyze_rows, write_scorer
from benchwright_orchestrator.driver.builtin.render import SETTINGS_LINE
from benchwright_registry.catalog import builtin_catalog
from benchwright_shared.scorers import (
    KIND_SCORERS,
    SCORERS,
    SETTINGS_END,
    scorer_source,
    split_settings,
)

# A built-in subset of each kind, whose rows the kind's file is set up for as it is.
CATALOG_OF_KIND = {
    "code": ("HumanEval", "test"),
    "function_call": ("BFCL v4", "parallel"),
    "multiple_choice": ("MMLU", "abstract_algebra"),
    "math": ("GSM8K", "test"),
    "exact_match": ("Natural Questions (open)", "validation"),
}


def _rows(benchmark: str, slug: str) -> list[dict[str, Any]]:
    bench = next(b for b in builtin_catalog() if b.name == benchmark)
    return next(s for s in bench.subsets if s.slug == slug).load_rows()


@pytest.mark.parametrize("name", SCORERS)
def test_every_scorer_is_a_task_with_a_docstring(name: str) -> None:
    module = ast.parse(scorer_source(name))
    assert ast.get_docstring(module)
    classes = [n.name for n in module.body if isinstance(n, ast.ClassDef)]
    assert "Task" in classes


@pytest.mark.parametrize("name", ["nope", "__init__", "../scorers", "CODE", ""])
def test_unknown_scorers_are_refused(name: str) -> None:
    with pytest.raises(KeyError):
        scorer_source(name)


def test_every_kind_has_its_scorer_file() -> None:
    assert set(TEMPLATES) == set(KIND_SCORERS)
    assert {t.scorer for t in TEMPLATES.values()} == set(KIND_SCORERS)


@pytest.mark.parametrize("name", KIND_SCORERS)
def test_the_settings_block_splits_the_file_whole(name: str) -> None:
    source = scorer_source(name)
    parts = split_settings(source)
    assert parts.head + "".join(parts.lines) + parts.tail == source
    assert parts.tail.startswith(SETTINGS_END)
    assert parts.lines and all(line.endswith("\n") for line in parts.lines)


def test_a_file_without_one_settings_block_is_refused() -> None:
    with pytest.raises(ValueError, match="exactly one settings block"):
        split_settings("X = 1\n")
    twice = scorer_source("math") + split_settings(scorer_source("math")).tail
    with pytest.raises(ValueError, match="exactly one settings block"):
        split_settings(twice)


@pytest.mark.parametrize("kind", KIND_SCORERS)
def test_the_driver_writes_the_file_with_only_settings_and_docstring_changed(kind: str) -> None:
    """On the built-in catalog's own rows, the settings the Driver finds are the file's:
    its scorer is the file itself, with what it saw added to the docstring."""
    rows = _rows(*CATALOG_OF_KIND[kind])
    analysis = analyze_rows(rows)
    assert analysis.kind == kind
    source = scorer_source(kind)
    written = write_scorer(analysis)
    original, driver = split_settings(source), split_settings(written)
    assert driver.lines == original.lines
    assert driver.tail == original.tail
    doc = ast.get_docstring(ast.parse(source), clean=False) or ""
    written_doc = ast.get_docstring(ast.parse(written), clean=False) or ""
    assert written_doc.startswith(doc + "\n")
    assert "Written by Benchwright's builtin Driver" in written_doc
    # Everything between the docstring and the settings is the file's, byte for byte; the
    # settings' first line says they are the Driver's.
    between = original.head[original.head.index('"""\n\n') :]
    marker = between[between.rstrip("\n").rfind("\n") + 1 :]
    assert driver.head.endswith(between[: -len(marker)] + SETTINGS_LINE)
    assert "builtin Driver" in SETTINGS_LINE and "BFCL v4" not in written


def test_guidance_changes_only_the_settings_values() -> None:
    analysis = analyze_rows(_rows("GSM8K", "test")[:30])
    written = split_settings(write_scorer(analysis, "zero-shot, max_tokens 100"))
    assert written.lines == (
        'QUESTION_FIELD = "question"  # in input: the problem text; "" = the input itself\n',
        "FEW_SHOT = False  # two worked examples first\n",
        "MAX_TOKENS = 100\n",
        "TOLERANCE = 0.0  # 0: the numbers must be equal\n",
    )
    assert written.tail == split_settings(scorer_source("math")).tail
