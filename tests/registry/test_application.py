"""The registry application over the real built-in catalog: listing, resolution, rows."""

import pytest

from benchwright_registry.application import RegistryApplication, load_builtin_catalog
from benchwright_registry.catalog import builtin_catalog
from benchwright_registry.domain import (
    Catalog,
    ResolutionError,
    make_benchmark,
    make_subset,
    row_categories,
    rows_to_jsonl,
)
from benchwright_shared.contracts import GetSubsetRows, ListCatalog, ResolveBenchmark
from benchwright_shared.hashing import fingerprint12

# Subset ids are hashes of the rows: the same on every install of the same packages.
PINNED_SUBSET_IDS = {
    ("GSM8K", "test"): "sub_54bb53a2cda5",
    ("HumanEval", "test"): "sub_efbb547c5fe7",
    ("MMLU", "all"): "sub_d4c715a9a184",
    ("MMLU", "abstract_algebra"): "sub_dc7d96093405",
    ("BFCL", "simple"): "sub_01431d680cec",
    ("BFCL", "multiple"): "sub_8fa6aa3cd3f1",
    ("Natural Questions (open)", "validation"): "sub_34cbc18fd30f",
}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_builtin_catalog()


@pytest.fixture(scope="module")
def app(catalog: Catalog) -> RegistryApplication:
    return RegistryApplication(catalog)


def test_every_subset_id_is_the_hash_of_its_rows(catalog: Catalog) -> None:
    for entry in builtin_catalog():
        benchmark = next(b for b in catalog.benchmarks.values() if b.name == entry.name)
        assert [s.slug for s in benchmark.subsets] == [s.slug for s in entry.subsets]
        for source, subset in zip(entry.subsets, benchmark.subsets, strict=True):
            jsonl = rows_to_jsonl(source.load_rows())
            assert subset.jsonl == jsonl
            assert subset.subset_id == f"sub_{fingerprint12(jsonl)}"
            pinned = PINNED_SUBSET_IDS.get((benchmark.name, subset.slug))
            assert pinned in (None, subset.subset_id)
    assert len(catalog.subsets) == 1 + 1 + 58 + 4 + 1


def test_subset_ids_are_stable_across_builds(catalog: Catalog) -> None:
    again = load_builtin_catalog()
    assert list(again.subsets) == list(catalog.subsets)
    assert list(again.impls) == list(catalog.impls)


def test_listing_shows_every_benchmark_subset_and_impl(app: RegistryApplication) -> None:
    listing = app.list_catalog(ListCatalog(account="acct_x"))
    assert listing.problem is None
    by_name = {b.name: b for b in listing.benchmarks}
    assert list(by_name) == ["GSM8K", "HumanEval", "MMLU", "BFCL", "Natural Questions (open)"]
    assert "gsm-8k" in by_name["GSM8K"].aliases
    assert by_name["BFCL"].category == "tool-use" and "function-calling" in by_name["BFCL"].tags

    gsm8k = by_name["GSM8K"].subsets[0]
    assert (gsm8k.slug, gsm8k.task_count, gsm8k.categories) == ("test", 1319, [])
    assert gsm8k.official_impl_id is not None
    assert gsm8k.official_impl_id.startswith(by_name["GSM8K"].benchmark_id + ":")

    mmlu = by_name["MMLU"].subsets
    assert len(mmlu) == 58
    assert (mmlu[0].slug, mmlu[0].task_count) == ("all", 14042)
    assert len(mmlu[0].categories) == 57
    assert mmlu[0].categories[:2] == ["abstract_algebra", "anatomy"]
    assert sum(s.task_count for s in mmlu[1:]) == 14042
    assert all(s.categories == [s.slug] for s in mmlu[1:])

    bfcl = by_name["BFCL"].subsets
    assert {s.slug: s.task_count for s in bfcl} == {
        "simple": 400,
        "multiple": 200,
        "parallel": 200,
        "parallel_multiple": 200,
    }
    assert all(s.categories == [s.slug] for s in bfcl)

    (nq,) = by_name["Natural Questions (open)"].subsets
    assert (nq.slug, nq.task_count, nq.categories) == ("validation", 1000, [])
    for name in ("MMLU", "BFCL", "Natural Questions (open)"):
        assert all(s.official_impl_id is None for s in by_name[name].subsets)
    for entry in listing.benchmarks:
        for subset in entry.subsets:
            assert subset.subset_id == PINNED_SUBSET_IDS.get(
                (entry.name, subset.slug), subset.subset_id
            )


