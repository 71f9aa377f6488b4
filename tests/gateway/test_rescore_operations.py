"""``operations.rescore`` over fake ports: the command a rescore sends, and each refusal
naming its field (decision 0062)."""

from dataclasses import dataclass

import pytest

from benchwright_gateway.operations import rescore as rescoring
from benchwright_gateway.requests import RescoreRequest
from benchwright_shared.contracts import BenchmarkResolution, Problem, ResolveBenchmark
from tests.gateway.test_launch_operations import ACCOUNT, FakePorts, gsm8k, refused, run_row

LENIENT = "gsm8k:lenient"


@dataclass
class Ports(FakePorts):
    """The registry knows two impls of the parent's subset, the official and LENIENT."""

    async def resolve(self, query: ResolveBenchmark) -> BenchmarkResolution:
        self.asked.append(query)
        if query.impl not in ("gsm8k:abc", LENIENT):
            problem = Problem(status=404, title="impl not found", field="impl", detail="no")
            return BenchmarkResolution(problem=problem)
        return gsm8k(impl_id=query.impl)


def ports(**parent: object) -> Ports:
    return Ports(
        runs={"run_parent": run_row(**parent)},
        outcomes={"run_parent": {0: ("t0", "pass"), 1: ("t1", "err")}},
        keyless=("together",),
    )


def rescore(impl: str = LENIENT, **fields: object) -> RescoreRequest:
    return RescoreRequest.model_validate({"impl": impl, **fields})


async def test_a_rescore_sends_a_rescore_of_the_parent_with_the_impl_and_judge() -> None:
    fake = ports()
    judge = {"model": "j", "provider": "openrouter"}
    launched = await rescoring.rescore(fake, ACCOUNT, "run_parent", rescore(judge=judge), "key-1")
    (command,) = fake.launched()
    assert (command.mode, command.parent_run_id, command.impl_id) == (
        "rescore",
        "run_parent",
        LENIENT,
    )
    assert [j.model for j in command.judges or []] == ["j"]
    assert command.sut is None and command.subset_id is None  # the parent's, in its log
    assert command.limits == {"run": {"cost": 2.0}} and command.metadata == {"team": "a"}
    (query,) = [q for q in fake.asked if isinstance(q, ResolveBenchmark)]
    assert (query.benchmark, query.subset, query.impl) == ("gsm8k", "test", LENIENT)
    again = await rescoring.rescore(fake, ACCOUNT, "run_parent", rescore(judge=judge), "key-1")
    assert again.repeated and again.run.id == launched.run.id and len(fake.launched()) == 1
    # No judge named: the parent's judges (the orchestrator takes them).
    await rescoring.rescore(fake, ACCOUNT, "run_parent", rescore(), None)
    assert fake.launched()[-1].judges is None


@pytest.mark.parametrize(
    ("parent", "body", "status", "field", "code"),
    [
        ({"account": "acct_other"}, {}, 404, "run_id", None),
        ({"status": "running"}, {}, 409, "run_id", "rescore_source_not_finished"),
        ({"status": "error"}, {}, 409, "run_id", "rescore_source_not_finished"),
        (
            {"metadata": '{"inspect_harness": {"task": "t.py"}}'},
            {},
            422,
            "run_id",
            "not_rescorable",
        ),
        ({}, {"impl": "other:123"}, 422, "impl", "impl_not_in_subset"),
        (
            {},
            {"judge": {"model": "llama", "provider": "together"}},
            422,
            "judge.provider",
            "missing_credentials",
        ),
    ],
)
async def test_refusals_name_the_field(
    parent: dict[str, object], body: dict[str, object], status: int, field: str, code: str | None
) -> None:
    fake = ports(**parent)
    refusal = await refused(rescoring.rescore(fake, ACCOUNT, "run_parent", rescore(**body), None))
    assert (refusal.status, refusal.field) == (status, field)
    if code is not None:
        assert refusal.code == code
    assert fake.launched() == []


async def test_a_parent_with_no_output_is_refused() -> None:
    fake = ports()
    fake.outcomes["run_parent"] = {0: ("t0", "err"), 1: ("t1", "err")}
    refusal = await refused(rescoring.rescore(fake, ACCOUNT, "run_parent", rescore(), None))
    assert (refusal.status, refusal.field, refusal.code) == (422, "run_id", "no_recorded_outputs")
