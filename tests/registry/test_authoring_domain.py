"""Authoring rules on the aggregates alone: no store, no bus."""

from datetime import UTC, datetime
from typing import Any

import pytest

from benchwright_registry.domain.authoring import (
    MAX_ROWS_PER_REQUEST,
    AuthoredBenchmark,
    AuthoredImpl,
    AuthoredSubset,
    check_code,
    grader_code,
    is_benchmark_id,
    new_benchmark_id,
    request_digest,
    snapshot_id_for,
    tasks_jsonl,
)
from benchwright_shared.hashing import sha256_hex
from benchwright_shared.ids import impl_id_for
from benchwright_shared.refusal import Refused

NOW = datetime(2026, 4, 1, tzinfo=UTC)
BM = "bm_00000000-0000-4000-8000-000000000001"
CODE = "from bench_task import BenchTask\n\nclass Task(BenchTask):\n    pass\n"


def rows(*ids: str) -> list[dict[str, Any]]:
    return [{"task_id": i, "input": {"q": i}, "expected": i.upper()} for i in ids]


def subset(task_rows: list[dict[str, Any]], *, rolling: bool = False) -> AuthoredSubset:
    subset_id, digest = AuthoredSubset.address(BM, "daily", task_rows)
    return AuthoredSubset(
        id=AuthoredSubset.create_id(subset_id),
        subset_id=subset_id,
        benchmark_id=BM,
        account="acct_a",
        slug="daily",
        name="Daily",
        description="",
        rolling=rolling,
        grader=None,
        grader_impl_id=None,
        default_trials=None,
        rows=task_rows,
        content_sha256=digest,
        at=NOW,
    )


def benchmark() -> AuthoredBenchmark:
    return AuthoredBenchmark(
        id=AuthoredBenchmark.create_id(BM),
        account="acct_a",
        name="Mine",
        description="",
        category="math",
        tags=["t"],
        request_sha256="x",
    )


def refused(exc: pytest.ExceptionInfo[Refused]) -> tuple[int, str | None, str | None]:
    return exc.value.status, exc.value.code, exc.value.field


# -- content addressing ---------------------------------------------------------------------
def test_a_subset_id_is_the_content_address_of_its_tasks_under_benchmark_and_slug() -> None:
    a, digest = AuthoredSubset.address(BM, "v1", rows("a", "b"))
    assert a.startswith("sub_") and len(a) == 16
    assert digest == sha256_hex(tasks_jsonl(rows("a", "b")))
    # Key order in a row does not matter: the address is over canonical JSON.
    shuffled = [
        {"expected": r["expected"], "input": r["input"], "task_id": r["task_id"]}
        for r in rows("a", "b")
    ]
    assert AuthoredSubset.address(BM, "v1", shuffled)[0] == a
    # Other tasks, another order, another slug, another benchmark: another id.
    assert AuthoredSubset.address(BM, "v1", rows("a", "c"))[0] != a
    assert AuthoredSubset.address(BM, "v1", rows("b", "a"))[0] != a
    assert AuthoredSubset.address(BM, "v2", rows("a", "b"))[0] != a
    other = "bm_00000000-0000-4000-8000-000000000002"
    assert AuthoredSubset.address(other, "v1", rows("a", "b"))[0] != a
    assert snapshot_id_for(BM, "v1", digest) == a


def test_benchmark_ids_come_from_the_idempotency_key_when_there_is_one() -> None:
    keyed = new_benchmark_id("acct_a", "k1")
    assert keyed == new_benchmark_id("acct_a", "k1") and is_benchmark_id(keyed)
    assert keyed != new_benchmark_id("acct_b", "k1")
    assert new_benchmark_id("acct_a", None) != new_benchmark_id("acct_a", None)
    assert not is_benchmark_id("GSM8K") and not is_benchmark_id("bm_x")


