"""Which Materialize mode a run gets (concepts §4's order, and the operator's override).

How each mode runs, a halt's effect on task sandboxes included, is in test_materialize.py.
"""

import pytest

from benchwright_orchestrator.fanout import explain_materialize_mode, materialize_mode
from benchwright_shared.settings import Settings


@pytest.mark.parametrize(
    ("backend", "harness", "product_snapshot", "expected"),
    [
        # A product-sandbox run with a snapshot to restore: fanout, whatever else holds.
        ("local", None, True, "fanout"),
        ("sandbox0", "inspect", True, "fanout"),
        ("e2b", "harbor", True, "fanout"),
        # A harness bridge: sequential, even on e2b.
        ("e2b", "inspect", False, "sequential"),
        ("e2b", "lmeval", False, "sequential"),
        ("local", "harbor", False, "sequential"),
        # Our own harness is no bridge: the backend decides.
        ("e2b", "benchwright", False, "fanout"),
        ("e2b", None, False, "fanout"),
        # Everything else: sequential.
        ("local", None, False, "sequential"),
        ("sandbox0", None, False, "sequential"),
        ("sandbox0", "benchwright", False, "sequential"),
    ],
)
def test_the_mode_follows_the_runs_infrastructure_in_order(
    backend: str, harness: str | None, product_snapshot: bool, expected: str
) -> None:
    assert (
        materialize_mode(
            backend=backend, harness=harness, product_snapshot=product_snapshot, override="auto"
        )
        == expected
    )


@pytest.mark.parametrize("override", ["sequential", "fanout"])
@pytest.mark.parametrize(
    ("backend", "harness", "product_snapshot"),
    [
        ("local", None, False),
        ("e2b", None, False),
        ("local", None, True),
        ("e2b", "inspect", False),
    ],
)
def test_an_override_other_than_auto_wins(
    override: str, backend: str, harness: str | None, product_snapshot: bool
) -> None:
    mode, why = explain_materialize_mode(
        backend=backend, harness=harness, product_snapshot=product_snapshot, override=override
    )
    assert mode == override
    assert "BW_MATERIALIZE_MODE" in why


def test_every_choice_says_why_and_a_bad_override_is_refused() -> None:
    _, why = explain_materialize_mode(
        backend="local", harness=None, product_snapshot=False, override="auto"
    )
    assert "local" in why
    _, why = explain_materialize_mode(
        backend="e2b", harness="inspect", product_snapshot=False, override="auto"
    )
    assert "inspect" in why
    with pytest.raises(ValueError, match="override"):
        materialize_mode(backend="local", harness=None, product_snapshot=False, override="fan-out")


def test_the_setting_defaults_to_auto_and_reads_its_environment_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings().materialize_mode == "auto"
    monkeypatch.setenv("BW_MATERIALIZE_MODE", "fanout")
    assert Settings().materialize_mode == "fanout"
    monkeypatch.setenv("BW_MATERIALIZE_MODE", "fan-out")
    with pytest.raises(ValueError):
        Settings()
