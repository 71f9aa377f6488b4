"""A rescore's plan and how its given outputs are cut into sweeps (decision 0062)."""

from benchwright_orchestrator.phases.materialize import GIVEN_BYTES, _parts
from benchwright_orchestrator.plan import plan_phases


def test_a_rescore_sets_up_its_scorer_and_sweeps() -> None:
    assert plan_phases("rescore", has_impl=True) == ["setup", "attach", "materialize", "report"]


def test_given_outputs_go_in_sweeps_under_the_bus_cap() -> None:
    pairs = [(i, t) for i in range(5) for t in range(2)]
    given = {p: "x" * (GIVEN_BYTES // 4) for p in pairs}
    parts = _parts(pairs, given)
    assert [len(p) for p in parts] == [4, 4, 2]
    assert [p for part in parts for p in part] == pairs
    assert _parts(pairs, None) == [pairs]
    # One output over the cap still goes, alone.
    assert _parts([(0, 0), (1, 0)], {(0, 0): "x" * (GIVEN_BYTES + 1), (1, 0): "y"}) == [
        [(0, 0)],
        [(1, 0)],
    ]
