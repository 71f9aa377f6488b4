"""The launch operations without HTTP and without NATS: ``FakePorts`` answers what the
registry, billing, the proxy, the runs view and the gateway's application would."""

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from benchwright_gateway.operations import estimate as estimating
from benchwright_gateway.operations import launch as launching
from benchwright_gateway.operations import steering
from benchwright_gateway.operations.replay import slice_indices
from benchwright_gateway.operations.snapshots import (
    ROWS_PER_QUERY,
    current_snapshot,
    row_indices,
)
from benchwright_gateway.ports import LaunchPorts, RunRow
from benchwright_gateway.render import render_run
from benchwright_gateway.requests import ForkRequest, LaunchRequest, RunPatch
from benchwright_shared.api.launch import Run
from benchwright_shared.contracts import (
    BenchmarkResolution,
    Contract,
    DeleteRun,
    GetImpl,
    GetSubsetRows,
    ImplCode,
    LaunchRun,
    ResolveBenchmark,
    ResolveRunHalt,
    RunCost,
    SubsetRows,
    UpdateRun,
)
from benchwright_shared.contracts.base import Problem
from benchwright_shared.contracts.billing import BalanceView, Money
from benchwright_shared.contracts.queries import (
    CheckProviderKeys,
    ModelCallPrices,
    PriceModelCalls,
    ProviderKeys,
)
from benchwright_shared.contracts.registry import ReadSubset, RegistryAnswer, SubsetView
from benchwright_shared.refusal import Refused

ACCOUNT = "acct_a"
BASE_URL = "http://gw.test"
SUT = {"model": "m", "provider": "local"}


@dataclass
class Record:
    run_id: str
    body_sha256: str


@dataclass
class Subset:
    benchmark_id: str
    slug: str
    snapshot_id: str
    rows: list[dict[str, Any]]
    rolling: bool = False


@dataclass
class FakePorts:
    """Every port of ``LaunchPorts`` in memory; ``sent`` keeps the commands, ``asked``
    the questions, in order."""

    benchmarks: dict[str, BenchmarkResolution] = field(default_factory=dict)
    subsets: dict[str, Subset] = field(default_factory=dict)
    impls: dict[str, str] = field(default_factory=dict)
    runs: dict[str, RunRow] = field(default_factory=dict)
    outcomes: dict[str, dict[int, tuple[str, str]]] = field(default_factory=dict)
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    records: dict[tuple[str, str], Record] = field(default_factory=dict)
    billing_enforced: bool = False
    balance_cents: int = 500
    floor_cents: int = 100
    stop_reason: str | None = None
    price_problem: Problem | None = None
    # Providers the proxy holds no key for (what ``provider_keys`` answers).
    keyless: tuple[str, ...] = ()
    # What the rest of the system does with a command: the view's change, if any.
    react: Callable[[Contract, "FakePorts"], None] = lambda command, ports: None
    sent: list[Contract] = field(default_factory=list)
    asked: list[Any] = field(default_factory=list)

    async def resolve(self, query: ResolveBenchmark) -> BenchmarkResolution:
        self.asked.append(query)
        found = self.benchmarks.get(query.benchmark)
        if found is None:
            problem = Problem(status=404, title="benchmark not found", field="benchmark")
            return BenchmarkResolution(problem=problem)
        return found

    async def subset(self, query: ReadSubset) -> RegistryAnswer:
        self.asked.append(query)
        found = self.subsets.get(query.subset_id)
        if found is None:
            return RegistryAnswer(problem=Problem(status=404, title="subset not found"))
        view = SubsetView(
            id=query.subset_id,
            benchmark_id=found.benchmark_id,
            slug=found.slug,
            rolling=found.rolling,
            snapshot_id=found.snapshot_id,
        )
        rows = found.rows[query.rows_offset : query.rows_offset + query.rows_limit]
        return RegistryAnswer(subset=view, rows=rows)

    async def subset_rows(self, query: GetSubsetRows) -> SubsetRows:
        self.asked.append(query)
        found = self.subsets.get(query.subset_id)
        if found is None:
            return SubsetRows(subset_id=query.subset_id, problem=Problem(status=404, title="no"))
        page = found.rows[query.offset : query.offset + query.limit]
        return SubsetRows(subset_id=query.subset_id, total=len(found.rows), rows=page)

    async def impl(self, query: GetImpl) -> ImplCode:
        return ImplCode(impl_id=query.impl_id, code=self.impls.get(query.impl_id, ""))

    async def balance(self, account: str) -> BalanceView:
        self.asked.append(("balance", account))
        return BalanceView(
            account=account,
            balance=Money(amount_cents=self.balance_cents),
            launch_floor=Money(amount_cents=self.floor_cents),
            stop_reason=self.stop_reason,
        )

    async def price(self, query: PriceModelCalls) -> ModelCallPrices:
        self.asked.append(query)
        if self.price_problem is not None:
            return ModelCallPrices(problem=self.price_problem)
        return ModelCallPrices(micros=[1_000_000, 2_000_000, 3_000_000], source="operator")

    async def provider_keys(self, query: CheckProviderKeys) -> ProviderKeys:
        self.asked.append(query)
        missing = {i: "no key" for i, sut in enumerate(query.suts) if sut.provider in self.keyless}
        return ProviderKeys(missing=missing)

    async def send(self, command: Contract) -> None:
        self.sent.append(command)
        self.react(command, self)

    async def run(self, run_id: str) -> RunRow | None:
        return self.runs.get(run_id)

    async def latest_outcomes(self, run_id: str) -> dict[int, tuple[str, str]]:
        return self.outcomes.get(run_id, {})

    async def recorded_outputs(self, run_id: str) -> int:
        return sum(1 for _, outcome in self.outcomes.get(run_id, {}).values() if outcome != "err")

    async def wait_for_run(
        self, run_id: str, until: Callable[[RunRow | None], bool] | None = None, tries: int = 100
    ) -> RunRow | None:
        row = self.runs.get(run_id)
        if until is None:
            return row
        return row if until(row) else None

    async def show(self, row: RunRow) -> Run:
        return Run.model_validate(render_run(row, None, BASE_URL))

    async def defaults(self, account: str) -> dict[str, Any]:
        self.asked.append(("defaults", account))
        return self.settings.get(account, {})

    async def find_launch(self, account: str, key: str) -> Record | None:
        return self.records.get((account, key))

    async def remember_launch(
        self, account: str, key: str, body_sha256: str, run_id: str
    ) -> Record:
        return self.records.setdefault((account, key), Record(run_id, body_sha256))

    def launched(self) -> list[LaunchRun]:
        return [c for c in self.sent if isinstance(c, LaunchRun)]


