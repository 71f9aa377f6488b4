"""Guide section 9, "Rolling benchmarks": a ``rolling=True`` subset that grows by
idempotent daily appends, a nightly panel replayed against yesterday's anchor run,
scoped to the fresh rows with ``replay.task_ids``; frozen subsets refuse appends.

Adapted in the models only: openai/gpt-5 and anthropic/claude-sonnet-4-6 are fake
OpenAI-compatible servers under those names that know some of the fixing commits. The
bug tracker is a stub, and ``nightly`` takes the day it runs for (the guide reads
``datetime.date.today()``) so that one test can live through two days. The scorer is
"the same shape as 6.3" (extract/solve/score), calling the model with the runtime's
``BenchTask.complete``.
"""

import datetime
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchwright import Benchwright, ConflictError
from tests.scenarios.support import RUN_TIMEOUT, Steps, cli, offthread, sut_of
from tests.support.chat_oracle import ChatOracleServer, last_user_text

pytestmark = [pytest.mark.slow, pytest.mark.connected]

PANEL = ("openai/gpt-5", "anthropic/claude-sonnet-4-6")
DAY_1 = datetime.date(2026, 4, 14)
DAY_2 = DAY_1 + datetime.timedelta(days=1)
# What the bug tracker reports, by the day it is asked.
TRACKER = {
    DAY_1: [
        {"id": "bug-101", "repo": "acme/api", "test": "test_login", "fixing_patch_sha": "a1b2c3d"},
        {"id": "bug-102", "repo": "acme/api", "test": "test_logout", "fixing_patch_sha": "e4f5a6b"},
    ],
    DAY_2: [
        {"id": "bug-103", "repo": "acme/web", "test": "test_render", "fixing_patch_sha": "c7d8e9f"},
    ],
}
# Which fixing commits each panel model knows.
KNOWS = {
    "openai/gpt-5": {"a1b2c3d", "e4f5a6b", "c7d8e9f"},
    "anthropic/claude-sonnet-4-6": {"a1b2c3d"},
}
SCORER = """\
import json
import re

from bench_task import BenchTask


class Task(BenchTask):
    def extract(self, path, index):
        with open(path) as f:
            rows = [json.loads(line) for line in f]
        row = rows[index]
        return {"task_id": row["task_id"], "input": row["input"], "expected": row["expected"]}

    def solve(self, index, input):
        prompt = (
            f"Which commit of {input['repo']} fixes the failing test {input['failing_test']}? "
            "Reply with the commit sha."
        )
        return self.complete(prompt, max_tokens=32, temperature=0)

    def score(self, index, output, expected):
        return 1.0 if expected in re.findall(r"[0-9a-f]{7,40}", output or "") else 0.0
"""


def bug_fixer(model: str) -> ChatOracleServer:
    """Knows the fixing commits in ``KNOWS[model]``; guesses 0000000 otherwise."""
    by_test = {r["test"]: r["fixing_patch_sha"] for rows in TRACKER.values() for r in rows}

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        found = re.search(r"failing test (\w+)", last_user_text(body))
        sha = by_test.get(found.group(1), "") if found else ""
        return {"content": f"The fix is {sha if sha in KNOWS[model] else '0000000'}."}

    return ChatOracleServer(reply)


@pytest.fixture(scope="module")
def models() -> Iterator[dict[str, ChatOracleServer]]:
    servers = {m: bug_fixer(m).start() for m in PANEL}
    yield servers
    for server in servers.values():
        server.stop()


def fetch_from_bug_tracker(since: datetime.date) -> list[dict[str, str]]:
    """A stub of the guide's bug tracker: what it reported on ``since``."""
    return TRACKER.get(since, [])


def nightly(
    bw: Benchwright,
    sub_id: str,
    anchor_run_id: str,
    models: dict[str, ChatOracleServer],
    today: datetime.date,
    *,
    fresh_only: bool,
) -> list[Any]:
    """Section 9's nightly; ``fresh_only`` adds ``replay.task_ids`` (the fresh rows)."""
    new_rows = fetch_from_bug_tracker(since=today)
    if not new_rows:
        return []

    # Append new tasks. Idempotent per day.
    bw.benchmarks.subsets.append_tasks(
        sub_id,
        tasks=[
            {
                "task_id": r["id"],
                "input": {"repo": r["repo"], "failing_test": r["test"]},
                "expected": r["fixing_patch_sha"],
            }
            for r in new_rows
        ],
        idempotency_key=f"bugs-append-{today}",
    )

    # Run the standing panel against yesterday's anchor run.
    launched = []
    for model in PANEL:
        replay: dict[str, Any] = {"from_run": anchor_run_id}
        key = f"bugs-panel-{today}-{model}"
        if fresh_only:
            replay["task_ids"] = [r["id"] for r in new_rows]
            key += "-fresh"
        launched.append(
            bw.runs.launch(
                replay=replay,
                sut=sut_of(models[model], model),
                idempotency_key=key,
            )
        )
    return launched


