"""Sandbox lifecycle and cost rules."""

import uuid
from datetime import timedelta

import pytest

from benchwright_sandbox_manager.domain import (
    Sandbox,
    SandboxAlreadyKilledError,
    sandbox_cost_micros,
)


def test_cost_is_duration_times_rate_rounded_up() -> None:
    assert sandbox_cost_micros(1500, 100) == 150
    assert sandbox_cost_micros(1, 1) == 1  # a sliver of a second still costs
    assert sandbox_cost_micros(0, 100) == 0


def test_a_sandbox_is_killed_once() -> None:
    sandbox = Sandbox(
        sandbox_id=f"sbx_{uuid.uuid4()}",
        command_id="c",
        run_id="r",
        role="work",
        backend="local",
        metadata={"benchwright_role": "work"},
    )
    sandbox.kill("k1", "done", sandbox.created_on + timedelta(seconds=2), rate_micros_per_s=10)
    assert sandbox.killed
    killed = sandbox.collect_events()[-1]
    assert killed.duration_ms == 2000 and killed.cost_micros == 20  # type: ignore[attr-defined]
    with pytest.raises(SandboxAlreadyKilledError):
        sandbox.kill("k2", "again", sandbox.created_on, rate_micros_per_s=10)