def run_row(run_id: str = "run_parent", **columns: Any) -> RunRow:
    row: RunRow = {
        "run_id": run_id,
        "account": ACCOUNT,
        "status": "ok",
        "halted": 0,
        "halt_reason": None,
        "benchmark_id": "gsm8k",
        "benchmark_name": "GSM8K",
        "subset_id": "snap_1",
        "subset_slug": "test",
        "impl_id": "gsm8k:abc",
        "model": json.dumps(SUT),
        "metadata": json.dumps({"team": "a"}),
        "limits": json.dumps({"run": {"cost": 2.0}}),
        "driver": "builtin",
        "last_seq": 7,
        "visibility": "private",
    }
    return {**row, **columns}


def gsm8k(**resolution: Any) -> BenchmarkResolution:
    found = {
        "benchmark_id": "gsm8k",
        "benchmark_name": "GSM8K",
        "subset_id": "snap_1",
        "subset_slug": "test",
        "impl_id": "gsm8k:abc",
    }
    return BenchmarkResolution(**{**found, **resolution})


def body(**fields: Any) -> LaunchRequest:
    return LaunchRequest.model_validate(fields)


async def refused(call: Any) -> Refused:
    with pytest.raises(Refused) as caught:
        await call
    return caught.value


# -- resolution --------------------------------------------------------------------------
async def test_a_pinned_launch_sends_what_the_registry_resolves() -> None:
    ports = FakePorts(benchmarks={"GSM8K": gsm8k()})
    launched = await launching.launch(
        ports, ACCOUNT, body(benchmark="GSM8K", subset="test", impl="gsm8k:abc", sut=SUT), None
    )
    (command,) = ports.launched()
    assert (command.mode, command.benchmark_id, command.subset_id) == ("pinned", "gsm8k", "snap_1")
    assert (command.subset_slug, command.impl_id, command.account) == ("test", "gsm8k:abc", ACCOUNT)
    (query,) = [q for q in ports.asked if isinstance(q, ResolveBenchmark)]
    assert (query.benchmark, query.subset, query.impl) == ("GSM8K", "test", "gsm8k:abc")
    # Not in the view yet: the answer is the run the command will make.
    assert not launched.repeated
    assert launched.run.id == command.run_id and launched.run.status == "running"
    assert launched.run.benchmark is not None and launched.run.benchmark.id == "gsm8k"
    assert launched.run.model is not None and launched.run.model.model == "m"


