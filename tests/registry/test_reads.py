"""Reads over runs: the run views fed with run-log messages, then the registry's answers
(leaderboards, listings, comparisons, task ranges, impls from runs, the phase-cache
index) against a real store: SQLite, and PostgreSQL when CI names it."""

import itertools
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from benchwright_registry.application import AuthoringApplication, RegistryApplication, builtin_rows
from benchwright_registry.domain import (
    Benchmark,
    Catalog,
    make_benchmark,
    make_subset,
)
from benchwright_registry.projections import (
    CatalogProjection,
    PhaseCellsProjection,
    RunSummariesProjection,
)
from benchwright_shared.contracts.registry import (
    AppendTasks,
    CreateBenchmark,
    CreateImpl,
    CreateSubset,
    ListBenchmarks,
)
from benchwright_shared.contracts.registry_reads import (
    CompareImpl,
    CreateImplFromRun,
    FindPhaseCell,
    ListRegistryRuns,
    ReadLeaderboard,
    ReadTaskRange,
)
from benchwright_shared.contracts.run_events import RunEvent
from benchwright_shared.hashing import sha256_hex
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
OTHER_CODE = CODE.replace("1.0 if", "1.0 if output and")
T0 = datetime(2026, 4, 1, tzinfo=UTC)


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
    bm = make_benchmark("Tiny Math", "built in", "math", ("arith",), "tests", ("tiny math v1",))
    sub = make_subset(
        bm.benchmark_id, "test", "Test", rows("1", "2", "3", "4", "5", "6"), [("exact", CODE)]
    )
    return Catalog([Benchmark(**{**bm.__dict__, "subsets": (sub,)})])


class Registry:
    """The registry's store and views, fed run-log messages as the service's consumers would."""

    def __init__(self, settings: Settings) -> None:
        self.catalog = builtin_catalog()
        self.views = ProjectionStore(
            settings,
            "registry",
            [RunSummariesProjection(), PhaseCellsProjection(), CatalogProjection()],
        )
        self.authoring = AuthoringApplication(
            env=eventsourcing_env(settings, "registry"), views=self.views
        )
        self.authoring.seed_catalog(builtin_rows(self.catalog))
        self.authoring.follow()
        self.app = RegistryApplication(self.catalog, self.authoring)
        self.reads = self.app.reads
        self._position = itertools.count(1)
        self._clock = itertools.count()

    @property
    def bm(self) -> str:
        return next(iter(self.catalog.benchmarks))

    @property
    def sub(self) -> str:
        return next(iter(self.catalog.subsets))

    @property
    def impl(self) -> str:
        return next(iter(self.catalog.impls))

    def close(self) -> None:
        self.authoring.close()
        self.views.close()

    def feed(self, run: str, kind: str, /, **data: Any) -> None:
        ts = (T0 + timedelta(minutes=next(self._clock))).isoformat()
        message = {"run_id": run, "seq": 0, "type": kind, "ts": ts, "data": data}
        for projection in (RunSummariesProjection.name, PhaseCellsProjection.name):
            self.views.apply(projection, next(self._position), message)

    def run(
        self,
        account: str,
        model: str,
        outcomes: str,
        *,
        benchmark: str | None = None,
        subset: str | None = None,
        impl: str | None = None,
        visibility: str = "private",
        trials: dict[str, Any] | None = None,
        start: int = 0,
        code: str = CODE,
        atomize: bool = False,
        driver: str | None = None,
    ) -> str:
        """A finished run of ``model`` whose tasks ``start``.. came out as ``outcomes``
        (one letter each: p, f or e)."""
        run_id = str(uuid.uuid4())
        benchmark, subset = benchmark or self.bm, subset or self.sub
        impl = impl or self.impl
        self.feed(
            run_id,
            "RunLaunched",
            run_id=run_id,
            account=account,
            mode="pinned",
            benchmark_id=benchmark,
            subset_id=subset,
            impl_id=None if atomize else impl,
            sut={"model": model, "provider": "fake"},
            trials=trials,
        )
        if driver is not None:
            self.feed(run_id, "DriverSelected", driver=driver)
        self.feed(
            run_id,
            "DatasetTasksArtifact",
            benchmark_id=benchmark,
            subset_id=subset,
            total_tasks=6,
            selected_tasks=len(outcomes),
            content_sha256="x",
            selection={"kind": "all"},
        )
        kind = "AtomizeArtifact" if atomize else "SetupArtifact"
        extra = {"kind": "exact_match"} if atomize else {}
        self.feed(run_id, kind, impl_id=impl, impl_sha256="s", code=code, **extra)
        names = {"p": "pass", "f": "fail", "e": "err"}
        for i, letter in enumerate(outcomes):
            self.feed(
                run_id,
                "MaterializeTaskAggregated",
                task_id=f"t{start + i}",
                index=start + i,
                outcome=names[letter],
            )
        passed, failed, errored = (outcomes.count(c) for c in "pfe")
        self.feed(
            run_id,
            "PipelineFinished",
            status="ok",
            duration_ms=1,
            summary={
                "total": len(outcomes),
                "passed": passed,
                "failed": failed,
                "errored": errored,
                "pass_rate": passed / (passed + failed) if passed + failed else None,
            },
        )
        if visibility != "private":
            self.feed(run_id, "RunUpdated", visibility=visibility, metadata=None, updated_by="x")
        return run_id

    def rows(self, table: str) -> list[dict[str, Any]]:
        def select(cur: ViewCursor) -> list[dict[str, Any]]:
            cur.execute(f"SELECT * FROM {cur.table(table)}")
            return cur.fetchall()

        return self.views.read(select)


