"""Intervals and paired comparisons on the live platform (issue 15): two models answer
a subset of sums, each wrong on a known set of tasks, so the flips between their runs
are known before they run.

* every summary carries a Wilson interval for its pass rate and a cluster bootstrap
  interval for its mean score (the rows' ``category`` is the cluster);
* ``GET /v1/runs/{id}/compare?with=`` (through the SDK) counts exactly the constructed
  flips, reports the tasks only one run has, gives McNemar's exact p and the verdict,
  and names what differs between the runs;
* ``benchwright run diff`` prints the same, and ``--gate no-regression-vs=@baseline``
  fails a launch that is significantly worse than the account's baseline run.
"""

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from scipy import stats as reference
from typer.testing import CliRunner, Result

from benchwright import AsyncBenchwright, NotFoundError
from benchwright._models import TaskSummary
from benchwright.cli import app
from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer
from tests.system.test_authoring import TASK_IMPL
from tests.system.test_leaderboards import finish, new_account

pytestmark = [pytest.mark.slow, pytest.mark.connected]

TASKS = 42
SUMS = [(i, 100 + i) for i in range(TASKS)]
ROWS = [
    {
        "task_id": f"sum-{a}",
        "category": f"group-{a % 4}",
        "input": {"a": a, "b": b},
        "expected": str(a + b),
    }
    for a, b in SUMS
]
WRONG_A = {0, 10}  # the reference misses two
WRONG_B = {0, *range(1, 13)} - {10}  # the candidate fixes one and breaks eleven
SUM = re.compile(r"What is (\d+) \+ (\d+)\?")


def calculator(wrong: set[int]) -> Callable[[str], str]:
    def answer(prompt: str) -> str:
        found = SUM.search(prompt)
        if not found:
            return "I do not know."
        a, b = int(found.group(1)), int(found.group(2))
        return f"The sum is {a + b + (1 if a in wrong else 0)}"

    return answer


@pytest.fixture
def models() -> Iterator[dict[str, FakeOpenAIServer]]:
    found = {
        "calc-a": FakeOpenAIServer(calculator(WRONG_A)).start(),
        "calc-b": FakeOpenAIServer(calculator(WRONG_B)).start(),
    }
    yield found
    for server in found.values():
        server.stop()


@pytest.fixture
async def alice(platform: Platform) -> AsyncIterator[AsyncBenchwright]:
    assert platform.client is not None
    base_url = str(platform.client.base_url).rstrip("/")
    async with AsyncBenchwright(api_key=platform.token, base_url=base_url) as client:
        yield client


def sut(models: dict[str, FakeOpenAIServer], name: str) -> dict[str, str]:
    return {"model": name, "provider": "openai_compatible", "api_base": models[name].base_url}