async def test_a_launch_names_its_judge_or_panel_and_a_keyless_one_is_refused() -> None:
    ports = FakePorts(benchmarks={"GSM8K": gsm8k()}, keyless=("together",))
    judge = {"model": "j", "provider": "openrouter"}
    await launching.launch(ports, ACCOUNT, body(benchmark="GSM8K", sut=SUT, judge=judge), None)
    panel = [judge, {"model": "k", "provider": "local"}]
    await launching.launch(ports, ACCOUNT, body(benchmark="GSM8K", sut=SUT, judge=panel), None)
    one, two = ports.launched()
    assert [j.model for j in one.judges or []] == ["j"]
    assert [j.model for j in two.judges or []] == ["j", "k"]

    keyless = {"model": "llama", "provider": "together"}
    alone = body(benchmark="GSM8K", sut=SUT, judge=keyless)
    refusal = await refused(launching.launch(ports, ACCOUNT, alone, None))
    assert (refusal.status, refusal.field, refusal.code) == (
        422,
        "judge.provider",
        "missing_credentials",
    )
    in_panel = body(benchmark="GSM8K", sut=SUT, judge=[judge, keyless])
    refusal = await refused(launching.launch(ports, ACCOUNT, in_panel, None))
    assert refusal.field == "judge[1].provider"
    assert len(ports.launched()) == 2  # nothing more was sent

    with pytest.raises(ValueError, match="1 to 5 judges"):
        body(benchmark="GSM8K", sut=SUT, judge=[judge] * 6)
    with pytest.raises(ValueError, match="each judge once"):
        body(benchmark="GSM8K", sut=SUT, judge=[judge, judge])


async def test_the_subset_s_defaults_fill_trials_and_bound_each_task() -> None:
    resolution = gsm8k(default_trials={"plan": {"k": 3}}, task_timeout_s=60.0)
    ports = FakePorts(benchmarks={"GSM8K": resolution})
    await launching.launch(ports, ACCOUNT, body(benchmark="GSM8K", sut=SUT), None)
    wide = body(benchmark="GSM8K", sut=SUT, limits={"task": {"duration": 600}})
    narrow = body(
        benchmark="GSM8K", sut=SUT, limits={"task": {"duration": 30}}, trials={"plan": {"k": 2}}
    )
    await launching.launch(ports, ACCOUNT, wide, None)
    await launching.launch(ports, ACCOUNT, narrow, None)
    first, second, third = ports.launched()
    assert first.trials == {"plan": {"k": 3}}
    assert first.limits["task"]["duration"] == 60.0
    assert second.limits["task"]["duration"] == 60.0  # the subset's bound is narrower
    assert third.limits["task"]["duration"] == 30.0  # the launch's is
    assert third.trials["plan"] == {"k": 2}


async def test_a_benchmark_the_registry_does_not_know_is_its_404() -> None:
    ports = FakePorts()
    refusal = await refused(launching.launch(ports, ACCOUNT, body(benchmark="Nope", sut=SUT), None))
    # The registry named no code: a resolution's problem is a not_found.
    assert (refusal.status, refusal.field, refusal.code) == (404, "benchmark", "not_found")
    assert ports.sent == []


async def test_the_account_s_defaults_fill_what_the_body_leaves_out() -> None:
    settings = {"default_driver": "litellm", "default_limits": {"run": {"cost": 5.0}}}
    ports = FakePorts(benchmarks={"GSM8K": gsm8k()}, settings={ACCOUNT: settings})
    await launching.launch(ports, ACCOUNT, body(benchmark="GSM8K", sut=SUT), None)
    await launching.launch(ports, ACCOUNT, body(request="gsm8k on m", driver="builtin"), None)
    defaulted, chosen = ports.launched()
    assert (defaulted.driver, defaulted.limits) == ("litellm", {"run": {"cost": 5.0}})
    assert (chosen.mode, chosen.request, chosen.driver) == (
        "natural_language",
        "gsm8k on m",
        "builtin",
    )


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"request": "r", "benchmark": "b", "sut": SUT}, "request"),
        ({"benchmark": "b", "replay": {"from_run": "r"}, "sut": SUT}, "replay"),
        ({}, "request"),
        ({"subset": "s", "request": "r"}, "subset"),
        ({"benchmark": "b"}, "sut"),
        ({"replay": {"from_run": "r"}, "hints": "be brief"}, "hints"),
        ({"request": "r", "driver": "builtin", "phase_models": {"find": "a://b"}}, "phase_models"),
    ],
)
async def test_a_body_is_checked_before_anything_is_asked(
    fields: dict[str, Any], field: str
) -> None:
    ports = FakePorts(benchmarks={"b": gsm8k()})
    refusal = await refused(launching.launch(ports, ACCOUNT, body(**fields), None))
    assert (refusal.status, refusal.field) == (400, field)
    assert ports.asked == [] and ports.sent == []


