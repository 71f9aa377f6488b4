"""The built-in catalog's entries and how a launch's names resolve to them. No I/O here."""

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchwright_shared.hashing import fingerprint12, sha256_hex
from benchwright_shared.ids import benchmark_id_for, impl_id_for
from benchwright_shared.refusal import Refused


@dataclass(frozen=True)
class Impl:
    impl_id: str
    code: str
    sha256: str
    label: str
    official: bool = True


@dataclass(frozen=True)
class Subset:
    subset_id: str
    slug: str
    name: str
    benchmark_id: str
    jsonl: bytes
    task_count: int
    content_sha256: str
    impls: tuple[Impl, ...]
    # Distinct values of the rows' top-level "category", in row order.
    categories: tuple[str, ...] = ()
    # Rows as an earlier catalog shaped them: served by id, never offered to a launch.
    retired: bool = False

    @property
    def object_name(self) -> str:
        return f"{self.subset_id}.jsonl"

    @property
    def official_impl(self) -> Impl | None:
        """The latest official impl: the one a launch runs unless it names another."""
        official = [i for i in self.impls if i.official]
        return official[-1] if official else None


@dataclass(frozen=True)
class Benchmark:
    benchmark_id: str
    name: str
    description: str
    category: str
    tags: tuple[str, ...]
    source: str
    subsets: tuple[Subset, ...] = field(default=())
    aliases: tuple[str, ...] = ()


def rows_to_jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows).encode()


def row_categories(rows: list[dict[str, Any]]) -> tuple[str, ...]:
    """The distinct string values of the rows' top-level ``category``, first seen first."""
    seen: dict[str, None] = {}
    for row in rows:
        category = row.get("category")
        if isinstance(category, str):
            seen.setdefault(category)
    return tuple(seen)


def make_subset(
    benchmark_id: str,
    slug: str,
    name: str,
    rows: list[dict[str, Any]],
    scorers: list[tuple[str, str]],
    *,
    retired: bool = False,
) -> Subset:
    """A subset whose id is a hash of its tasks: same rows, same id, anywhere.

    ``scorers`` holds (label, code) of its official impls; it may be empty, for a
    subset a Driver must write the scorer of. A ``retired`` subset holds the rows an
    earlier catalog shipped under this slug.
    """
    jsonl = rows_to_jsonl(rows)
    impls = tuple(
        Impl(
            impl_id=impl_id_for(benchmark_id, code), code=code, sha256=sha256_hex(code), label=label
        )
        for label, code in scorers
    )
    return Subset(
        subset_id=f"sub_{fingerprint12(jsonl)}",
        slug=slug,
        name=name,
        benchmark_id=benchmark_id,
        jsonl=jsonl,
        task_count=len(rows),
        content_sha256=sha256_hex(jsonl),
        impls=impls,
        categories=row_categories(rows),
        retired=retired,
    )


def make_benchmark(
    name: str,
    description: str,
    category: str,
    tags: tuple[str, ...],
    source: str,
    aliases: tuple[str, ...] = (),
    id_name: str | None = None,
) -> Benchmark:
    """A built-in benchmark; its id derives from ``id_name`` (a former name) or ``name``."""
    return Benchmark(
        benchmark_id=benchmark_id_for(id_name or name),
        name=name,
        description=description,
        category=category,
        tags=tags,
        source=source,
        aliases=aliases,
    )


def _name_key(name: str) -> str:
    return name.strip().lower()


class Catalog:
    """Every benchmark the registry knows, indexed for resolution.

    ``retired`` subsets (rows an earlier catalog shipped) are found by id, with the
    current ones, in ``subsets``: the runs made against them stay readable. They are
    in no benchmark's ``subsets``, so nothing resolves a launch to them.
    """

    def __init__(self, benchmarks: list[Benchmark], retired: Sequence[Subset] = ()) -> None:
        self.benchmarks = {b.benchmark_id: b for b in benchmarks}
        # Names and aliases, case-insensitively; one name may not mean two benchmarks.
        self._by_name: dict[str, Benchmark] = {}
        for b in benchmarks:
            for key in {_name_key(n) for n in (b.name, *b.aliases)}:
                other = self._by_name.setdefault(key, b)
                if other is not b:
                    raise ValueError(f"{key!r} names both {other.name} and {b.name}")
        current = {s.subset_id: s for b in benchmarks for s in b.subsets}
        self.subsets = {**{s.subset_id: s for s in retired}, **current}
        self.impls = {i.impl_id: i for s in current.values() for i in s.impls}

    def find(self, benchmark: str) -> Benchmark | None:
        """A benchmark by catalog id, then by exact (case-insensitive) name or alias."""
        return self.benchmarks.get(benchmark) or self._by_name.get(_name_key(benchmark))

    def resolve(
        self, benchmark: str, subset: str | None = None, impl: str | None = None
    ) -> tuple[Benchmark, Subset, Impl | None]:
        """Catalog id first, then exact (case-insensitive) name or alias."""
        found = self.find(benchmark)
        if found is None:
            raise Refused(
                404,
                "benchmark not found",
                f"no benchmark with id or name {benchmark!r}",
                field="benchmark",
                code="not_found",
            )
        if not found.subsets:
            raise Refused(409, "benchmark has no subsets", found.name, field="benchmark")
        chosen = found.subsets[0]
        if subset is not None:
            matches = [s for s in found.subsets if subset in (s.subset_id, s.slug)]
            if not matches:
                raise Refused(
                    404,
                    "subset not found",
                    f"{found.name} has no subset {subset!r}; it has "
                    f"{', '.join(s.slug for s in found.subsets)}",
                    field="subset",
                    code="not_found",
                )
            chosen = matches[0]
        picked = chosen.official_impl
        if impl is not None and impl != "latest:official":
            matching = [i for i in chosen.impls if i.impl_id == impl]
            if not matching:
                raise Refused(
                    404,
                    "impl not found",
                    f"no impl {impl!r} for this subset",
                    field="impl",
                    code="not_found",
                )
            picked = matching[0]
        return found, chosen, picked