@pytest.mark.parametrize(
    ("asked", "name", "slug"),
    [
        ("mmlu", "MMLU", "all"),
        ("Massive Multitask Language Understanding", "MMLU", "all"),
        ("BFCL", "BFCL", "simple"),
        ("bfcl v4", "BFCL", "simple"),
        ("Berkeley Function Calling", "BFCL", "simple"),
        ("  function calling ", "BFCL", "simple"),
        ("Natural Questions (open)", "Natural Questions (open)", "validation"),
        ("nq", "Natural Questions (open)", "validation"),
        ("NQ-Open", "Natural Questions (open)", "validation"),
        ("naturalqs", "Natural Questions (open)", "validation"),
        ("natural questions", "Natural Questions (open)", "validation"),
        ("gsm-8k", "GSM8K", "test"),
        ("Grade School Math", "GSM8K", "test"),
        ("openai humaneval", "HumanEval", "test"),
        ("human eval", "HumanEval", "test"),
    ],
)
def test_names_and_aliases_resolve(
    app: RegistryApplication, asked: str, name: str, slug: str
) -> None:
    answer = app.resolve(ResolveBenchmark(account="a", benchmark=asked))
    assert answer.problem is None
    assert (answer.benchmark_name, answer.subset_slug) == (name, slug)


def test_resolution_by_id_and_subset(app: RegistryApplication, catalog: Catalog) -> None:
    mmlu = next(b for b in catalog.benchmarks.values() if b.name == "MMLU")
    query = ResolveBenchmark(account="a", benchmark=mmlu.benchmark_id, subset="anatomy")
    answer = app.resolve(query)
    assert answer.benchmark_name == "MMLU"
    assert (answer.subset_slug, answer.task_count) == ("anatomy", 135)
    assert answer.impl_id is None  # no built-in scorer: a Driver writes one
    by_id = app.resolve(ResolveBenchmark(account="a", benchmark="bfcl", subset=answer.subset_id))
    assert by_id.problem is not None and by_id.problem.status == 404  # MMLU's subset, not BFCL's
    parallel = app.resolve(ResolveBenchmark(account="a", benchmark="bfcl", subset="parallel"))
    assert (parallel.subset_slug, parallel.task_count) == ("parallel", 200)
    gsm8k = app.resolve(ResolveBenchmark(account="a", benchmark="gsm8k"))
    assert gsm8k.impl_id is not None


@pytest.mark.parametrize("asked", ["mmlu-pro", "bfcl v3", "nq open validation", ""])
def test_unknown_names_are_404(app: RegistryApplication, asked: str) -> None:
    answer = app.resolve(ResolveBenchmark(account="a", benchmark=asked))
    assert answer.problem is not None
    assert (answer.problem.status, answer.problem.field) == (404, "benchmark")


def test_rows_of_a_large_subset_come_in_pages(app: RegistryApplication) -> None:
    mmlu = app.resolve(ResolveBenchmark(account="a", benchmark="mmlu"))
    assert mmlu.subset_id is not None
    head = app.subset_rows(GetSubsetRows(subset_id=mmlu.subset_id, limit=0))
    assert (head.total, head.rows) == (14042, [])
    assert head.object_name == f"{mmlu.subset_id}.jsonl"
    tail = app.subset_rows(GetSubsetRows(subset_id=mmlu.subset_id, offset=14000, limit=100))
    assert len(tail.rows) == 42
    assert tail.rows[-1]["task_id"] == "mmlu/world_religions/test/170"
    assert tail.rows[-1]["category"] == "world_religions"


def test_row_categories_keep_first_seen_order() -> None:
    rows = [{"category": "b"}, {"category": "a"}, {"category": "b"}, {}, {"category": 3}]
    assert row_categories(rows) == ("b", "a")
    assert row_categories([{"task_id": "x"}]) == ()
    subset = make_subset("bm_x", "s", "S", rows, [])
    assert (subset.categories, subset.impls) == (("b", "a"), ())


def test_an_alias_may_not_name_two_benchmarks() -> None:
    one = make_benchmark("One", "", "", (), "", aliases=("shared",))
    two = make_benchmark("Two", "", "", (), "", aliases=("SHARED",))
    with pytest.raises(ValueError, match="'shared' names both One and Two"):
        Catalog([one, two])
    assert Catalog([one]).benchmarks  # an alias equal to the name is fine
    own = make_benchmark("Three", "", "", (), "", aliases=("three",))
    assert Catalog([own])


def test_a_benchmark_found_by_alias_without_subsets_is_409() -> None:
    bare = make_benchmark("Bare", "", "", (), "", aliases=("b",))
    with pytest.raises(ResolutionError) as caught:
        Catalog([bare]).resolve("B")
    assert caught.value.status == 409