# -- funds -------------------------------------------------------------------------------
async def test_an_account_under_its_floor_is_refused_before_anything_is_resolved() -> None:
    ports = FakePorts(benchmarks={"GSM8K": gsm8k()}, billing_enforced=True, balance_cents=40)
    refusal = await refused(
        launching.launch(ports, ACCOUNT, body(benchmark="GSM8K", sut=SUT), None)
    )
    assert (refusal.status, refusal.code, refusal.field) == (402, "insufficient_balance", None)
    assert refusal.detail is not None and "at least 100 cents (you have 40)" in refusal.detail
    assert ports.asked == [("balance", ACCOUNT)] and ports.sent == []


async def test_a_stopped_account_is_refused_whatever_its_balance() -> None:
    ports = FakePorts(billing_enforced=True, balance_cents=10_000, stop_reason="monthly_cap")
    refusal = await refused(launching.launch(ports, ACCOUNT, body(request="r"), None))
    assert refusal.code == "insufficient_balance"
    assert refusal.detail is not None and "; monthly_cap)" in refusal.detail


async def test_billing_is_not_asked_where_it_is_not_enforced() -> None:
    ports = FakePorts(balance_cents=0)
    await launching.launch(ports, ACCOUNT, body(request="r"), None)
    assert ("balance", ACCOUNT) not in ports.asked
    assert len(ports.launched()) == 1


# -- idempotency -------------------------------------------------------------------------
async def test_a_key_launches_once_and_another_body_under_it_is_409() -> None:
    ports = FakePorts()
    first = await launching.launch(ports, ACCOUNT, body(request="r"), "k1")
    again = await launching.launch(ports, ACCOUNT, body(request="r"), "k1")
    assert len(ports.launched()) == 1
    assert again.repeated and again.run.id == first.run.id
    # Not read yet: the answer names the run and its status only.
    assert again.run.model_dump(exclude_unset=True) == {
        "id": first.run.id,
        "object": "run",
        "status": "running",
        "display_status": "running",
    }
    ports.runs[first.run.id] = run_row(first.run.id, status="running")
    shown = await launching.launch(ports, ACCOUNT, body(request="r"), "k1")
    assert shown.repeated and shown.run.etag == f"{first.run.id}.7"
    refusal = await refused(launching.launch(ports, ACCOUNT, body(request="other"), "k1"))
    assert (refusal.status, refusal.code) == (409, "idempotency_key_reused")


async def test_a_fork_inherits_its_parent_s_choices() -> None:
    ports = FakePorts(runs={"run_parent": run_row()})
    fork = ForkRequest(description="try harder", from_phase="fetch", idempotency_key="k2")
    launched = await launching.fork(ports, ACCOUNT, "run_parent", fork, None)
    (command,) = ports.launched()
    assert (command.mode, command.parent_run_id, command.idempotency_key) == (
        "fork",
        "run_parent",
        "k2",
    )
    assert command.fork == {"description": "try harder", "from_phase": "fetch"}
    assert (command.driver, command.limits, command.metadata) == (
        "builtin",
        {"run": {"cost": 2.0}},
        {"team": "a"},
    )
    assert launched.run.derived_from == "run_parent"
    stranger = await refused(launching.fork(ports, "acct_b", "run_parent", fork, None))
    assert (stranger.status, stranger.field) == (404, "run_id")


# -- replay ------------------------------------------------------------------------------
OUTCOMES = {0: ("q0", "pass"), 1: ("q1", "fail"), 2: ("q2", "error"), 3: ("q3", "pass")}


