"""The authoring application against a real store: SQLite, and PostgreSQL when CI names it."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchwright_registry.application import (
    AuthoringApplication,
    RegistryApplication,
    builtin_rows,
)
from benchwright_registry.domain import (
    Benchmark,
    Catalog,
    make_benchmark,
    make_subset,
)
from benchwright_registry.projections import CatalogProjection, RunSummariesProjection
from benchwright_shared.contracts import GetImpl, GetSubsetRows, ListCatalog, ResolveBenchmark
from benchwright_shared.contracts.registry import (
    AppendTasks,
    CreateBenchmark,
    CreateImpl,
    CreateSubset,
    ListBenchmarks,
    TasksUpload,
    UpdateBenchmark,
    UpdateImpl,
    UpdateSubset,
)
from benchwright_shared.ids import impl_id_for
from benchwright_shared.projection import ProjectionStore, ViewCursor
from benchwright_shared.refusal import Refused
from benchwright_shared.settings import Settings
from benchwright_shared.store import eventsourcing_env
from tests.conftest import machine_database_url, reset_postgres

ALICE, BOB = "acct_alice", "acct_bob"
CODE = (
    "from bench_task import BenchTask\n\n"
    "class Task(BenchTask):\n"
    "    def solve(self, index, input):\n"
    "        return self.complete(input['question'])\n\n"
    "    def score(self, index, output, expected):\n"
    "        return 1.0 if str(expected) in output else 0.0\n"
)
UPLOAD = TasksUpload(object_name="uploads/x", sha256="-", count=0)


def rows(*ids: str) -> list[dict[str, Any]]:
    return [{"task_id": i, "input": {"question": f"{i}?"}, "expected": i} for i in ids]


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    if request.param == "postgres":
        url = machine_database_url()
        if not url:
            pytest.skip("set BW_TEST_DATABASE_URL to run against PostgreSQL")
        reset_postgres(url)
        return Settings(data_dir=tmp_path, database_url=url)
    return Settings(data_dir=tmp_path)


def builtin_catalog() -> Catalog:
    bm = make_benchmark("Tiny Math", "built in", "math", ("arith",), "tests")
    sub = make_subset(bm.benchmark_id, "test", "Test", rows("1", "2"), [("exact", CODE)])
    return Catalog([Benchmark(**{**bm.__dict__, "subsets": (sub,)})])


class Registry:
    """The façade and its authored store, as the service wires them."""

    def __init__(self, settings: Settings, catalog: Catalog) -> None:
        self.views = ProjectionStore(
            settings, "registry", [RunSummariesProjection(), CatalogProjection()]
        )
        self.authoring = AuthoringApplication(
            env=eventsourcing_env(settings, "registry"), views=self.views
        )
        self.authoring.seed_catalog(builtin_rows(catalog))
        self.authoring.follow()
        self.app = RegistryApplication(catalog, self.authoring)

    def close(self) -> None:
        self.authoring.close()
        self.views.close()

    def publish_run(self, run_id: str, **ids: str) -> None:
        """A public run referencing ids (runs cannot be published yet: written directly)."""

        def write(cur: ViewCursor) -> None:
            cur.execute(
                f"INSERT INTO {cur.table('run_summaries')} (run_id, account, model, "
                "benchmark_id, subset_id, impl_id, status, visibility) "
                "VALUES (?, ?, 'm', ?, ?, ?, 'ok', 'public')",
                [run_id, ALICE, ids.get("benchmark_id"), ids.get("subset_id"), ids.get("impl_id")],
            )

        self.views.write(write)

    def unpublish_runs(self) -> None:
        self.views.write(
            lambda cur: cur.execute(
                f"UPDATE {cur.table('run_summaries')} SET visibility = 'private'"
            )
        )


@pytest.fixture
def registry(settings: Settings) -> Iterator[Registry]:
    made = Registry(settings, builtin_catalog())
    yield made
    made.close()


def new_benchmark(r: Registry, account: str = ALICE, **fields: Any) -> str:
    body = {"name": "Mine", "category": "math", "tags": ["arith"], **fields}
    view, _ = r.authoring.create_benchmark(CreateBenchmark(account=account, **body))
    return view.id


def new_subset(
    r: Registry, benchmark_id: str, task_rows: list[dict[str, Any]], **fields: Any
) -> Any:
    command = CreateSubset(account=ALICE, benchmark_id=benchmark_id, **{"slug": "v1", **fields})
    return r.authoring.create_subset(command, task_rows)


def problem(exc: pytest.ExceptionInfo[Refused]) -> tuple[int, str | None, str | None]:
    return exc.value.status, exc.value.code, exc.value.field


# -- benchmarks ----------------------------------------------------------------------------------
def test_benchmarks_are_created_read_changed_and_listed(registry: Registry) -> None:
    view, created = registry.authoring.create_benchmark(
        CreateBenchmark(
            account=ALICE,
            name="BFCL mirror",
            description="d",
            category="tool-use",
            tags=["function-calling", "parallel", "parallel"],
            idempotency_key="k1",
        )
    )
    assert created and view.id.startswith("bm_") and view.owner == ALICE
    assert view.visibility == "private" and view.tags == ["function-calling", "parallel"]
    # The same key and body: the same benchmark; another body: refused.
    again, created_again = registry.authoring.create_benchmark(
        CreateBenchmark(
            account=ALICE,
            name="BFCL mirror",
            description="d",
            category="tool-use",
            tags=["function-calling", "parallel", "parallel"],
            idempotency_key="k1",
        )
    )
    assert (again.id, created_again) == (view.id, False)
    with pytest.raises(Refused) as exc:
        registry.authoring.create_benchmark(
            CreateBenchmark(account=ALICE, name="Other", idempotency_key="k1")
        )
    assert problem(exc) == (409, "idempotency_key_reused", "Idempotency-Key")

    changed = registry.authoring.update_benchmark(
        UpdateBenchmark(account=ALICE, benchmark_id=view.id, description="better", tags=["x"])
    )
    assert (changed.description, changed.tags, changed.name) == ("better", ["x"], "BFCL mirror")
    assert registry.authoring.benchmark(ALICE, view.id).description == "better"

    listed, token = registry.authoring.list_benchmarks(ListBenchmarks(account=ALICE))
    assert token is None
    # Newest first; the built-in catalog is listed too (public, owned by no one).
    assert [(b.name, b.owner, b.visibility) for b in listed] == [
        ("BFCL mirror", ALICE, "private"),
        ("Tiny Math", None, "public"),
    ]
    assert listed[0].tags == ["x"] and listed[1].builtin and listed[1].subset_count == 1


def test_listing_filters_by_tag_sorts_and_pages(registry: Registry) -> None:
    names = ["delta", "Alpha", "charlie", "bravo", "echo"]
    for i, name in enumerate(names):
        new_benchmark(registry, name=name, tags=["even" if i % 2 == 0 else "odd"])
    new_benchmark(registry, BOB, name="bob's", tags=["even"])

    def page(**query: Any) -> tuple[list[str], str | None]:
        found, token = registry.authoring.list_benchmarks(ListBenchmarks(account=ALICE, **query))
        return [b.name for b in found], token

    assert page(tag="EVEN")[0] == ["echo", "charlie", "delta"]
    assert page(tag="odd", sort="name")[0] == ["Alpha", "bravo"]
    assert page(tag="odd", sort="created_at")[0] == ["Alpha", "bravo"]
    everything = ["Alpha", "bravo", "charlie", "delta", "echo", "Tiny Math"]
    seen: list[str] = []
    token = None
    while True:
        names_page, token = page(sort="name", limit=2, page_token=token)
        seen += names_page
        if token is None:
            break
    assert seen == everything
    assert page(sort="-name", limit=3)[0] == everything[::-1][:3]
    with pytest.raises(Refused) as exc:
        page(sort="-name", page_token=page(sort="name", limit=1)[1])
    assert problem(exc) == (400, "invalid_argument", "page_token")


# -- one account never sees another's ----------------------------------------------------------
def test_another_accounts_private_benchmark_is_not_found_like_a_missing_one(
    registry: Registry,
) -> None:
    bm = new_benchmark(registry, name="Secret Bench")
    sub, _ = new_subset(registry, bm, rows("a", "b"))
    impl, _ = registry.authoring.create_impl(
        CreateImpl(account=ALICE, subset_id=sub.id, label="v1", code=CODE)
    )
    missing_bm = "bm_00000000-0000-4000-8000-00000000dead"

    def refusal(fn: Any, *args: Any) -> tuple[int, str | None, str | None]:
        with pytest.raises(Refused) as exc:
            fn(*args)
        return problem(exc)

    a = registry.authoring
    assert refusal(a.benchmark, BOB, bm) == refusal(a.benchmark, BOB, missing_bm)
    assert refusal(a.subset, BOB, sub.id) == refusal(a.subset, BOB, "sub_000000000000")
    assert refusal(a.impl, BOB, impl.id) == refusal(a.impl, BOB, f"{missing_bm}:000000000000")
    assert refusal(a.delete_benchmark, BOB, bm)[0] == 404
    assert refusal(a.delete_subset, BOB, sub.id)[0] == 404
    assert refusal(a.delete_impl, BOB, impl.id)[0] == 404
    with pytest.raises(Refused) as exc:
        a.append_tasks(AppendTasks(account=BOB, subset_id=sub.id, tasks=UPLOAD), rows("c"))
    assert problem(exc)[0] == 404
    assert [b.name for b in a.list_benchmarks(ListBenchmarks(account=BOB))[0]] == ["Tiny Math"]

    def resolve(account: str, benchmark: str) -> Any:
        return registry.app.resolve(ResolveBenchmark(account=account, benchmark=benchmark))

    def unresolved(account: str, benchmark: str) -> Refused:
        with pytest.raises(Refused) as refused:
            resolve(account, benchmark)
        return refused.value

    theirs, nothing = unresolved(BOB, bm), unresolved(BOB, missing_bm)
    assert (theirs.status, theirs.field, theirs.title) == (404, "benchmark", "benchmark not found")
    assert (nothing.status, nothing.field, nothing.title) == (
        theirs.status,
        theirs.field,
        theirs.title,
    )
    unresolved(BOB, "Secret Bench")  # names resolve within the account
    assert resolve(ALICE, "secret bench").benchmark_id == bm
    assert [e.name for e in registry.app.list_catalog(ListCatalog(account=BOB)).benchmarks] == [
        "Tiny Math"
    ]
    assert "Secret Bench" in [
        e.name for e in registry.app.list_catalog(ListCatalog(account=ALICE)).benchmarks
    ]


# -- subsets -----------------------------------------------------------------------------------
def test_subsets_are_content_addressed_and_slugs_unique(registry: Registry) -> None:
    bm = new_benchmark(registry)
    sub, created = new_subset(
        registry, bm, rows("a", "b", "c"), name="V1", default_trials={"plan": {"k": 3}}
    )
    assert created and sub.task_count == 3 and sub.snapshot_id == sub.id and not sub.rolling
    again, created_again = new_subset(registry, bm, rows("a", "b", "c"), name="ignored")
    assert (again.id, created_again, again.name) == (sub.id, False, "V1")
    with pytest.raises(Refused) as exc:
        new_subset(registry, bm, rows("a", "b"))
    assert problem(exc) == (409, "slug_taken", "slug")
    other, _ = new_subset(registry, bm, rows("a", "b"), slug="v2")
    assert other.id != sub.id
    with pytest.raises(Refused) as exc:
        new_subset(registry, bm, [{"task_id": str(i)} for i in range(1001)], slug="big")
    assert problem(exc) == (400, "invalid_argument", "tasks")

    view, page = registry.authoring.subset(ALICE, sub.id, rows_offset=1, rows_limit=5)
    assert page == rows("b", "c") and view.default_trials == {"plan": {"k": 3}}
    detail = registry.authoring.benchmark(ALICE, bm)
    assert [s.slug for s in detail.subsets] == ["v1", "v2"] and detail.subset_count == 2

    resolved = registry.app.resolve(ResolveBenchmark(account=ALICE, benchmark=bm, subset="v1"))
    assert (resolved.subset_id, resolved.task_count, resolved.impl_id) == (sub.id, 3, None)
    assert resolved.default_trials == {"plan": {"k": 3}}
    served = registry.app.subset_rows(GetSubsetRows(subset_id=sub.id, limit=10))
    assert served.rows == rows("a", "b", "c") and served.object_name == f"{sub.id}.jsonl"
    assert served.content_sha256 == sub.content_sha256


def test_rolling_subsets_grow_by_snapshots_that_runs_pin(registry: Registry) -> None:
    bm = new_benchmark(registry)
    sub, _ = new_subset(registry, bm, [], slug="daily", rolling=True)
    assert sub.task_count == 0 and sub.rolling

    def append(task_rows: list[dict[str, Any]], key: str | None) -> Any:
        command = AppendTasks(account=ALICE, subset_id=sub.id, tasks=UPLOAD, idempotency_key=key)
        return registry.authoring.append_tasks(command, task_rows)

    day1, new = append(rows("a", "b"), "day-1")
    assert new and (day1.appended, day1.task_count) == (2, 2) and day1.snapshot_id != sub.id
    repeat, new_again = append(rows("a", "b"), "day-1")
    assert not new_again and repeat == day1
    day2, _ = append(rows("c"), "day-2")
    assert day2.task_count == 3

    view, _ = registry.authoring.subset(ALICE, sub.id)
    assert view.snapshot_id == day2.snapshot_id and view.task_count == 3
    assert [s.id for s in view.snapshots] == [sub.id, day1.snapshot_id, day2.snapshot_id]
    # The subset's id means what it holds now; a snapshot id means that snapshot.
    resolve = registry.app.resolve
    now = resolve(ResolveBenchmark(account=ALICE, benchmark=bm, subset="daily"))
    then = resolve(ResolveBenchmark(account=ALICE, benchmark=bm, subset=day1.snapshot_id))
    assert (now.subset_id, now.task_count) == (day2.snapshot_id, 3)
    assert (then.subset_id, then.task_count) == (day1.snapshot_id, 2)
    old = registry.app.subset_rows(GetSubsetRows(subset_id=day1.snapshot_id, limit=10))
    assert old.rows == rows("a", "b") and old.total == 2
    assert registry.app.subset_rows(GetSubsetRows(subset_id=day2.snapshot_id, limit=10)).total == 3
    # A snapshot id addresses the subset in the API too, with that snapshot's rows.
    assert registry.authoring.subset(ALICE, day1.snapshot_id, rows_limit=10)[1] == rows("a", "b")

    frozen = registry.authoring.update_subset(
        UpdateSubset(account=ALICE, subset_id=sub.id, rolling=False)
    )
    assert not frozen.rolling
    with pytest.raises(Refused) as exc:
        append(rows("d"), "day-3")
    assert problem(exc) == (409, "subset_frozen", "subset_id")
    with pytest.raises(Refused) as exc:
        registry.authoring.update_subset(
            UpdateSubset(account=ALICE, subset_id=sub.id, rolling=True)
        )
    assert problem(exc) == (409, "subset_frozen", "rolling")
    # The key used before the freeze still answers what it did.
    assert append(rows("a", "b"), "day-1")[0] == day1


# -- impls ---------------------------------------------------------------------------------------
def test_impls_are_immutable_and_official_is_an_admins_call(registry: Registry) -> None:
    bm = new_benchmark(registry)
    sub, _ = new_subset(registry, bm, rows("a"))
    create = registry.authoring.create_impl
    v1, created = create(CreateImpl(account=ALICE, subset_id=sub.id, label="v1", code=CODE))
    assert created and v1.id == impl_id_for(bm, CODE) and v1.subset_id == sub.id
    assert not v1.official and v1.benchmark_id == bm
    same, created_again = create(CreateImpl(account=ALICE, benchmark_id=bm, label="x", code=CODE))
    assert (same.id, created_again, same.label) == (v1.id, False, "v1")
    view, code = registry.authoring.impl(ALICE, v1.id)
    assert code == CODE and view.sha256 == v1.sha256
    assert registry.app.impl(GetImpl(impl_id=v1.id)).code == CODE

    with pytest.raises(Refused) as exc:
        create(CreateImpl(account=ALICE, subset_id=sub.id, code=CODE + "\n#2", official=True))
    assert problem(exc) == (403, "admin_only", "official")
    with pytest.raises(Refused) as exc:
        registry.authoring.update_impl(UpdateImpl(account=ALICE, impl_id=v1.id, official=True))
    assert problem(exc) == (403, "admin_only", "official")
    with pytest.raises(Refused) as exc:
        create(CreateImpl(account=ALICE, subset_id=sub.id, code="def (:"))
    assert problem(exc) == (400, "invalid_argument", "code")

    resolve = registry.app.resolve
    with pytest.raises(Refused) as none_yet:
        resolve(ResolveBenchmark(account=ALICE, benchmark=bm, impl="latest:official"))
    assert none_yet.value.field == "impl"
    v2, _ = create(
        CreateImpl(account=ALICE, admin=True, subset_id=sub.id, code=CODE + "\n#2", official=True)
    )
    v3, _ = create(CreateImpl(account=ALICE, subset_id=sub.id, label="v3", code=CODE + "\n#3"))
    assert v2.official and not v3.official
    latest = resolve(ResolveBenchmark(account=ALICE, benchmark=bm, impl="latest:official"))
    assert latest.impl_id == v2.id
    # Without an impl, a pin runs the latest official one.
    assert resolve(ResolveBenchmark(account=ALICE, benchmark=bm)).impl_id == v2.id
    promoted = registry.authoring.update_impl(
        UpdateImpl(account=ALICE, admin=True, impl_id=v3.id, official=True, label="v3 final")
    )
    assert promoted.official and promoted.label == "v3 final"
    latest = resolve(ResolveBenchmark(account=ALICE, benchmark=bm, impl="latest:official"))
    assert latest.impl_id == v3.id
    assert resolve(ResolveBenchmark(account=ALICE, benchmark=bm, impl=v1.id)).impl_id == v1.id
    with pytest.raises(Refused) as other:
        resolve(ResolveBenchmark(account=ALICE, benchmark=bm, impl="bm_x:000000000000"))
    assert other.value.field == "impl"


def test_a_subsets_grader_runs_when_a_pin_names_no_impl(registry: Registry) -> None:
    bm = new_benchmark(registry)
    sub, _ = new_subset(registry, bm, rows("a"), grader={"code": CODE, "label": "exact"})
    assert sub.grader_impl_id == impl_id_for(bm, CODE)
    grader, code = registry.authoring.impl(ALICE, sub.grader_impl_id)
    assert code == CODE and grader.label == "exact" and not grader.official
    pinned = registry.app.resolve(ResolveBenchmark(account=ALICE, benchmark=bm))
    assert pinned.impl_id == sub.grader_impl_id
    with pytest.raises(Refused) as exc:
        new_subset(registry, bm, rows("b"), slug="v2", grader={"code": "oops("})
    assert problem(exc)[2] == "grader.code"


# -- deletes ---------------------------------------------------------------------------------
def test_deletes_are_refused_while_public_runs_reference_them(registry: Registry) -> None:
    bm = new_benchmark(registry)
    sub, _ = new_subset(registry, bm, [], rolling=True)
    appended, _ = registry.authoring.append_tasks(
        AppendTasks(account=ALICE, subset_id=sub.id, tasks=UPLOAD), rows("a")
    )
    impl, _ = registry.authoring.create_impl(CreateImpl(account=ALICE, subset_id=sub.id, code=CODE))
    # A public run pinned the appended snapshot with the impl.
    registry.publish_run("run-1", benchmark_id=bm, subset_id=appended.snapshot_id, impl_id=impl.id)
    assert registry.authoring.benchmark(ALICE, bm).visibility == "public"
    # Public: another account sees it now.
    assert registry.authoring.benchmark(BOB, bm).subsets[0].id == sub.id
    for delete, ident in (
        (registry.authoring.delete_impl, impl.id),
        (registry.authoring.delete_subset, sub.id),
        (registry.authoring.delete_benchmark, bm),
    ):
        with pytest.raises(Refused) as exc:
            delete(ALICE, ident)
        assert problem(exc)[:2] == (409, "referenced_by_public_runs")
        with pytest.raises(Refused) as exc:
            delete(BOB, ident)  # seeing is not owning
        assert problem(exc)[0] == 404

    registry.unpublish_runs()
    registry.authoring.delete_impl(ALICE, impl.id)
    with pytest.raises(Refused):
        registry.authoring.impl(ALICE, impl.id)
    # A run that pinned the impl still gets its code.
    assert registry.app.impl(GetImpl(impl_id=impl.id)).code == CODE
    registry.authoring.delete_subset(ALICE, sub.id)
    assert registry.authoring.benchmark(ALICE, bm).subsets == []
    assert registry.app.subset_rows(GetSubsetRows(subset_id=appended.snapshot_id)).total == 1
    with pytest.raises(Refused) as gone:
        registry.app.resolve(ResolveBenchmark(account=ALICE, benchmark=bm))
    assert gone.value.status == 409  # no subsets left
    registry.authoring.delete_benchmark(ALICE, bm)
    with pytest.raises(Refused) as exc:
        registry.authoring.benchmark(ALICE, bm)
    assert problem(exc)[0] == 404
    assert bm not in [
        b.id for b in registry.authoring.list_benchmarks(ListBenchmarks(account=ALICE))[0]
    ]
    # The same code registered again after a delete is the same impl, back.
    other = new_benchmark(registry)
    back, created = registry.authoring.create_impl(
        CreateImpl(account=ALICE, benchmark_id=other, code=CODE)
    )
    assert created and back.id == impl_id_for(other, CODE)


# -- durability ------------------------------------------------------------------------------
def test_everything_survives_a_restart_and_the_catalog_rebuilds_the_same(
    settings: Settings,
) -> None:
    first = Registry(settings, builtin_catalog())
    bm = new_benchmark(first, name="Durable")
    sub, _ = new_subset(first, bm, rows("a", "b"))
    first.authoring.create_impl(CreateImpl(account=ALICE, subset_id=sub.id, code=CODE))
    first.authoring.update_benchmark(UpdateBenchmark(account=ALICE, benchmark_id=bm, name="Kept"))
    digest = first.views.digest(CatalogProjection.name)
    first.close()

    second = Registry(settings, builtin_catalog())
    try:
        detail = second.authoring.benchmark(ALICE, bm)
        assert (detail.name, detail.subset_count, detail.impl_count) == ("Kept", 1, 1)
        assert second.views.digest(CatalogProjection.name) == digest
        applied = second.authoring.rebuild_catalog(builtin_rows(builtin_catalog()))
        assert applied > 0 and second.views.digest(CatalogProjection.name) == digest
        listed = second.authoring.list_benchmarks(ListBenchmarks(account=ALICE))[0]
        assert (listed[0].name, listed[0].subset_count, listed[0].impl_count) == ("Kept", 1, 1)
    finally:
        second.close()


def test_the_builtin_catalog_reads_like_any_benchmark_but_takes_no_writes(
    registry: Registry,
) -> None:
    builtin = registry.app.catalog.find("Tiny Math")
    assert builtin is not None
    view = registry.app.builtin_benchmark(builtin.benchmark_id)
    assert view is not None and view.builtin and view.visibility == "public" and view.owner is None
    subset = view.subsets[0]
    assert subset.grader_impl_id == view.impls[0].id and view.impls[0].official
    found = registry.app.builtin_impl(view.impls[0].id)
    assert found is not None and found[1] == CODE
    with pytest.raises(Refused) as exc:
        registry.authoring.delete_benchmark(ALICE, builtin.benchmark_id)
    assert problem(exc)[0] == 404
    with pytest.raises(Refused) as exc:
        registry.authoring.create_impl(
            CreateImpl(account=ALICE, benchmark_id=builtin.benchmark_id, code=CODE)
        )
    assert problem(exc)[0] == 404


def test_a_second_process_lists_what_the_first_stored_once_it_follows(
    settings: Settings,
) -> None:
    """Two registry processes share the store and the views; each follows the log."""
    first, second = Registry(settings, builtin_catalog()), Registry(settings, builtin_catalog())
    try:
        bm = new_benchmark(first, name="Seen by both")
        # Reads of aggregates see it at once; the listing once the catalog view follows.
        assert second.authoring.benchmark(ALICE, bm).name == "Seen by both"
        assert second.authoring.follow() == 0  # the first process already applied it
        listed = second.authoring.list_benchmarks(ListBenchmarks(account=ALICE))[0]
        assert bm in [b.id for b in listed]
        second.authoring.update_benchmark(
            UpdateBenchmark(account=ALICE, benchmark_id=bm, name="Renamed by the second")
        )
        first.authoring.follow()
        listed = first.authoring.list_benchmarks(ListBenchmarks(account=ALICE, sort="name"))[0]
        assert "Renamed by the second" in [b.name for b in listed]
    finally:
        first.close()
        second.close()


def test_a_harbor_dataset_resolves_as_an_agentic_subset(registry: Registry) -> None:
    bm = new_benchmark(registry)
    task = {"task.toml": "", "instruction.md": "Do it.", "tests/test.sh": "exit 0"}
    new_subset(registry, bm, rows("a"))
    new_subset(registry, bm, [{"task_id": "t", "input": {"harbor_files": task}}], slug="agents")
    resolve = registry.app.resolve
    assert not resolve(ResolveBenchmark(account=ALICE, benchmark=bm, subset="v1")).agentic
    assert resolve(ResolveBenchmark(account=ALICE, benchmark=bm, subset="agents")).agentic