@pytest.fixture
def registry(settings: Settings) -> Iterator[Registry]:
    made = Registry(settings)
    yield made
    made.close()


def refused(exc: pytest.ExceptionInfo[Refused]) -> tuple[int, str | None, str | None]:
    return exc.value.status, exc.value.code, exc.value.field


def alice_subset(r: Registry, rolling: bool = False) -> tuple[str, str]:
    bm, _ = r.authoring.create_benchmark(CreateBenchmark(account=ALICE, name="Mine"))
    sub, _ = r.authoring.create_subset(
        CreateSubset(account=ALICE, benchmark_id=bm.id, slug="v1", rolling=rolling),
        rows("a", "b", "c"),
    )
    return bm.id, sub.id


# -- the views ---------------------------------------------------------------------------------
def test_a_run_is_keyed_on_its_shape_once_terminal_and_a_delete_removes_it(
    registry: Registry,
) -> None:
    run_id = str(uuid.uuid4())
    registry.feed(
        run_id,
        "RunLaunched",
        run_id=run_id,
        account=ALICE,
        benchmark_id=registry.bm,
        subset_id=registry.sub,
        impl_id=registry.impl,
        sut={"model": "m", "provider": "p"},
        trials={"plan": {"k": 3}},
    )
    registry.feed(run_id, "MaterializeTaskAggregated", task_id="t0", index=0, outcome="fail")
    registry.feed(run_id, "MaterializeTaskAggregated", task_id="t0", index=0, outcome="pass")
    (row,) = registry.rows("run_summaries")
    assert (row["benchmark_id"], row["subset_id"], row["impl_id"]) == (None, None, None)
    assert row["model"] == "p/m" and row["status"] == "running" and row["started_at"]
    # The latest aggregate of a task wins.
    assert [(r["idx"], r["outcome"]) for r in registry.rows("run_tasks")] == [(0, "pass")]
    registry.feed(
        run_id,
        "PipelineFinished",
        status="ok",
        duration_ms=5,
        summary={"total": 1, "passed": 1, "failed": 0, "errored": 0, "pass_rate": 1.0},
        fingerprint="abc",
    )
    (row,) = registry.rows("run_summaries")
    assert (row["benchmark_id"], row["subset_id"], row["impl_id"]) == (
        registry.bm,
        registry.sub,
        registry.impl,
    )
    assert (row["tasks"], row["passed"], row["fingerprint"]) == (1, 1, "abc")
    assert row["finished_at"] > row["started_at"]
    registry.feed(run_id, "RunDeleted", deleted_by=ALICE)
    assert registry.rows("run_summaries") == [] and registry.rows("run_tasks") == []