async def test_a_replay_slice_names_the_parent_s_rows() -> None:
    ports = FakePorts(outcomes={"run_parent": OUTCOMES})
    assert await slice_indices(ports, ports, "run_parent", None, False, None) is None
    assert await slice_indices(ports, ports, "run_parent", ["q3", "q1"], False, None) == [1, 3]
    assert await slice_indices(ports, ports, "run_parent", None, True, None) == [1, 2]
    assert await slice_indices(ports, ports, "run_parent", ["q0", "q1"], True, None) == [1]


async def test_unknown_task_ids_are_named_five_at_a_time() -> None:
    ports = FakePorts(outcomes={"run_parent": OUTCOMES})
    wanted = ["q0", *(f"x{i}" for i in range(7))]
    refusal = await refused(slice_indices(ports, ports, "run_parent", wanted, False, None))
    assert (refusal.status, refusal.field, refusal.code) == (
        400,
        "replay.task_ids",
        "invalid_argument",
    )
    assert refusal.detail == "run run_parent has no tasks x0, x1, x2, x3, x4 (and 2 more)"


async def test_a_slice_on_a_newer_snapshot_finds_its_new_rows_page_by_page() -> None:
    rows = [{"task_id": f"q{i}"} for i in range(ROWS_PER_QUERY + 50)]
    ports = FakePorts(
        outcomes={"run_parent": OUTCOMES},
        subsets={"snap_2": Subset("b", "s", "snap_2", rows, rolling=True)},
    )
    wanted = ["q1", f"q{ROWS_PER_QUERY + 10}"]
    assert await slice_indices(ports, ports, "run_parent", wanted, False, "snap_2") == [
        1,
        ROWS_PER_QUERY + 10,
    ]
    pages = [q.offset for q in ports.asked if isinstance(q, GetSubsetRows)]
    assert pages == [0, ROWS_PER_QUERY]
    refusal = await refused(slice_indices(ports, ports, "run_parent", ["q999"], False, "snap_2"))
    assert refusal.detail == "subset snap_2 has no tasks q999"


async def test_row_indices_stop_at_the_end_of_the_rows() -> None:
    rows = [{"task_id": "a"}, {}, {"task_id": "c"}]  # a row without an id is its index
    ports = FakePorts(subsets={"snap": Subset("b", "s", "snap", rows)})
    assert await row_indices(ports, "snap", {"c", "1", "zz"}) == {"c": 2, "1": 1}
    assert len([q for q in ports.asked if isinstance(q, GetSubsetRows)]) == 1
    assert await row_indices(ports, "gone", {"a"}) == {}


async def test_a_replay_runs_on_the_current_snapshot_of_a_rolling_subset() -> None:
    ports = FakePorts(
        runs={"run_parent": run_row(subset_id="snap_1")},
        outcomes={"run_parent": OUTCOMES},
        subsets={"snap_1": Subset("b", "s", "snap_2", [], rolling=True)},
    )
    replay = {"from_run": "run_parent", "task_ids": ["q2"]}
    await launching.launch(ports, ACCOUNT, body(replay=replay, sut=SUT), None)
    (command,) = ports.launched()
    assert (command.mode, command.parent_run_id, command.subset_id) == (
        "replay",
        "run_parent",
        "snap_2",
    )
    assert command.replay == {"indices": [2], "task_ids": ["q2"], "only_failed": False}
    assert ("defaults", ACCOUNT) not in ports.asked  # a replay keeps its parent's choices


async def test_current_snapshot_is_none_where_the_parent_s_rows_still_hold() -> None:
    ports = FakePorts(
        subsets={
            "frozen": Subset("b", "s", "frozen_2", []),
            "same": Subset("b", "s", "same", [], rolling=True),
            "old": Subset("b", "s", "new", [], rolling=True),
        }
    )
    assert await current_snapshot(ports, ACCOUNT, None) is None
    assert ports.asked == []
    assert await current_snapshot(ports, ACCOUNT, "frozen") is None
    assert await current_snapshot(ports, ACCOUNT, "same") is None
    assert await current_snapshot(ports, ACCOUNT, "unreadable") is None
    assert await current_snapshot(ports, ACCOUNT, "old") == "new"