async def test_create_a_rolling_subset_and_ship_the_scorer(bw: Benchwright, steps: Steps) -> None:
    def create() -> tuple[Any, Any, Any]:
        bm = bw.benchmarks.create(
            name="Live Bug Repro", category="code", tags=["rolling", "code-review"]
        )
        sub = bw.benchmarks.subsets.create(
            benchmark=bm.id,
            slug="daily",
            name="Daily accretion",
            rolling=True,
        )
        impl = bw.impls.create(subset=sub.id, label="fixing commit", code=SCORER)
        return bm, sub, impl

    bm, sub, impl = await offthread(create)
    assert sub.rolling and not sub.frozen and sub.task_count == 0
    assert impl.id.startswith(f"{bm.id}:")
    steps.update(bm=bm, sub=sub, impl=impl)


async def test_day_1_append_and_anchor(
    bw: Benchwright, steps: Steps, models: dict[str, ChatOracleServer]
) -> None:
    """The first day's rows, and the run every later night replays: the anchor."""
    bm, sub, impl = steps.need("bm", "sub", "impl")

    def day_one() -> Any:
        rows = fetch_from_bug_tracker(since=DAY_1)
        bw.benchmarks.subsets.append_tasks(
            sub.id,
            tasks=[
                {
                    "task_id": r["id"],
                    "input": {"repo": r["repo"], "failing_test": r["test"]},
                    "expected": r["fixing_patch_sha"],
                }
                for r in rows
            ],
            idempotency_key=f"bugs-append-{DAY_1}",
        )
        anchor = bw.runs.launch(
            benchmark=bm.id,
            subset=sub.id,
            impl=impl.id,
            sut=sut_of(models[PANEL[0]], PANEL[0]),
        )
        return bw.runs.wait(anchor.id, timeout=RUN_TIMEOUT)

    anchor = await offthread(day_one)
    assert anchor.status == "ok", (anchor.phase, anchor.halt_reason, anchor.error)
    tasks = await offthread(bw.runs.tasks, anchor.id)
    assert [t.task_id for t in tasks.data] == ["bug-101", "bug-102"]
    assert tasks.summary.passed == 2
    steps["anchor"] = anchor


async def test_day_2_append_is_idempotent_per_day(
    bw: Benchwright, steps: Steps, workdir: Path
) -> None:
    """Day 2's rows with the day's key, twice: one append. The CLI appends a file the
    same way (`benchwright bench subset append <subset_id> --file more-tasks.jsonl`)."""
    sub = steps.need("sub")
    rows = [
        {
            "task_id": r["id"],
            "input": {"repo": r["repo"], "failing_test": r["test"]},
            "expected": r["fixing_patch_sha"],
        }
        for r in fetch_from_bug_tracker(since=DAY_2)
    ]

    def append_twice() -> tuple[Any, Any]:
        first = bw.benchmarks.subsets.append_tasks(
            sub.id, tasks=rows, idempotency_key=f"bugs-append-{DAY_2}"
        )
        again = bw.benchmarks.subsets.append_tasks(
            sub.id, tasks=rows, idempotency_key=f"bugs-append-{DAY_2}"
        )
        return first, again

    first, again = await offthread(append_twice)
    assert (first.appended, first.task_count) == (1, 3) and again == first
    # The CLI, with a file of the same rows and the same key: nothing more.
    (workdir / "more-tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    appended = await cli(
        "bench",
        "subset",
        "append",
        sub.id,
        "--file",
        "more-tasks.jsonl",
        "--idempotency-key",
        f"bugs-append-{DAY_2}",
        "-o",
        "json",
        cwd=workdir,
    )
    assert appended.exit_code == 0, str(appended)
    assert appended.json()["task_count"] == 3
    shown = await offthread(bw.registry.subsets.get, sub.id)
    assert shown.task_count == 3 and shown.snapshot_id == first.snapshot_id
    steps["day2_snapshot"] = first.snapshot_id