# -- leaderboards -------------------------------------------------------------------------------
def test_the_leaderboard_is_the_best_public_run_per_model(registry: Registry) -> None:
    r = registry
    best_a = r.run(ALICE, "a", "ppff", visibility="public")
    r.run(ALICE, "a", "pfff", visibility="public")
    r.run(ALICE, "a", "pppp")  # private: never on a leaderboard
    r.run(BOB, "a", "pppp", visibility="unlisted")  # nor unlisted
    best_b = r.run(BOB, "b", "ppff", impl=impl_id_for(r.bm, OTHER_CODE), visibility="public")
    top = r.run(BOB, "c", "pppf", visibility="public")
    r.run(BOB, "d", "eeee", visibility="public")  # no pass rate: does not place

    for account in (ALICE, BOB, "acct_carol"):
        board = r.reads.leaderboard(ReadLeaderboard(account=account, subset_id=r.sub))
        assert board.benchmark_id == r.bm and board.snapshot_ids == [r.sub]
        assert [(x.rank, x.model, x.pass_rate, x.run_id) for x in board.rows] == [
            (1, "fake/c", 0.75, top),
            (2, "fake/a", 0.5, best_a),
            (2, "fake/b", 0.5, best_b),
        ]
    a_row = board.rows[1]
    assert (a_row.runs, a_row.tasks, a_row.passed, a_row.impl_id) == (2, 4, 2, r.impl)
    assert board.rows[2].impl_id == impl_id_for(r.bm, OTHER_CODE)  # any of its impls


def test_a_private_benchmarks_subset_has_no_leaderboard_and_is_missing_to_others(
    registry: Registry,
) -> None:
    r = registry
    bm, sub = alice_subset(r)
    r.run(ALICE, "a", "pp", benchmark=bm, subset=sub)
    board = r.reads.leaderboard(ReadLeaderboard(account=ALICE, subset_id=sub))
    assert board.rows == [] and board.benchmark_id == bm
    for query in (
        ReadLeaderboard(account=BOB, subset_id=sub),
        ReadLeaderboard(account=BOB, subset_id="sub_" + "0" * 12),
    ):
        with pytest.raises(Refused) as exc:
            r.reads.leaderboard(query)
        assert refused(exc) == (404, "not_found", "subset_id")


def test_a_rolling_subsets_leaderboard_covers_its_snapshots(registry: Registry) -> None:
    r = registry
    bm, sub = alice_subset(r, rolling=True)
    first = r.run(ALICE, "a", "pf", benchmark=bm, subset=sub, visibility="public")
    appended, _ = r.authoring.append_tasks(
        AppendTasks(account=ALICE, subset_id=sub, tasks=_upload()), rows("d")
    )
    later = r.run(ALICE, "b", "ppp", benchmark=bm, subset=appended.snapshot_id, visibility="public")
    board = r.reads.leaderboard(ReadLeaderboard(account=BOB, subset_id=sub))
    assert set(board.snapshot_ids) == {sub, appended.snapshot_id}
    assert {(x.run_id, x.subset_id) for x in board.rows} == {
        (first, sub),
        (later, appended.snapshot_id),
    }
    # A snapshot id names just that snapshot.
    only = r.reads.leaderboard(ReadLeaderboard(account=BOB, subset_id=appended.snapshot_id))
    assert [x.run_id for x in only.rows] == [later]


def _upload() -> Any:
    from benchwright_shared.contracts.registry import TasksUpload

    return TasksUpload(object_name="uploads/x", sha256="-", count=1)


# -- listings -----------------------------------------------------------------------------------
def test_run_listings_show_your_own_runs_and_public_ones(registry: Registry) -> None:
    r = registry
    mine = r.run(ALICE, "a", "pf")
    mine_unlisted = r.run(ALICE, "a", "pp", visibility="unlisted")
    theirs_public = r.run(BOB, "b", "fp", visibility="public")
    r.run(BOB, "b", "ff", visibility="unlisted")
    r.run(BOB, "b", "ff")

    listed = r.reads.runs(ListRegistryRuns(account=ALICE, subset_id=r.sub))
    assert [x.run_id for x in listed.runs] == [theirs_public, mine_unlisted, mine]
    assert [x.mine for x in listed.runs] == [False, True, True]
    assert listed.runs[0].model == "fake/b" and listed.runs[0].pass_rate == 0.5
    by_impl = r.reads.runs(ListRegistryRuns(account=ALICE, impl_id=r.impl))
    assert [x.run_id for x in by_impl.runs] == [x.run_id for x in listed.runs]
    only_a = r.reads.runs(ListRegistryRuns(account=ALICE, subset_id=r.sub, model="fake/a"))
    assert [x.run_id for x in only_a.runs] == [mine_unlisted, mine]

    # Pages: newest first, a token to go on, the same rows in the end.
    seen: list[str] = []
    token = None
    while True:
        page = r.reads.runs(
            ListRegistryRuns(account=ALICE, subset_id=r.sub, limit=2, page_token=token)
        )
        seen += [x.run_id for x in page.runs]
        token = page.next_page_token
        if token is None:
            break
    assert seen == [x.run_id for x in listed.runs]
    with pytest.raises(Refused) as exc:
        r.reads.runs(ListRegistryRuns(account=ALICE, subset_id=r.sub, page_token="nonsense"))
    assert refused(exc) == (400, "invalid_argument", "page_token")