async def test_a_replay_needs_the_caller_s_parent_with_a_scorer() -> None:
    ports = FakePorts(runs={"mine": run_row("mine", impl_id=None), "theirs": run_row("theirs")})
    ports.runs["theirs"]["account"] = "acct_b"
    missing = await refused(
        launching.launch(ports, ACCOUNT, body(replay={"from_run": "theirs"}), None)
    )
    assert (missing.status, missing.field, missing.detail) == (
        404,
        "replay.from_run",
        "no run 'theirs'",
    )
    early = await refused(launching.launch(ports, ACCOUNT, body(replay={"from_run": "mine"}), None))
    assert (early.status, early.code) == (409, "replay_source_not_ready")
    assert ports.sent == []


# -- steering ----------------------------------------------------------------------------
def unhalt(command: Contract, ports: FakePorts) -> None:
    if isinstance(command, ResolveRunHalt):
        ports.runs[command.run_id] = {
            **ports.runs[command.run_id],
            "halted": 0,
            "halt_reason": None,
        }
    if isinstance(command, DeleteRun):
        del ports.runs[command.run_id]


async def test_only_an_operator_pause_resumes() -> None:
    paused = run_row("p", status="running", halted=1, halt_reason="operator_pause: lunch")
    review = run_row("r", status="running", halted=1, halt_reason="agent_review: which subset?")
    ports = FakePorts(runs={"p": paused, "r": review}, react=unhalt)
    shown = await steering.resume(ports, ACCOUNT, "p")
    assert not shown.halted and shown.display_status == "running"
    (command,) = ports.sent
    assert isinstance(command, ResolveRunHalt) and command.action == "resume"
    refusal = await refused(steering.resume(ports, ACCOUNT, "r"))
    assert (refusal.status, refusal.code) == (409, "not_paused")
    assert refusal.detail is not None and "PATCH review_resolution" in refusal.detail


async def test_a_review_is_answered_and_a_stale_etag_refused() -> None:
    review = run_row("r", status="running", halted=1, halt_reason="agent_review: which subset?")
    ports = FakePorts(runs={"r": review}, react=unhalt)
    stale = await refused(
        steering.update(ports, ACCOUNT, "r", RunPatch(review_resolution="test"), '"r.3"')
    )
    assert (stale.status, stale.field, stale.code) == (412, "If-Match", "precondition_failed")
    shown = await steering.update(ports, ACCOUNT, "r", RunPatch(review_resolution="test"), '"r.7"')
    assert not shown.halted
    (command,) = ports.sent
    assert isinstance(command, ResolveRunHalt) and command.resolution == "test"
    again = await refused(
        steering.update(ports, ACCOUNT, "r", RunPatch(review_resolution="x"), None)
    )
    assert (again.status, again.code) == (409, "not_waiting")


async def test_an_unfinished_run_cannot_be_public() -> None:
    ports = FakePorts(runs={"r": run_row("r", status="running")})
    refusal = await refused(
        steering.update(ports, ACCOUNT, "r", RunPatch(visibility="public"), None)
    )
    assert (refusal.field, refusal.code) == ("visibility", "not_publishable")
    await steering.update(
        ports, ACCOUNT, "r", RunPatch(visibility="unlisted", metadata={"x": 1}), None
    )
    (command,) = ports.sent
    assert isinstance(command, UpdateRun)
    assert (command.visibility, command.metadata) == ("unlisted", {"x": 1})


async def test_a_delete_waits_for_the_run_to_go() -> None:
    ports = FakePorts(runs={"r": run_row("r")}, react=unhalt)
    deleted = await steering.delete(ports, ACCOUNT, "r")
    assert deleted.model_dump() == {"id": "r", "object": "run", "deleted": True}
    assert "r" not in ports.runs
    gone = await refused(steering.delete(ports, ACCOUNT, "r"))
    assert (gone.status, gone.field) == (404, "run_id")


# -- estimate ----------------------------------------------------------------------------
async def test_a_replay_is_estimated_from_its_parent() -> None:
    rows = [{"task_id": f"q{i}", "input": "x" * 40} for i in range(10)]
    ports = FakePorts(
        runs={"run_parent": run_row(selected_tasks=10)},
        subsets={"snap_1": Subset("gsm8k", "test", "snap_1", rows)},
    )
    found = await estimating.estimate(ports, ACCOUNT, body(replay={"from_run": "run_parent"}))
    assert (found.tasks, found.trials, found.priced_by) == (10, 1, "operator")
    assert (found.model.model, found.model.provider) == ("m", "local")
    assert [found.cost.low.amount_usd, found.cost.high.amount_usd] == [1.0, 3.0]
    (priced,) = [q for q in ports.asked if isinstance(q, PriceModelCalls)]
    assert priced.sut.model == "m"
    assert ports.sent == []  # nothing launched