def test_row_rules_name_the_field_at_fault() -> None:
    too_many = [{"task_id": str(i)} for i in range(MAX_ROWS_PER_REQUEST + 1)]
    with pytest.raises(Refused) as exc:
        AuthoredSubset.address(BM, "v1", too_many)
    assert refused(exc) == (400, "invalid_argument", "tasks")
    assert "append_tasks" in exc.value.detail
    AuthoredSubset.address(BM, "v1", too_many[:MAX_ROWS_PER_REQUEST])  # exactly the cap is fine

    with pytest.raises(Refused) as exc:
        AuthoredSubset.address(BM, "v1", [*rows("a"), {"input": 1}])
    assert refused(exc) == (400, "invalid_argument", "tasks[1].task_id")
    with pytest.raises(Refused) as exc:
        AuthoredSubset.address(BM, "v1", rows("a", "b", "a"))
    assert refused(exc) == (400, "duplicate_task_id", "tasks[2].task_id")
    with pytest.raises(Refused) as exc:
        AuthoredSubset.address(BM, "Not A Slug", rows("a"))
    assert refused(exc)[2] == "slug"


# -- appends, frozen subsets --------------------------------------------------------------------
def test_a_frozen_subset_refuses_appends_with_409_subset_frozen() -> None:
    frozen = subset(rows("a"))
    with pytest.raises(Refused) as exc:
        frozen.append(rows("b"), idempotency_key="k", request_sha256="d", at=NOW)
    assert refused(exc) == (409, "subset_frozen", "subset_id")
    assert frozen.collect_events()[-1].__class__.__name__ == "Created"


def test_each_append_to_a_rolling_subset_is_a_new_snapshot() -> None:
    rolling = subset([], rolling=True)
    assert rolling.latest["id"] == rolling.subset_id and rolling.latest["task_count"] == 0
    first, new = rolling.append(rows("a", "b"), idempotency_key="day1", request_sha256="d1", at=NOW)
    assert new and first["appended"] == 2 and first["task_count"] == 2
    second, _ = rolling.append(rows("c"), idempotency_key="day2", request_sha256="d2", at=NOW)
    ids = [s["id"] for s in rolling.snapshots]
    assert ids == [rolling.subset_id, first["snapshot_id"], second["snapshot_id"]]
    assert len(set(ids)) == 3
    # A snapshot is the content address of every row so far, like a subset's own id.
    assert second["snapshot_id"] == AuthoredSubset.address(BM, "daily", rows("a", "b", "c"))[0]
    assert rolling.snapshot(first["snapshot_id"])["task_count"] == 2  # type: ignore[index]
    with pytest.raises(Refused) as exc:
        rolling.append(rows("a"), idempotency_key=None, request_sha256="d3", at=NOW)
    assert refused(exc) == (400, "duplicate_task_id", "tasks[0].task_id")


def test_a_repeated_append_key_is_a_no_op_returning_the_first_result() -> None:
    rolling = subset([], rolling=True)
    digest = request_digest(rows("a"))
    first, new = rolling.append(rows("a"), idempotency_key="k", request_sha256=digest, at=NOW)
    rolling.collect_events()
    again, new_again = rolling.append(rows("a"), idempotency_key="k", request_sha256=digest, at=NOW)
    assert new and not new_again and again == first
    assert rolling.collect_events() == [] and len(rolling.rows) == 1
    # Even after the subset moved on (or froze), the key answers what it did.
    rolling.append(rows("b"), idempotency_key="k2", request_sha256="x", at=NOW)
    rolling.change(name=None, description=None, rolling=False, at=NOW)
    assert rolling.append(rows("a"), idempotency_key="k", request_sha256=digest, at=NOW)[0] == first
    with pytest.raises(Refused) as exc:
        rolling.append(rows("z"), idempotency_key="k", request_sha256="other", at=NOW)
    assert refused(exc) == (409, "idempotency_key_reused", "Idempotency-Key")


def test_freezing_is_one_way() -> None:
    rolling = subset(rows("a"), rolling=True)
    assert rolling.change(name=None, description=None, rolling=False, at=NOW)
    assert not rolling.rolling
    assert not rolling.change(name=None, description=None, rolling=False, at=NOW)
    with pytest.raises(Refused) as exc:
        rolling.change(name=None, description=None, rolling=True, at=NOW)
    assert refused(exc) == (409, "subset_frozen", "rolling")