def test_an_impl_a_pipeline_wrote_lists_by_its_visible_runs(registry: Registry) -> None:
    r = registry
    written = impl_id_for(r.bm, OTHER_CODE)  # Atomize's: never registered
    run_id = r.run(ALICE, "a", "pp", impl=written, atomize=True)
    assert [
        x.run_id for x in r.reads.runs(ListRegistryRuns(account=ALICE, impl_id=written)).runs
    ] == [run_id]
    with pytest.raises(Refused) as exc:
        r.reads.runs(ListRegistryRuns(account=BOB, impl_id=written))
    assert refused(exc) == (404, "not_found", "impl_id")
    r.feed(run_id, "RunUpdated", visibility="public", metadata=None, updated_by=ALICE)
    assert len(r.reads.runs(ListRegistryRuns(account=BOB, impl_id=written)).runs) == 1


# -- the same-impl comparison --------------------------------------------------------------------
def test_the_comparison_puts_one_impls_runs_side_by_side_by_model(registry: Registry) -> None:
    r = registry
    a1 = r.run(ALICE, "a", "pfff")
    a2 = r.run(ALICE, "a", "ppff")
    b1 = r.run(BOB, "b", "pppf", visibility="public")
    r.run(BOB, "b", "pppp")  # bob's private run: not alice's to see
    k3 = r.run(ALICE, "a", "pppp", trials={"plan": {"k": 3}, "aggregator": {"name": "any_pass"}})
    r.run(ALICE, "a", "pppp", impl=impl_id_for(r.bm, OTHER_CODE))  # another impl

    view = r.reads.compare(CompareImpl(account=ALICE, impl_id=r.impl))
    assert view.benchmark_id == r.bm
    shown = [
        (x.model, x.trials is None, x.runs, x.best_pass_rate, x.best_run_id) for x in view.rows
    ]
    assert shown == [
        ("fake/b", True, 1, 0.75, b1),
        ("fake/a", True, 2, 0.5, a2),
        ("fake/a", False, 1, 1.0, k3),
    ]
    a_row = view.rows[1]
    assert a_row.mean_pass_rate == pytest.approx(0.375)
    assert (a_row.latest_run_id, a_row.run_ids) == (a2, [a2, a1])
    assert view.rows[2].trials == {"plan": {"k": 3}, "aggregator": {"name": "any_pass"}}


# -- task ranges ---------------------------------------------------------------------------------
def test_a_task_range_finds_the_runs_with_results_there(registry: Registry) -> None:
    r = registry
    head = r.run(ALICE, "a", "pfe")  # tasks 0-2
    tail = r.run(ALICE, "b", "ppp", start=3)  # tasks 3-5
    everything = r.run(BOB, "c", "pfpfpf", visibility="public")
    r.run(BOB, "d", "pppppp")  # private to bob

    found = r.reads.task_range(ReadTaskRange(account=ALICE, benchmark_id=r.bm, start=0, end=3))
    assert [x.run_id for x in found.runs] == [everything, head]
    by_id = {x.run_id: x for x in found.runs}
    assert (by_id[head].covered, by_id[head].complete) == (3, True)
    assert by_id[head].outcomes == {"0": "pass", "1": "fail", "2": "err"}
    assert (by_id[head].range_passed, by_id[head].range_pass_rate) == (1, 0.5)
    assert by_id[everything].outcomes == {"0": "pass", "1": "fail", "2": "pass"}

    found = r.reads.task_range(ReadTaskRange(account=ALICE, benchmark_id=r.bm, start=2, end=5))
    by_id = {x.run_id: x for x in found.runs}
    assert set(by_id) == {everything, head, tail}
    assert (by_id[head].covered, by_id[head].complete) == (1, False)
    assert (by_id[tail].covered, by_id[tail].outcomes) == (2, {"3": "pass", "4": "pass"})
    # Past the subset's end, complete means every index the subset holds.
    found = r.reads.task_range(ReadTaskRange(account=ALICE, benchmark_id=r.bm, start=3, end=50))
    assert {x.run_id: x.complete for x in found.runs} == {everything: True, tail: True}
    assert (
        r.reads.task_range(ReadTaskRange(account=ALICE, benchmark_id=r.bm, start=6, end=9)).runs
        == []
    )

    for start, end, field in ((-1, 2, "start"), (3, 3, "end"), (0, 5000, "end")):
        with pytest.raises(Refused) as exc:
            r.reads.task_range(
                ReadTaskRange(account=ALICE, benchmark_id=r.bm, start=start, end=end)
            )
        assert refused(exc) == (400, "invalid_argument", field)
    bm, _ = alice_subset(r)
    with pytest.raises(Refused) as exc:
        r.reads.task_range(ReadTaskRange(account=BOB, benchmark_id=bm, start=0, end=3))
    assert refused(exc) == (404, "not_found", "benchmark_id")


