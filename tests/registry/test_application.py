"""The registry application over the real built-in catalog: listing, resolution, rows."""

import pytest

from benchwright_registry.application import RegistryApplication, load_builtin_catalog
from benchwright_registry.catalog import builtin_catalog
from benchwright_registry.domain import (
    Catalog,
    make_benchmark,
    make_subset,
    row_categories,
    rows_to_jsonl,
)
from benchwright_shared.contracts import GetSubsetRows, ListCatalog, ResolveBenchmark
from benchwright_shared.hashing import fingerprint12
from benchwright_shared.ids import benchmark_id_for
from benchwright_shared.refusal import Refused

# Subset ids are hashes of the rows: the same on every install of the same packages.
# HumanEval's and BFCL v4's moved once, with their rows' shapes (decision 0028).
PINNED_SUBSET_IDS = {
    ("GSM8K", "test"): "sub_54bb53a2cda5",
    ("HumanEval", "test"): "sub_f0c789585c3c",
    ("MMLU", "all"): "sub_d4c715a9a184",
    ("MMLU", "abstract_algebra"): "sub_dc7d96093405",
    ("BFCL v4", "simple"): "sub_ac8b4d46ccbe",
    ("BFCL v4", "multiple"): "sub_9d0cbce084d0",
    ("Natural Questions (open)", "validation"): "sub_34cbc18fd30f",
}
# The built-in scorers' impl ids (hashes of benchwright_shared/scorers/{math,code}.py):
# an edit to either file moves them, which decision 0028 says is to be done on purpose.
PINNED_IMPL_IDS = {
    ("GSM8K", "test"): "bm_449a7104-b8a8-5428-9f54-5edd32729755:f46661a459ae",
    ("HumanEval", "test"): "bm_7acfe476-40d3-5cd7-aa58-261e010aedf6:fb73696827e1",
}
# The ids they had before: retired, still served to the runs made against them.
RETIRED_SUBSET_IDS = {
    ("HumanEval", "test"): "sub_efbb547c5fe7",
    ("BFCL v4", "simple"): "sub_01431d680cec",
    ("BFCL v4", "multiple"): "sub_8fa6aa3cd3f1",
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
    for (name, slug), impl_id in PINNED_IMPL_IDS.items():
        benchmark = next(b for b in catalog.benchmarks.values() if b.name == name)
        subset = next(s for s in benchmark.subsets if s.slug == slug)
        assert [i.impl_id for i in subset.impls] == [impl_id]
    current = 1 + 1 + 58 + 4 + 1
    retired = 1 + 4  # HumanEval's and BFCL's rows as the catalog shaped them before 0028
    assert len(catalog.subsets) == current + retired


def test_retired_subsets_keep_their_ids_and_rows_but_resolve_no_launch(
    app: RegistryApplication, catalog: Catalog
) -> None:
    retired = {s.subset_id: s for s in catalog.subsets.values() if s.retired}
    assert set(RETIRED_SUBSET_IDS.values()) <= set(retired)
    assert len(retired) == 5
    for (name, slug), old_id in RETIRED_SUBSET_IDS.items():
        benchmark = next(b for b in catalog.benchmarks.values() if b.name == name)
        assert old_id not in {s.subset_id for s in benchmark.subsets}
        assert retired[old_id].benchmark_id == benchmark.benchmark_id
        assert retired[old_id].slug == slug and retired[old_id].impls == ()
        # A launch naming the old id is refused; its rows (a run's payloads) are served.
        with pytest.raises(Refused) as pinned:
            app.resolve(ResolveBenchmark(account="a", benchmark=name, subset=old_id))
        assert pinned.value.status == 404
        page = app.subset_rows(GetSubsetRows(subset_id=old_id, limit=1))
        assert page.problem is None and page.object_name == f"{old_id}.jsonl"
        assert page.content_sha256 == retired[old_id].content_sha256
    (humaneval,) = app.subset_rows(
        GetSubsetRows(subset_id=RETIRED_SUBSET_IDS["HumanEval", "test"], limit=1)
    ).rows
    assert set(humaneval["input"]) == {"prompt", "entry_point"} and humaneval["expected"]["test"]
    (bfcl,) = app.subset_rows(
        GetSubsetRows(subset_id=RETIRED_SUBSET_IDS["BFCL v4", "simple"], limit=1)
    ).rows
    assert set(bfcl["input"]) == {"question", "function"}
    assert bfcl["input"]["question"][0][0]["role"] == "user"


def test_bfcl_v4_keeps_the_id_it_had_as_bfcl(catalog: Catalog) -> None:
    bfcl = next(b for b in catalog.benchmarks.values() if b.name == "BFCL v4")
    assert bfcl.benchmark_id == benchmark_id_for("BFCL")


def test_subset_ids_are_stable_across_builds(catalog: Catalog) -> None:
    again = load_builtin_catalog()
    assert list(again.subsets) == list(catalog.subsets)
    assert list(again.impls) == list(catalog.impls)


def test_listing_shows_every_benchmark_subset_and_impl(app: RegistryApplication) -> None:
    listing = app.list_catalog(ListCatalog(account="acct_x"))
    assert listing.problem is None
    by_name = {b.name: b for b in listing.benchmarks}
    assert list(by_name) == ["GSM8K", "HumanEval", "MMLU", "BFCL v4", "Natural Questions (open)"]
    assert "gsm-8k" in by_name["GSM8K"].aliases
    bfcl_entry = by_name["BFCL v4"]
    assert bfcl_entry.category == "tool-use" and "function-calling" in bfcl_entry.tags

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

    bfcl = by_name["BFCL v4"].subsets
    assert {s.slug: s.task_count for s in bfcl} == {
        "simple": 400,
        "multiple": 200,
        "parallel": 200,
        "parallel_multiple": 200,
    }
    assert all(s.categories == [s.slug] for s in bfcl)

    (nq,) = by_name["Natural Questions (open)"].subsets
    assert (nq.slug, nq.task_count, nq.categories) == ("validation", 1000, [])
    for name in ("MMLU", "BFCL v4", "Natural Questions (open)"):
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
        ("BFCL", "BFCL v4", "simple"),
        ("bfcl v4", "BFCL v4", "simple"),
        ("Berkeley Function Calling", "BFCL v4", "simple"),
        ("  function calling ", "BFCL v4", "simple"),
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
    with pytest.raises(Refused) as by_id:
        app.resolve(ResolveBenchmark(account="a", benchmark="bfcl", subset=answer.subset_id))
    assert by_id.value.status == 404  # MMLU's subset, not BFCL's
    parallel = app.resolve(ResolveBenchmark(account="a", benchmark="bfcl", subset="parallel"))
    assert (parallel.subset_slug, parallel.task_count) == ("parallel", 200)
    gsm8k = app.resolve(ResolveBenchmark(account="a", benchmark="gsm8k"))
    assert gsm8k.impl_id is not None


@pytest.mark.parametrize("asked", ["mmlu-pro", "bfcl v3", "nq open validation", ""])
def test_unknown_names_are_404(app: RegistryApplication, asked: str) -> None:
    with pytest.raises(Refused) as refused:
        app.resolve(ResolveBenchmark(account="a", benchmark=asked))
    assert (refused.value.status, refused.value.field) == (404, "benchmark")


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
    with pytest.raises(Refused) as caught:
        Catalog([bare]).resolve("B")
    assert caught.value.status == 409