JUDGED_CODE = """
from bench_task import BenchTask

# -- settings: grading --
JUDGE_MAX_TOKENS = 64
# -- end of settings --
TEMPLATE = "Grade the answer against the reference. End with GRADE: C, P or I."


class Task(BenchTask):
    def solve(self, index, input):
        return self.complete(input, max_tokens=16)

    def score(self, index, output, expected):
        return {"score": 1.0, "grade": self.judge(TEMPLATE + output)}
"""


async def test_a_judged_scorer_is_estimated_with_its_judges_calls() -> None:
    rows = [{"task_id": f"q{i}", "input": "x" * 40} for i in range(10)]
    ports = FakePorts(
        benchmarks={"GSM8K": gsm8k()},
        subsets={"snap_1": Subset("gsm8k", "test", "snap_1", rows)},
        impls={"gsm8k:abc": JUDGED_CODE},
    )
    judge = {"model": "grader", "provider": "local"}
    found = await estimating.estimate(
        ports, ACCOUNT, body(benchmark="GSM8K", sut=SUT, judge=judge, metadata={"limit": 10})
    )
    assert found.judge is not None
    assert [j.model for j in found.judge.judges] == ["grader"]
    assert found.judge.calls.model_dump() == {"low": 10, "expected": 10, "high": 20}
    assert found.judge.completion_tokens.high == 20 * 64  # JUDGE_MAX_TOKENS bounds it
    judged = [q for q in ports.asked if isinstance(q, PriceModelCalls) and q.sut.model == "grader"]
    assert len(judged) == 1
    assert found.judge.cost.high.amount_usd == 3.0  # the fake proxy's price
    # The scorer without a judge named: refused, as its launch would be.
    unjudged = body(benchmark="GSM8K", sut=SUT)
    refusal = await refused(estimating.estimate(ports, ACCOUNT, unjudged))
    assert (refusal.status, refusal.field, refusal.code) == (422, "judge", "judge_required")
    refusal = await refused(launching.launch(ports, ACCOUNT, unjudged, None))
    assert refusal.field == "judge"
    assert not ports.launched()


async def test_an_estimate_refuses_a_request_and_raises_a_service_s_problem() -> None:
    ports = FakePorts(
        benchmarks={"GSM8K": gsm8k()},
        subsets={"snap_1": Subset("gsm8k", "test", "snap_1", [{"task_id": "q"}])},
        price_problem=Problem(status=400, title="unknown model", field="sut", extra={"code": "x"}),
    )
    plain = await refused(estimating.estimate(ports, ACCOUNT, body(request="gsm8k", sut=SUT)))
    assert (plain.status, plain.field) == (400, "request")
    priced = await refused(estimating.estimate(ports, ACCOUNT, body(benchmark="GSM8K", sut=SUT)))
    assert (priced.status, priced.title, priced.field, priced.code) == (
        400,
        "unknown model",
        "sut",
        "x",
    )


# -- the answer's type -------------------------------------------------------------------
def test_the_run_model_says_exactly_what_the_renderer_writes() -> None:
    full = run_row(
        trials=json.dumps({"plan": {"k": 3}}),
        summary=json.dumps({"total": 2, "passed": 1}),
        error_type="driver_error",
        detail="it broke",
        created_at="2025-01-02T03:04:05+00:00",
        selected_tasks=2,
        substituted_for="gsm-8k",
    )
    sparse = {
        "run_id": "r",
        "status": "running",
        **{k: None for k in ("benchmark_id", "benchmark_name", "subset_id", "subset_slug")},
    }
    cost = RunCost(run_id="run_parent", model_micros=1_234_567, model_calls=3)
    for rendered in (render_run(full, cost, BASE_URL), render_run(sparse, None, BASE_URL)):
        wire = json.loads(json.dumps(rendered))
        run = Run.model_validate(rendered)
        assert run.model_dump(mode="json", by_alias=True, exclude_unset=True) == wire
        # Same order (the expansions of ``GET ?expand=`` are fields too, unset here).
        assert list(run.model_dump(mode="json", by_alias=True, exclude_unset=True)) == list(wire)


def test_the_ports_fake_is_every_port() -> None:
    ports: LaunchPorts = FakePorts()  # mypy holds the fake to the Protocol
    assert ports.billing_enforced is False