def test_a_deleted_subset_comes_back_only_as_it_was() -> None:
    frozen = subset(rows("a"))
    frozen.delete(NOW)
    frozen.restore(
        rows("a"),
        name="n",
        description="",
        rolling=False,
        grader=None,
        grader_impl_id=None,
        default_trials=None,
        at=NOW,
    )
    assert not frozen.deleted
    grown = subset(rows("a"), rolling=True)
    grown.append(rows("b"), idempotency_key=None, request_sha256="d", at=NOW)
    grown.delete(NOW)
    with pytest.raises(Refused) as exc:
        grown.restore(
            rows("a"),
            name="n",
            description="",
            rolling=True,
            grader=None,
            grader_impl_id=None,
            default_trials=None,
            at=NOW,
        )
    assert refused(exc) == (409, "subset_deleted", "slug")


def test_history_replays_without_judging_it_again() -> None:
    rolling = subset([], rolling=True)
    rolling.append(rows("a"), idempotency_key="k", request_sha256="d", at=NOW)
    rolling.change(name="Renamed", description=None, rolling=False, at=NOW)
    events = rolling.collect_events()
    copy: Any = None
    for domain_event in events:
        copy = domain_event.mutate(copy)
    assert copy.rows == rolling.rows and copy.snapshots == rolling.snapshots
    assert copy.name == "Renamed" and copy.rolling is False and copy.appends == rolling.appends


# -- impls -----------------------------------------------------------------------------------
def test_an_impl_is_its_code_under_its_benchmark_and_the_code_never_changes() -> None:
    impl = AuthoredImpl.for_code(
        benchmark_id=BM, subset_id=None, account="acct_a", label="v1", description="", code=CODE
    )
    assert impl.impl_id == impl_id_for(BM, CODE) == f"{BM}:{sha256_hex(CODE)[:12]}"
    assert impl.sha256 == sha256_hex(CODE)
    assert impl.relabel(label="v1 strict", description="d")
    assert (impl.label, impl.code) == ("v1 strict", CODE)
    assert not impl.relabel(label="v1 strict", description=None)
    # Nothing on an impl records new code: the only events are these.
    events = {name for name in vars(AuthoredImpl) if name[:1].isupper() and name != "Event"}
    assert events == {"Created", "Relabelled", "Deleted", "Restored"}


def test_code_must_compile() -> None:
    check_code(CODE)
    with pytest.raises(Refused) as exc:
        check_code("def broken(:\n")
    assert refused(exc) == (400, "invalid_argument", "code")
    with pytest.raises(Refused) as exc:
        grader_code({"code": "class (:"})
    assert refused(exc)[2] == "grader.code"
    with pytest.raises(Refused) as exc:
        grader_code({"kind": "exact_match"})
    assert refused(exc)[2] == "grader.code"


def test_latest_official_is_the_newest_official_impl() -> None:
    bm = benchmark()
    assert bm.latest_official() is None
    bm.add_impl("a", official=True)
    bm.add_impl("b", official=False)
    assert bm.latest_official() == "a"
    bm.add_impl("c", official=True)
    assert bm.latest_official() == "c"
    bm.set_official("c", False)
    assert bm.latest_official() == "a"
    bm.set_official("b", True)
    assert bm.latest_official() == "b"
    bm.remove_impl("b")
    assert bm.latest_official() == "a"


def test_a_slug_names_one_live_subset() -> None:
    bm = benchmark()
    bm.claim_slug("v1", "sub_1")
    bm.claim_slug("v1", "sub_1")  # the same subset again: fine
    with pytest.raises(Refused) as exc:
        bm.claim_slug("v1", "sub_2")
    assert refused(exc) == (409, "slug_taken", "slug")
    bm.release_slug("v1")
    bm.claim_slug("v1", "sub_2")
    assert bm.subsets == {"v1": "sub_2"}


def test_a_scorer_whose_rubric_cannot_grade_is_refused_naming_the_weight() -> None:
    from benchwright_shared.scorers import scorer_source

    shipped = scorer_source("judge_rubric")
    check_code(shipped)  # the shipped rubric holds up
    start = shipped.index("RUBRIC = ")
    end = shipped.index("\n]", start) + 2
    broken = shipped[:start] + 'RUBRIC = [{"criterion": "a", "weight": 1}, ' + (
        '{"criterion": "b", "weight": -2}]' + shipped[end:]
    )
    with pytest.raises(Refused) as exc:
        check_code(broken)
    assert exc.value.status == 422 and exc.value.field == "code.RUBRIC[1].weight"
    assert exc.value.code == "invalid_rubric"
