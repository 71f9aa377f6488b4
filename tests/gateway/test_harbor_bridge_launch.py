"""Launches of Harbor's own agents through the bridge (``agent: "harbor:<name>"``):
accepted for those the bridge runs (``harbor:claude-code`` and ``harbor:codex``
included: whether its CLI is in the sandbox is known there, an error row naming it
when it is not), refused naming ``agent`` for an installed-agent CLI the bridge
cannot point at the proxy, and for any of them when the ``harbor`` package is not
installed."""

import importlib.util

import pytest

from benchwright_gateway import harbor as gateway_harbor
from benchwright_gateway.operations import launch as launching
from tests.gateway.test_harbor_launch import harbor_body, nothing_written, without
from tests.gateway.test_launch_operations import ACCOUNT, FakePorts, body, refused

AGENT_FIELD = "metadata.harbor_harness.agent"


@pytest.mark.parametrize(
    "agent",
    ["harbor:oracle", "harbor:nop", "harbor:terminus-2", "harbor:claude-code", "harbor:codex"],
)
async def test_harbors_own_agents_launch_through_the_bridge(agent: str) -> None:
    ports = FakePorts()
    await launching.launch(ports, ACCOUNT, body(**harbor_body(harness={"agent": agent})), "k1")
    (command,) = ports.launched()
    assert command.harness is not None and command.harness["agent"] == agent


@pytest.mark.parametrize("agent", ["harbor:gemini-cli", "harbor:aider", "harbor:opencode"])
async def test_an_installed_agent_the_bridge_cannot_point_at_the_proxy_is_refused(
    agent: str,
) -> None:
    ports = FakePorts()
    launch = harbor_body(harness={"agent": agent})
    refusal = await refused(launching.launch(ports, ACCOUNT, body(**launch), "k1"))
    assert (refusal.status, refusal.field, refusal.code) == (
        400,
        AGENT_FIELD,
        "agent_unavailable",
    )
    assert refusal.detail is not None and "proxy" in refusal.detail
    assert nothing_written(ports)


async def test_a_refused_cli_is_told_the_installed_agents_the_bridge_runs() -> None:
    launch = harbor_body(harness={"agent": "harbor:gemini-cli"})
    refusal = await refused(launching.launch(FakePorts(), ACCOUNT, body(**launch), None))
    assert refusal.detail is not None
    assert "'harbor:claude-code'" in refusal.detail and "'harbor:codex'" in refusal.detail


async def test_without_the_harbor_package_the_bridge_refuses_naming_agent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "harbor" else found(name)
    )
    launch = harbor_body(harness={"agent": "harbor:oracle"})
    refusal = await refused(launching.launch(FakePorts(), ACCOUNT, body(**launch), None))
    assert (refusal.field, refusal.code) == (AGENT_FIELD, "agent_unavailable")
    assert refusal.detail is not None and "agents" in refusal.detail
    # The platform's own agents need no Harbor.
    ours = harbor_body(harness={"agent": "oracle"})
    ports = FakePorts()
    await launching.launch(ports, ACCOUNT, body(**ours), None)
    assert len(ports.launched()) == 1


async def test_harbors_oracle_needs_each_tasks_solution_and_bridge_agents_take_no_args() -> None:
    missing = harbor_body(without("fix-median/solution/solve.sh"), {"agent": "harbor:oracle"})
    refusal = await refused(launching.launch(FakePorts(), ACCOUNT, body(**missing), None))
    assert refusal.code == "missing_solution"
    args = harbor_body(harness={"agent": "harbor:terminus-2", "agent_args": {"max_turns": 3}})
    refusal = await refused(launching.launch(FakePorts(), ACCOUNT, body(**args), None))
    assert (refusal.field, refusal.code) == (
        "metadata.harbor_harness.agent_args.max_turns",
        "unknown_agent_arg",
    )


def test_the_gateway_and_the_orchestrator_know_the_same_bridge_agents() -> None:
    from benchwright_orchestrator.phases.harbor import AGENTS

    assert set(gateway_harbor.AGENTS) == set(AGENTS)
