"""BFCL v4 (Berkeley Function Calling Leaderboard), from the bfcl-eval package.

Each category is a pair of files: the questions with the functions offered, and
the possible answers (every acceptable value of every argument). Both are JSON
lines despite their ``.json`` extension. A row's input is ``{"question",
"functions"}``: the user's request as text (every question of these categories is
one turn of one user message) and BFCL's function specs as they are (BFCL's
parameter types: ``dict``, ``float``...). Its expected value is BFCL's possible
answer unchanged, so a scorer can apply BFCL's AST checker to it.
"""

import json
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from benchwright_registry.catalog.base import (
    BFCL_EVAL_DIST,
    CatalogBenchmark,
    CatalogDataMissing,
    CatalogSubset,
    Row,
    check_count,
    data_file,
    read_jsonl,
    source_of,
)

# Relative to the bfcl_eval package directory.
BFCL_QUESTIONS_FILE = "data/BFCL_v4_{category}.json"
BFCL_ANSWERS_FILE = "data/possible_answer/BFCL_v4_{category}.json"


@dataclass(frozen=True)
class _Category:
    slug: str
    category: str  # BFCL's name, in its file names
    name: str
    rows: int
    asks: str  # what a task asks the model for


_CATEGORIES = (
    _Category("simple", "simple_python", "Simple function calling", 400, "one call"),
    _Category(
        "multiple", "multiple", "Multiple function calling", 200, "one call, choosing a function"
    ),
    _Category("parallel", "parallel", "Parallel function calling", 200, "several calls"),
    _Category(
        "parallel_multiple",
        "parallel_multiple",
        "Parallel multiple function calling",
        200,
        "several calls, choosing among functions",
    ),
)
BFCL_ROWS = {c.slug: c.rows for c in _CATEGORIES}


def _bfcl_file(template: str, category: str) -> Path:
    return data_file("bfcl_eval", template.format(category=category), BFCL_EVAL_DIST)


def load_bfcl(slug: str, category: str, expected_rows: int) -> list[Row]:
    """One BFCL category's questions in file order, each joined to its possible answer.

    Raises ``CatalogDataMissing`` when a question has no answer (or the ids repeat):
    a task without its answer cannot be scored, and dropping it would change the set.
    """
    ground_truth: dict[str, Any] = {}
    for answer in read_jsonl(_bfcl_file(BFCL_ANSWERS_FILE, category)):
        if answer["id"] in ground_truth:
            raise CatalogDataMissing(f"BFCL {category} answers repeat id {answer['id']!r}")
        ground_truth[answer["id"]] = answer.get("ground_truth")
    rows: list[Row] = []
    seen: set[str] = set()
    for question in read_jsonl(_bfcl_file(BFCL_QUESTIONS_FILE, category)):
        task = question["id"]
        if task in seen:
            raise CatalogDataMissing(f"BFCL {category} questions repeat id {task!r}")
        seen.add(task)
        if ground_truth.get(task) is None:
            raise CatalogDataMissing(f"BFCL {category} question {task!r} has no possible answer")
        rows.append(
            {
                "task_id": f"bfcl/{slug}/{task}",
                "category": slug,
                "input": {
                    "question": _user_text(question["question"], f"BFCL {category} {task!r}"),
                    "functions": question["function"],
                },
                "expected": ground_truth[task],
            }
        )
    check_count(rows, expected_rows, f"BFCL {category}", BFCL_EVAL_DIST)
    return rows


def _user_text(turns: Any, where: str) -> str:
    """The text of a question that is one turn of one user message (any other is refused:
    the row's text could not hold it)."""
    match turns:
        case [[{"role": "user", "content": str(text), **rest}]] if not rest:
            return text
    raise CatalogDataMissing(f"{where} is not one user message: {json.dumps(turns)[:200]}")


def turns_and_function(row: Row) -> Row:
    """A row as the catalog shaped it until decision 0028: BFCL's own ``question`` (a list
    of turns of messages) and ``function`` keys."""
    functions = row["input"]["functions"]
    turns = [[{"role": "user", "content": row["input"]["question"]}]]
    return {**row, "input": {"question": turns, "function": functions}}


BFCL = CatalogBenchmark(
    name="BFCL v4",
    # Named "BFCL" until decision 0028; its id (and the impl ids under it) stayed.
    id_name="BFCL",
    aliases=(
        "bfcl",
        "bfcl-v4",
        "berkeley function calling",
        "berkeley function calling leaderboard",
        "function calling",
    ),
    description=(
        "Berkeley Function Calling Leaderboard (v4), single-turn Python categories: "
        "given a user request and the functions' JSON schemas, the model must emit the "
        "right call(s) with acceptable arguments."
    ),
    category="tool-use",
    tags=("tool-use", "function-calling", "json-schema", "agents"),
    source=source_of(BFCL_EVAL_DIST, "bfcl_eval", "data/BFCL_v4_<category>.json"),
    subsets=tuple(
        CatalogSubset(
            slug=c.slug,
            name=c.name,
            description=f"BFCL's {c.category} category: {c.rows} tasks, each wanting {c.asks}.",
            scorer=None,
            load_rows=partial(load_bfcl, c.slug, c.category, c.rows),
            earlier=(turns_and_function,),
        )
        for c in _CATEGORIES
    ),
)