async def test_nightly_panel_replays_the_whole_subset(
    bw: Benchwright, steps: Steps, models: dict[str, ChatOracleServer]
) -> None:
    """The nightly as printed: a replay of the anchor re-runs the whole subset, the
    fresh row included, with the anchor's impl."""
    sub, anchor = steps.need("sub", "anchor")

    def night() -> list[Any]:
        launched = nightly(bw, sub.id, anchor.id, models, DAY_2, fresh_only=False)
        return [bw.runs.wait(r.id, timeout=RUN_TIMEOUT) for r in launched]

    runs = await offthread(night)
    assert len(runs) == len(PANEL)
    for model, run in zip(PANEL, runs, strict=True):
        assert run.status == "ok", (model, run.phase, run.halt_reason, run.error)
        assert run.derived_from == anchor.id and run.impl_id == anchor.impl_id
        ran = [t.task_id for t in (await offthread(bw.runs.tasks, run.id)).data]
        assert ran == ["bug-101", "bug-102", "bug-103"], (model, ran)
    # The same night again: idempotent keys, the same runs, no second append.
    again = await offthread(nightly, bw, sub.id, anchor.id, models, DAY_2, fresh_only=False)
    assert [r.id for r in again] == [r.id for r in runs]
    assert (await offthread(bw.registry.subsets.get, sub.id)).task_count == 3


async def test_nightly_panel_scoped_to_the_fresh_rows(
    bw: Benchwright, steps: Steps, models: dict[str, ChatOracleServer]
) -> None:
    """With ``replay.task_ids`` each panel run scores exactly the fresh rows."""
    sub, anchor = steps.need("sub", "anchor")

    def night() -> list[Any]:
        launched = nightly(bw, sub.id, anchor.id, models, DAY_2, fresh_only=True)
        return [bw.runs.wait(r.id, timeout=RUN_TIMEOUT) for r in launched]

    runs = await offthread(night)
    for model, run in zip(PANEL, runs, strict=True):
        assert run.status == "ok", (model, run.phase, run.halt_reason, run.error)
        assert run.derived_from == anchor.id and run.impl_id == anchor.impl_id
        tasks = await offthread(bw.runs.tasks, run.id)
        assert [t.task_id for t in tasks.data] == ["bug-103"], model
        assert tasks.summary.passed == (1 if "c7d8e9f" in KNOWS[model] else 0)


async def test_replay_task_ids_scopes_a_replay_to_named_rows(
    bw: Benchwright, steps: Steps, models: dict[str, ChatOracleServer]
) -> None:
    """``replay.task_ids`` on rows the anchor did run: the slice alone is scored."""
    anchor = steps.need("anchor")
    model = PANEL[1]

    def scoped() -> Any:
        run = bw.runs.launch(
            replay={"from_run": anchor.id, "task_ids": ["bug-102"]},
            sut=sut_of(models[model], model),
        )
        return bw.runs.wait(run.id, timeout=RUN_TIMEOUT)

    run = await offthread(scoped)
    assert run.status == "ok", (run.phase, run.halt_reason, run.error)
    assert run.impl_id == anchor.impl_id
    tasks = await offthread(bw.runs.tasks, run.id)
    assert [t.task_id for t in tasks.data] == ["bug-102"]
    assert tasks.summary.passed == 0  # claude-sonnet-4-6 does not know e4f5a6b


async def test_frozen_subsets_refuse_appends(bw: Benchwright, steps: Steps) -> None:
    """Without ``rolling=True`` a subset is frozen at creation (409 ``subset_frozen``);
    freezing a rolling one is a one-way ``rolling: false`` patch."""
    bm, sub = steps.need("bm", "sub")
    row = {"task_id": "bug-999", "input": {"repo": "x", "failing_test": "y"}, "expected": "z"}

    def refusals() -> list[str]:
        codes = []
        frozen = bw.benchmarks.subsets.create(benchmark=bm.id, slug="frozen", tasks=[row])
        for call in (
            lambda: bw.benchmarks.subsets.append_tasks(frozen.id, tasks=[row]),
            lambda: bw.benchmarks.subsets.update(sub.id, rolling=False),
            lambda: bw.benchmarks.subsets.append_tasks(sub.id, tasks=[row]),
            lambda: bw.benchmarks.subsets.update(sub.id, rolling=True),
        ):
            try:
                call()
                codes.append("ok")
            except ConflictError as exc:
                codes.append(str(exc.code))
        return codes

    codes = await offthread(refusals)
    assert codes[:3] == ["subset_frozen", "ok", "subset_frozen"]
    assert codes[3] != "ok"  # one way