# -- impls from runs -----------------------------------------------------------------------------
def log_of(r: Registry, run_id: str, account: str, code: str | None) -> list[RunEvent]:
    events = [
        RunEvent(run_id=run_id, seq=0, type="RunLaunched", ts=T0, data={"account": account}),
        RunEvent(run_id=run_id, seq=5, type="SetupArtifact", ts=T0, data={"impl_id": None}),
    ]
    if code is not None:
        events.append(
            RunEvent(
                run_id=run_id,
                seq=9,
                type="AtomizeArtifact",
                ts=T0,
                data={"impl_id": "bm_x:abc", "code": code},
            )
        )
    return events


def test_an_impl_from_a_run_is_the_runs_scorer_registered_content_addressed(
    registry: Registry,
) -> None:
    r = registry
    bm, sub = alice_subset(r)
    run_id = str(uuid.uuid4())
    command = CreateImplFromRun(account=ALICE, run_id=run_id, subset_id=sub, label="inherited")
    view, created = r.reads.impl_from_run(command, log_of(r, run_id, ALICE, OTHER_CODE))
    assert created and view.id == impl_id_for(bm, OTHER_CODE) and view.subset_id == sub
    assert view.label == "inherited" and "bm_x:abc" in view.description
    assert r.authoring.impl(ALICE, view.id)[1] == OTHER_CODE
    again, created = r.reads.impl_from_run(command, log_of(r, run_id, ALICE, OTHER_CODE))
    assert (again.id, created) == (view.id, False)

    # Another account's run reads as missing; so does no run at all.
    for events in (log_of(r, run_id, BOB, OTHER_CODE), []):
        with pytest.raises(Refused) as exc:
            r.reads.impl_from_run(command, events)
        assert refused(exc) == (404, "not_found", "from_run")
    with pytest.raises(Refused) as exc:
        r.reads.impl_from_run(command, log_of(r, run_id, ALICE, None))
    assert refused(exc) == (409, "no_scorer", "from_run")
    # The target must be the caller's, like impls.create.
    with pytest.raises(Refused) as exc:
        r.reads.impl_from_run(
            CreateImplFromRun(account=BOB, run_id=run_id, subset_id=sub),
            log_of(r, run_id, BOB, OTHER_CODE),
        )
    assert refused(exc) == (404, "not_found", "subset_id")


# -- the phase-cache index ------------------------------------------------------------------------
def cell(r: Registry, run_id: str, account: str, phase: str, fingerprint: str) -> None:
    r.feed(run_id, "RunLaunched", run_id=run_id, account=account)
    r.feed(run_id, "PhaseFingerprint", phase=phase, fingerprint=fingerprint, cache_hit=False)


