"""BUILT subsets through the application, on a real store (SQLite, and PostgreSQL when
CI names it): create, read, recipe edits, sample forks, and what a pinned launch
resolves to before and after each."""

from collections.abc import Iterator
from typing import Any

import pytest

from benchwright_registry.application.build import BuildApplication
from benchwright_shared.contracts import GetImpl, GetSubsetRows, ResolveBenchmark
from benchwright_shared.contracts.build import (
    CreateBuiltSubset,
    ReadRecipe,
    UpdateRecipe,
    UpdateSamples,
)
from benchwright_shared.contracts.registry import CreateSubset
from benchwright_shared.refusal import Refused
from benchwright_shared.settings import Settings
from tests.registry.test_authoring_application import (
    ALICE,
    BOB,
    Registry,
    builtin_catalog,
    new_benchmark,
)
from tests.registry.test_authoring_application import settings as settings

SUMS = [
    {"task_id": f"sum-{a}-{b}", "input": {"a": a, "b": b}, "expected": str(a + b)}
    for a, b in [(2, 3), (7, 5), (13, 29)]
]
RECIPE = {"prompt_template": "What is {input.a} + {input.b}?", "extraction": "last_number"}


@pytest.fixture
def registry(settings: Settings) -> Iterator[Registry]:
    made = Registry(settings, builtin_catalog())
    yield made
    made.close()


def build(r: Registry) -> BuildApplication:
    assert r.app.build is not None
    return r.app.build


def create(r: Registry, bm: str, **fields: Any) -> Any:
    body: dict[str, Any] = {"slug": "sums", "recipe": RECIPE, "note": "first cut", **fields}
    tasks = body.pop("tasks", SUMS)
    return build(r).create(CreateBuiltSubset(account=ALICE, benchmark_id=bm, **body), tasks)


def resolve(r: Registry, bm: str, subset: str | None = None, account: str = ALICE) -> Any:
    return r.app.resolve(ResolveBenchmark(account=account, benchmark=bm, subset=subset))


def refusal(call: Any) -> Refused:
    with pytest.raises(Refused) as exc:
        call()
    return exc.value


def test_create_read_and_resolve(registry: Registry) -> None:
    bm = new_benchmark(registry)
    view, created = create(registry, bm, name="Three sums")
    assert created and view.subset_id.startswith("sub_") and view.slug == "sums"
    assert view.impl_id.startswith(f"{view.subset_id}:") and view.task_count == 3
    assert view.config["run_timeout"] == 300 and view.config["extraction"] == "last_number"
    assert [(h.kind, h.note) for h in view.history] == [("created", "first cut")]
    # The same request again is the same subset; another recipe for it is a 409.
    again, created = create(registry, bm, name="Three sums")
    assert not created and again.impl_id == view.impl_id
    differs = refusal(lambda: create(registry, bm, recipe={**RECIPE, "trials": 2}))
    assert (differs.status, differs.code) == (409, "recipe_differs")

    # Readable by slug and by id; the generated code is an impl like any other.
    assert build(registry).read(ReadRecipe(account=ALICE, subset="sums")) == view
    assert build(registry).read(ReadRecipe(account=ALICE, subset=view.subset_id)) == view
    impl, code = registry.authoring.impl(ALICE, view.impl_id)
    assert impl.subset_id == view.subset_id and "RECIPE = {" in code
    assert registry.app.impl(GetImpl(impl_id=view.impl_id)).code == code

    found = resolve(registry, bm)
    assert (found.subset_id, found.impl_id) == (view.subset_id, view.impl_id)
    assert found.default_trials == {"plan": {"k": 1}, "aggregator": {"name": "any_pass"}}
    assert found.task_timeout_s == 300.0
    assert resolve(registry, bm, "sums").impl_id == view.impl_id

    # Refusals name what is wrong.
    bad = refusal(lambda: create(registry, bm, slug="other", recipe={"trials": 0}))
    assert (bad.status, bad.field) == (400, "config.trials")
    empty = refusal(lambda: create(registry, bm, slug="empty", tasks=[]))
    assert (empty.status, empty.field) == (400, "tasks")
    taken = refusal(lambda: create(registry, bm, tasks=SUMS[:1]))
    assert taken.code == "slug_taken"


