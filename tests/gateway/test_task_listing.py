"""Task rows by version (Materialize invocation), in any order, with each trial's result."""

import itertools
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from benchwright_gateway import projections as views
from benchwright_gateway.projections import RunsProjection
from benchwright_gateway.render import (
    parse_task_page_token,
    render_task,
    render_trial,
    task_page_token,
)
from benchwright_shared.projection import ProjectionStore
from benchwright_shared.settings import Settings
from tests.conftest import machine_database_url, reset_postgres

RUN = "22222222-2222-2222-2222-222222222222"
TASKS = 7
TRIALS = 2


def _log() -> list[dict[str, Any]]:
    """A run whose Materialize ran twice (a restart), two trials per task each time."""
    seq = iter(range(1000))

    def message(kind: str, **data: Any) -> dict[str, Any]:
        n = next(seq)
        return {"run_id": RUN, "seq": n, "type": kind, "ts": f"2026-12-01T00:{n // 60:02d}:00Z",
                "data": data}  # fmt: skip

    log = [
        message(
            "RunLaunched",
            account="a",
            benchmark_id="bm_1",
            benchmark_name="GSM8K",
            trials={"plan": {"k": TRIALS}, "aggregator": {"name": "any_pass"}},
        )
    ]
    for invocation in (1, 2):
        for index in range(TASKS):
            scores = []
            for trial in range(TRIALS):
                # Version 2 passes index 3 on its second trial only; index 5 errs.
                score = 1.0 if (index + trial + invocation) % 3 == 0 else 0.0
                outcome = "pass" if score else "fail"
                if invocation == 2 and index == 5:
                    score, outcome = None, "err"
                scores.append(score)
                log.append(
                    message(
                        "MaterializeTaskResult",
                        task_id=f"task-{index}",
                        index=index,
                        invocation=invocation,
                        trial=trial,
                        score=score,
                        outcome=outcome,
                        output=f"v{invocation} t{trial} answer {index}",
                        error_type="timeout" if outcome == "err" else None,
                        duration_ms=100 * (TASKS - index) + trial,
                        score_meta={"parsed": str(index)},
                    )
                )
            passed = any(s == 1.0 for s in scores)
            log.append(
                message(
                    "MaterializeTaskAggregated",
                    task_id=f"task-{index}",
                    index=index,
                    invocation=invocation,
                    score=1.0 if passed else (None if None in scores else 0.0),
                    outcome="err" if None in scores else ("pass" if passed else "fail"),
                    trial_scores=scores,
                )
            )
    return log


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ProjectionStore]:
    url = None
    if request.param == "postgresql":
        url = machine_database_url()
        if url is None:
            pytest.skip("BW_TEST_DATABASE_URL is not set")
        reset_postgres(url)
    views_store = ProjectionStore(
        Settings(data_dir=tmp_path, database_url=url), "gateway", [RunsProjection()]
    )
    views_store.apply_many("runs", list(enumerate(_log(), start=1)))
    yield views_store
    views_store.close()