def test_the_phase_cache_offers_own_cells_first_then_public_ones(registry: Registry) -> None:
    r = registry

    def find(account: str, fingerprint: str = "f1", phase: str = "fetch") -> tuple[Any, bool]:
        found = r.reads.phase_cell(
            FindPhaseCell(account=account, phase=phase, fingerprint=fingerprint)
        )
        return found.run_id, found.public

    bobs = str(uuid.uuid4())
    cell(r, bobs, BOB, "fetch", "f1")
    assert find(ALICE) == (None, False)  # bob's run is private
    r.feed(bobs, "RunUpdated", visibility="public", metadata=None, updated_by=BOB)
    assert find(ALICE) == (bobs, True)
    assert find(ALICE, phase="setup") == (None, False)
    assert find(ALICE, fingerprint="f2") == (None, False)

    alices = str(uuid.uuid4())
    cell(r, alices, ALICE, "fetch", "f1")
    assert find(ALICE) == (alices, False)  # her own first, although older ones are public
    # A hit is not a cell: a run that copied its work records nothing to copy from.
    copier = str(uuid.uuid4())
    r.feed(copier, "RunLaunched", run_id=copier, account="acct_carol")
    r.feed(copier, "PhaseFingerprint", phase="fetch", fingerprint="f1", cache_hit=True)
    assert find("acct_carol") == (bobs, True)

    r.feed(bobs, "RunUpdated", visibility="unlisted", metadata=None, updated_by=BOB)
    assert find("acct_carol") == (None, False)
    r.feed(alices, "RunDeleted", deleted_by=ALICE)
    assert find(ALICE) == (None, False)
    assert find(BOB) == (bobs, False)
    excluded = r.reads.phase_cell(
        FindPhaseCell(account=BOB, phase="fetch", fingerprint="f1", exclude_run_id=bobs)
    )
    assert excluded.run_id is None


# -- impls a pipeline wrote ---------------------------------------------------------------------
def test_an_impl_a_pipeline_wrote_reads_like_an_authored_one(registry: Registry) -> None:
    r = registry
    written = impl_id_for(r.bm, OTHER_CODE)  # Atomize's id: <benchmark>:<12 hex of the code>
    run_id = r.run(ALICE, "a", "pp", impl=written, code=OTHER_CODE, atomize=True, driver="builtin")

    view, code = r.app.read_impl(ALICE, written)
    assert code == OTHER_CODE
    assert (view.id, view.benchmark_id, view.subset_id) == (written, r.bm, r.sub)
    assert view.label == f"written by the builtin Driver for run {run_id}"
    assert "exact_match" in view.description and run_id in view.description
    assert (view.visibility, view.official, view.builtin) == ("private", False, False)
    assert view.size_bytes == len(OTHER_CODE.encode()) and view.created_at is not None
    assert view.sha256 == sha256_hex(OTHER_CODE)
    # The comparison and the listings take it like any impl.
    assert r.reads.compare(CompareImpl(account=ALICE, impl_id=written)).rows[0].best_run_id == (
        run_id
    )

    # Another account: missing until one of its runs is public.
    with pytest.raises(Refused) as exc:
        r.app.read_impl(BOB, written)
    assert refused(exc) == (404, "not_found", "impl_id")
    r.feed(run_id, "RunUpdated", visibility="public", metadata=None, updated_by=ALICE)
    shown, _ = r.app.read_impl(BOB, written)
    assert shown.visibility == "public"

    # A replay inherits the artifact: it uses the impl, the label stays the writer's.
    replay = r.run(BOB, "b", "pf", impl=written, code=OTHER_CODE, atomize=True, driver="litellm")
    assert r.app.read_impl(BOB, written)[0].label == view.label
    r.feed(run_id, "RunDeleted", deleted_by=ALICE)
    assert r.app.read_impl(BOB, written)[1] == OTHER_CODE  # bob's replay still used it
    with pytest.raises(Refused):
        r.app.read_impl(ALICE, written)
    r.feed(replay, "RunDeleted", deleted_by=BOB)
    assert r.rows("scorer_code") == [] and r.rows("run_scorers") == []
    with pytest.raises(Refused):
        r.app.read_impl(BOB, written)
    with pytest.raises(Refused) as exc:
        r.app.read_impl(ALICE, impl_id_for(r.bm, "never written"))
    assert refused(exc) == (404, "not_found", "impl_id")