def test_a_recipe_edit_moves_the_impl_and_keeps_the_subset(registry: Registry) -> None:
    bm = new_benchmark(registry)
    first, _ = create(registry, bm)
    edit = UpdateRecipe(
        account=ALICE, subset="sums", config={"run_timeout": 900, "trials": 3}, note="slow boot"
    )
    view, changed = build(registry).update_recipe(edit)
    assert changed and view.subset_id == first.subset_id and view.impl_id != first.impl_id
    assert view.default_trials["plan"] == {"k": 3}
    last = view.history[-1]
    assert (last.kind, last.note, last.impl_id) == ("recipe", "slow boot", view.impl_id)
    assert last.changes == {"run_timeout": [300, 900], "trials": [1, 3]}
    # The same edit again changes nothing.
    again, changed = build(registry).update_recipe(edit)
    assert not changed and again.impl_id == view.impl_id and len(again.history) == 2

    found = resolve(registry, bm)
    assert found.impl_id == view.impl_id and found.task_timeout_s == 900.0
    assert found.default_trials["plan"] == {"k": 3}
    # The old impl is still there for the runs that used it, and can still be pinned.
    assert registry.app.impl(GetImpl(impl_id=first.impl_id)).problem is None
    pinned = registry.app.resolve(ResolveBenchmark(account=ALICE, benchmark=bm, impl=first.impl_id))
    assert pinned.impl_id == first.impl_id

    # Going back to the first recipe is the first impl again: content addressed.
    back, _ = build(registry).update_recipe(
        UpdateRecipe(account=ALICE, subset="sums", config={"run_timeout": 300, "trials": 1})
    )
    assert back.impl_id == first.impl_id and len(back.history) == 3
    bad = refusal(
        lambda: build(registry).update_recipe(
            UpdateRecipe(account=ALICE, subset="sums", config={"grading": "vibes"})
        )
    )
    assert bad.field == "config.grading"


def test_a_sample_edit_forks_the_subset_and_retires_the_old_one(registry: Registry) -> None:
    bm = new_benchmark(registry)
    first, _ = create(registry, bm, recipe={**RECIPE, "trials": 2})
    fix = {**SUMS[2], "expected": "42.0"}
    view, changed = build(registry).update_samples(
        UpdateSamples(account=ALICE, subset="sums", remove=["sum-2-3"], note="q3 was wrong"),
        [fix, {"task_id": "sum-1-1", "input": {"a": 1, "b": 1}, "expected": "2"}],
    )
    assert changed and view.subset_id != first.subset_id
    assert view.predecessor_id == first.subset_id and view.task_count == 3
    assert view.config == first.config  # the recipe comes along
    assert view.impl_id.startswith(f"{view.subset_id}:")
    assert [h.kind for h in view.history] == ["created", "samples"]
    samples = view.history[-1]
    assert (samples.from_subset_id, samples.upserted, samples.removed) == (first.subset_id, 2, 1)

    old = build(registry).read(ReadRecipe(account=ALICE, subset=first.subset_id))
    assert old.retired and old.successor_id == view.subset_id
    # The slug names the new subset now; the old one no longer resolves for a launch...
    assert build(registry).read(ReadRecipe(account=ALICE, subset="sums")) == view
    found = resolve(registry, bm)
    assert (found.subset_id, found.impl_id) == (view.subset_id, view.impl_id)
    assert found.default_trials["plan"] == {"k": 2}
    retired = refusal(lambda: resolve(registry, bm, first.subset_id))
    assert (retired.status, retired.code) == (409, "subset_retired")
    assert view.subset_id in (retired.detail or "")
    # ...but keeps serving the runs that pinned it: its rows and its impl.
    rows = registry.app.subset_rows(GetSubsetRows(subset_id=first.subset_id, limit=10))
    assert [r["task_id"] for r in rows.rows] == [t["task_id"] for t in SUMS]
    assert registry.app.impl(GetImpl(impl_id=first.impl_id)).problem is None
    new_rows = registry.app.subset_rows(GetSubsetRows(subset_id=view.subset_id, limit=10))
    assert [r["task_id"] for r in new_rows.rows] == ["sum-7-5", "sum-13-29", "sum-1-1"]
    assert new_rows.rows[1]["expected"] == "42.0"

    # A retired subset takes no edits; the slug always reaches the live one.
    stale = refusal(
        lambda: build(registry).update_recipe(
            UpdateRecipe(account=ALICE, subset=first.subset_id, config={"trials": 1})
        )
    )
    assert (stale.status, stale.code) == (409, "subset_retired")
    # Rows that end as they were change nothing.
    same, changed = build(registry).update_samples(
        UpdateSamples(account=ALICE, subset="sums"), [fix]
    )
    assert not changed and same.subset_id == view.subset_id
    # Deleting the retired subset leaves the slug with the live one.
    registry.authoring.delete_subset(ALICE, first.subset_id)
    assert resolve(registry, bm, "sums").subset_id == view.subset_id