async def test_summaries_carry_intervals_and_two_runs_compare_task_by_task(
    platform: Platform,
    alice: AsyncBenchwright,
    models: dict[str, FakeOpenAIServer],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    bm = await alice.benchmarks.create(name="Hundred Sums", category="math")
    sub = await alice.benchmarks.subsets.create(benchmark=bm.id, slug="v1", tasks=ROWS)
    impl = await alice.impls.create(subset=sub.id, label="sums", code=TASK_IMPL)
    pinned = {"benchmark": bm.id, "subset": sub.id, "impl": impl.id}
    # The reference runs the first 40 tasks, the candidate all 42.
    run_a, run_b = await asyncio.gather(
        alice.runs.launch(
            **pinned, sut=sut(models, "calc-a"), metadata={"purpose": "baseline", "limit": 40}
        ),
        alice.runs.launch(**pinned, sut=sut(models, "calc-b")),
    )
    a, b = await finish(alice, run_a.id), await finish(alice, run_b.id)

    # -- intervals on the summary --------------------------------------------------
    assert (b.summary.passed, b.summary.total) == (TASKS - len(WRONG_B), TASKS)
    wilson = reference.binomtest(b.summary.passed, TASKS).proportion_ci(method="wilson")
    assert b.summary.intervals.pass_rate.low == pytest.approx(wilson.low)
    assert b.summary.intervals.pass_rate.high == pytest.approx(wilson.high)
    mean = b.summary.intervals.mean_score
    assert (mean.method, mean.clusters) == ("cluster bootstrap", 4)
    assert mean.low <= b.summary.mean_score <= mean.high
    # The live summary (from the gateway's rows) is the one the log recorded.
    tasks = await alice.runs.tasks(b.id, limit=1)
    live, logged = (TaskSummary.model_validate(dict(s)) for s in (tasks.summary, b.summary))
    assert (live.intervals, live.mean_score) == (logged.intervals, logged.mean_score)

    # -- the paired comparison -----------------------------------------------------
    found = await alice.runs.compare(a.id, b.id)
    fixed, regressed = WRONG_A - WRONG_B, WRONG_B - WRONG_A
    assert found.flips.fixed == len(fixed) == 1
    assert found.flips.regressed == len(regressed) == 11
    assert found.tasks.common == 40 and found.tasks.only_in_b == 2
    assert found.tasks.only_in_b_ids == ["sum-40", "sum-41"]
    want_p = reference.binomtest(11, 12, 0.5).pvalue
    assert found.mcnemar.p_value == pytest.approx(want_p)
    assert found.verdict.outcome == "worse"
    assert found.verdict.text.startswith(
        f"{b.id} is worse than {a.id}: 11 regressions vs 1 fixes, p = {want_p:.2g}"
    )
    assert {c.task_id for c in found.changes if c.change == "regressed"} == {
        f"sum-{i}" for i in regressed
    }
    parts = {d.part for d in found.differences}
    assert {"model.model", "model.api_base", "selected_tasks", "fingerprint"} <= parts
    # One subset snapshot and one scorer: the first 40 rows are a selection of the same.
    assert not parts & {"impl_id", "impl_sha256", "tasks_sha256", "subset"}

    # Another account sees neither run; a bad alpha names its field.
    bob_token = await new_account(platform, "bob", ["runs:read"])
    async with AsyncBenchwright(api_key=bob_token, base_url=str(alice.base_url)) as bob:
        with pytest.raises(NotFoundError):
            await bob.runs.compare(a.id, b.id)
    assert platform.client is not None
    bad = await platform.client.get(f"/v1/runs/{a.id}/compare", params={"with": b.id, "alpha": "2"})
    assert bad.status_code == 400 and bad.json()["field"] == "alpha"
    missing = await platform.client.get(f"/v1/runs/{a.id}/compare", params={"with": "run_nope"})
    assert missing.status_code == 404 and missing.json()["field"] == "with"

    # -- the CLI: run diff, and a launch gated on no regression against @baseline -------
    monkeypatch.setenv("BW_PAT", platform.token)
    monkeypatch.setenv("BW_BASE_URL", str(alice.base_url).rstrip("/"))
    monkeypatch.setenv("BW_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.chdir(tmp_path)
    diff = await cli("run", "diff", a.id, b.id, "-o", "table")
    assert diff.exit_code == 0, diff.output
    assert "regressed" in diff.stdout and found.verdict.text in " ".join(diff.stdout.split())
    as_json = json.loads((await cli("run", "diff", a.id, b.id, "-o", "json")).stdout)
    assert as_json["flips"] == dict(found.flips)

    gated = await cli(
        "run", "--benchmark", bm.id, "--subset", sub.id, "--impl", impl.id,
        "--model", "calc-b", "--api-base", models["calc-b"].base_url,
        "--gate", "no-regression-vs=@baseline,alpha=0.05", "-o", "json",
    )  # fmt: skip
    assert gated.exit_code == 3, gated.output
    gate: dict[str, Any] = json.loads(gated.stdout)["gate"]
    assert gate["held"] is False and gate["reference_run"] == a.id
    assert (gate["outcome"], gate["regressed"], gate["fixed"]) == ("worse", 11, 1)
    assert "gate failed: " in gated.stderr


async def cli(*args: str) -> Result:
    # The platform shares this event loop: the CLI's blocking calls go to a thread.
    return await asyncio.to_thread(CliRunner().invoke, app, list(args))