def listing(store: ProjectionStore, **options: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = store.read(
        lambda cur: views.list_tasks(cur, RUN, limit=100, **options)
    )
    return rows


def test_the_latest_version_is_listed_by_default_and_an_earlier_one_on_request(
    store: ProjectionStore,
) -> None:
    assert store.read(lambda cur: views.task_versions(cur, RUN)) == [1, 2]
    latest = listing(store)
    assert [r["invocation"] for r in latest] == [2] * TASKS
    assert [r["idx"] for r in latest] == list(range(TASKS))
    first = listing(store, version=1)
    assert {r["invocation"] for r in first} == {1}
    # The summary covers the same sweep as the rows.
    outcomes = store.read(lambda cur: views.task_outcomes(cur, RUN))
    assert sorted(o.outcome for o in outcomes) == sorted(r["outcome"] for r in latest)
    earlier = store.read(lambda cur: views.task_outcomes(cur, RUN, 1))
    assert sorted(o.outcome for o in earlier) == sorted(r["outcome"] for r in first)


@pytest.mark.parametrize("sort", ["index", "-index", "score", "-score", "duration_ms",
                                  "-duration_ms", "task_id", "-task_id"])  # fmt: skip
def test_every_sort_pages_to_the_same_order_as_one_query(store: ProjectionStore, sort: str) -> None:
    whole = listing(store, sort=sort)
    paged: list[dict[str, Any]] = []
    after = None
    while True:
        page = store.read(partial(views.list_tasks, run_id=RUN, sort=sort, after=after, limit=2))
        paged += page
        if len(page) < 2:
            break
        after = views.task_key(page[-1], sort)
    assert [r["idx"] for r in paged] == [r["idx"] for r in whole]
    key = sort.lstrip("-")
    values = [views.task_key(r, sort)[0] for r in whole]
    assert values == sorted(values, reverse=sort.startswith("-")), key
    # Ties go by index, ascending, whichever way the key runs.
    for a, b in itertools.pairwise(whole):
        if views.task_key(a, sort)[0] == views.task_key(b, sort)[0]:
            assert a["idx"] < b["idx"]


def test_each_trial_keeps_its_own_result(store: ProjectionStore) -> None:
    trials = store.read(lambda cur: views.task_trials(cur, RUN, 2, [3, 5]))
    assert sorted(trials) == [3, 5]
    three = [render_trial(t, full=True) for t in trials[3]]
    assert [t["trial"] for t in three] == [0, 1]
    assert [t["output"] for t in three] == ["v2 t0 answer 3", "v2 t1 answer 3"]
    assert [t["score"] for t in three] == [0.0, 1.0]
    assert three[0]["score_meta"] == {"parsed": "3"}
    five = [render_trial(t, full=False) for t in trials[5]]
    assert {t["outcome"] for t in five} == {"err"} and five[0]["error_type"] == "timeout"
    assert "output" not in five[0] and five[0]["output_preview"] == "v2 t0 answer 5"
    row = next(r for r in listing(store) if r["idx"] == 3)
    rendered = render_task(row, trials[3])
    assert rendered["version"] == 2 and rendered["outcome"] == "pass"
    assert [t["outcome"] for t in rendered["trials"]] == ["fail", "pass"]
    # Version 1 keeps its own trials.
    older = store.read(lambda cur: views.task_trials(cur, RUN, 1, [3]))
    assert [t["output"] for t in older[3]] == ["v1 t0 answer 3", "v1 t1 answer 3"]


def test_deleting_the_run_deletes_its_trials(store: ProjectionStore) -> None:
    deleted = {"run_id": RUN, "seq": 999, "type": "RunDeleted", "ts": "2026-12-01T01:00:00Z",
               "data": {"deleted_by": "a"}}  # fmt: skip
    store.apply("runs", 10_000, deleted)
    assert store.read(lambda cur: views.task_trials(cur, RUN, 2, list(range(TASKS)))) == {}


@pytest.mark.parametrize(
    ("sort", "version", "after"),
    [("index", 1, (3, 3)), ("-score", 2, (-1.0, 5)), ("task_id", 7, ("task-2", 2))],
)
def test_page_tokens_round_trip(sort: str, version: int, after: tuple[Any, int]) -> None:
    token = task_page_token(sort, version, after)
    assert token.isascii() and "=" not in token
    assert parse_task_page_token(token) == (sort, version, after)


@pytest.mark.parametrize("token", ["t1_5", "", "!!!", "WyJpbmRleCJd", "bnVsbA", "W3RydWUsMSwxLDFd"])
def test_a_foreign_page_token_is_not_read(token: str) -> None:
    assert parse_task_page_token(token) is None


def test_a_run_of_one_trial_a_task_keeps_its_result_on_the_task_row_only(tmp_path: Path) -> None:
    store = ProjectionStore(Settings(data_dir=tmp_path), "gateway", [RunsProjection()])
    single = "33333333-3333-3333-3333-333333333333"
    log = [
        {"run_id": single, "seq": 0, "type": "RunLaunched", "ts": "2026-12-01T00:00:00Z",
         "data": {"account": "a", "trials": {"plan": {"k": 1}}}},
        {"run_id": single, "seq": 1, "type": "MaterializeTaskResult", "ts": "2026-12-01T00:00:01Z",
         "data": {"task_id": "t0", "index": 0, "trial": 0, "score": 1.0, "outcome": "pass",
                  "output": "4"}},
        # A result of a run the view has not seen launched yet gets its trial row.
        {"run_id": RUN, "seq": 5, "type": "MaterializeTaskResult", "ts": "2026-12-01T00:00:02Z",
         "data": {"task_id": "t0", "index": 0, "trial": 1, "score": 0.0, "outcome": "fail"}},
    ]  # fmt: skip
    try:
        store.apply_many("runs", list(enumerate(log, start=1)))
        assert (
            store.read(partial(views.task_trials, run_id=single, invocation=1, indexes=[0])) == {}
        )
        row = store.read(lambda cur: views.get_task(cur, single, 1, 0))
        assert row["output"] == "4"
        early = store.read(partial(views.task_trials, run_id=RUN, invocation=1, indexes=[0]))
        assert [t["trial"] for t in early[0]] == [1]
    finally:
        store.close()