def test_the_same_rows_again_revive_the_first_subset(registry: Registry) -> None:
    bm = new_benchmark(registry)
    first, _ = create(registry, bm)
    build(registry).update_samples(
        UpdateSamples(account=ALICE, subset="sums", remove=["sum-2-3"]), []
    )
    back, changed = build(registry).update_samples(
        UpdateSamples(account=ALICE, subset="sums", note="undo"), [SUMS[0]]
    )
    # sum-2-3 comes back last, so these rows are in another order: another address.
    assert changed and back.subset_id != first.subset_id
    # Exactly the first rows, in their order, are the first subset again.
    edit = UpdateSamples(account=ALICE, subset="sums", remove=[t["task_id"] for t in SUMS[1:]])
    build(registry).update_samples(edit, [])
    restored, _ = build(registry).update_samples(
        UpdateSamples(account=ALICE, subset="sums"), SUMS[1:]
    )
    assert restored.subset_id == first.subset_id and not restored.retired
    assert resolve(registry, bm).subset_id == first.subset_id


def test_others_see_nothing_and_admins_may_edit(registry: Registry) -> None:
    bm = new_benchmark(registry)
    view, _ = create(registry, bm)
    app = build(registry)

    def missing(call: Any) -> tuple[int, str | None]:
        exc = refusal(call)
        return exc.status, exc.code

    for subset in ("sums", view.subset_id, "sub_000000000000", "nope"):
        assert missing(lambda s=subset: app.read(ReadRecipe(account=BOB, subset=s))) == (
            404,
            "not_found",
        )
        assert missing(
            lambda s=subset: app.update_recipe(
                UpdateRecipe(account=BOB, subset=s, config={"trials": 2})
            )
        ) == (404, "not_found")
        assert missing(
            lambda s=subset: app.update_samples(
                UpdateSamples(account=BOB, subset=s, remove=["sum-2-3"]), []
            )
        ) == (404, "not_found")
    # Bob's launch of Alice's benchmark is the same 404 it always was.
    assert refusal(lambda: resolve(registry, bm, account=BOB)).status == 404
    # An admin reaches it by id (a slug is looked up in the caller's own account).
    edited, changed = app.update_recipe(
        UpdateRecipe(account=BOB, admin=True, subset=view.subset_id, config={"trials": 2})
    )
    assert changed and edited.history[-1].by == BOB and edited.owner == ALICE
    assert missing(lambda: app.read(ReadRecipe(account=BOB, admin=True, subset="sums"))) == (
        404,
        "not_found",
    )
    # A subset with a hand-written scorer is not BUILT.
    registry.authoring.create_subset(
        CreateSubset(account=ALICE, benchmark_id=bm, slug="plain"), SUMS
    )
    assert missing(lambda: app.read(ReadRecipe(account=ALICE, subset="plain"))) == (
        404,
        "not_found",
    )


def test_a_slug_in_two_benchmarks_is_ambiguous(registry: Registry) -> None:
    one, two = new_benchmark(registry, name="One"), new_benchmark(registry, name="Two")
    a, _ = create(registry, one)
    b, _ = create(registry, two)
    exc = refusal(lambda: build(registry).read(ReadRecipe(account=ALICE, subset="sums")))
    assert (exc.status, exc.code) == (409, "ambiguous")
    assert a.subset_id in exc.detail and b.subset_id in exc.detail
    assert build(registry).read(ReadRecipe(account=ALICE, subset=b.subset_id)) == b