def test_a_written_impl_is_content_addressed_like_an_authored_one(registry: Registry) -> None:
    r = registry
    bm, sub = alice_subset(r)
    written = impl_id_for(bm, OTHER_CODE)
    r.run(ALICE, "a", "pp", benchmark=bm, subset=sub, impl=written, code=OTHER_CODE, atomize=True)
    assert r.app.read_impl(ALICE, written)[0].label.startswith("written by a Driver")
    # The same code under the same benchmark, registered by hand, is the same impl ...
    made, created = r.authoring.create_impl(
        CreateImpl(account=ALICE, subset_id=sub, label="by hand", code=OTHER_CODE)
    )
    assert created and made.id == written
    # ... and from then on the authored store answers for it, deletes included.
    assert r.app.read_impl(ALICE, written)[0].label == "by hand"
    r.authoring.delete_impl(ALICE, written)
    with pytest.raises(Refused) as exc:
        r.app.read_impl(ALICE, written)
    assert refused(exc) == (404, "not_found", "impl_id")
    # A built-in impl is the catalog's, whoever's Setup installed it.
    r.run(ALICE, "a", "p")
    assert r.app.read_impl(ALICE, r.impl)[0].builtin


# -- per-kind breakdowns ------------------------------------------------------------------------
KINDS = ("math", "code", "math", "multiple_choice", "code", "math")


def composite_subset(r: Registry) -> tuple[str, str]:
    bm, _ = r.authoring.create_benchmark(CreateBenchmark(account=ALICE, name="Gauntlet"))
    tasks = [
        {
            "task_id": f"t{i}",
            "input": {"kind": kind, "question": f"{i}?"},
            "expected": {"kind": kind, "value": str(i)},
        }
        for i, kind in enumerate(KINDS)
    ]
    sub, _ = r.authoring.create_subset(
        CreateSubset(account=ALICE, benchmark_id=bm.id, slug="v1"), tasks
    )
    return bm.id, sub.id


def tallies(by_kind: dict[str, Any] | None) -> dict[str, tuple[int, int, int, Any]] | None:
    if by_kind is None:
        return None
    return {k: (v.passed, v.failed, v.errored, v.pass_rate) for k, v in by_kind.items()}


def test_runs_over_a_composite_subset_break_down_per_kind(registry: Registry) -> None:
    r = registry
    bm, sub = composite_subset(r)
    # math: 0, 2, 5; code: 1, 4; multiple_choice: 3
    best = r.run(ALICE, "a", "ppfpep", benchmark=bm, subset=sub, visibility="public")
    other = r.run(ALICE, "b", "ffff", benchmark=bm, subset=sub, visibility="public")
    board = r.reads.leaderboard(ReadLeaderboard(account=BOB, subset_id=sub))
    assert [x.run_id for x in board.rows] == [best, other]
    assert tallies(board.rows[0].by_kind) == {
        "code": (1, 0, 1, 1.0),
        "math": (2, 1, 0, pytest.approx(2 / 3)),
        "multiple_choice": (1, 0, 0, 1.0),
    }
    assert board.rows[0].by_kind is not None
    assert board.rows[0].by_kind["math"].total == 3
    # A run over part of the rows counts the kinds it ran.
    assert tallies(board.rows[1].by_kind) == {
        "code": (0, 1, 0, 0.0),
        "math": (0, 2, 0, 0.0),
        "multiple_choice": (0, 1, 0, 0.0),
    }
    listed = r.reads.runs(ListRegistryRuns(account=ALICE, subset_id=sub))
    assert {x.run_id: tallies(x.by_kind) for x in listed.runs} == {
        best: tallies(board.rows[0].by_kind),
        other: tallies(board.rows[1].by_kind),
    }

    # Rows without kinds (the built-in catalog's, a plain authored subset's): no breakdown.
    r.run(ALICE, "a", "pp", visibility="public")
    assert [
        x.by_kind for x in r.reads.leaderboard(ReadLeaderboard(account=BOB, subset_id=r.sub)).rows
    ] == [None]
    _, plain = alice_subset(r)
    r.run(ALICE, "a", "pp", subset=plain)
    assert [
        x.by_kind for x in r.reads.runs(ListRegistryRuns(account=ALICE, subset_id=plain)).runs
    ] == [None]


# -- aliases in listings ------------------------------------------------------------------------
def test_built_in_benchmarks_list_and_read_with_their_aliases(registry: Registry) -> None:
    r = registry
    alice_subset(r)
    page, _ = r.app.list_benchmarks(ListBenchmarks(account=ALICE, limit=100))
    assert {b.name: b.aliases for b in page} == {"Tiny Math": ["tiny math v1"], "Mine": []}
    shown = r.app.builtin_benchmark(r.bm)
    assert shown is not None and shown.aliases == ["tiny math v1"]
