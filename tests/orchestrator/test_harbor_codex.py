"""Harbor's ``codex`` through the bridge (``harbor:codex``), over real task sandboxes
(bubblewrap) and the run's real proxy (in process), offline.

The ``codex`` CLI is a fake (``tests/support/fake_codex.py``) in the operator's agent
directory, which the sandbox binds read-only: Harbor's ``codex`` agent runs it as it runs
Codex (nothing installed; its base URL in the ``config.toml`` Harbor writes), pointed at
the driver's relay and through it at the proxy's Responses endpoint, which asks a
scripted model. Exactly the task the script solves passes, each row carrying what the
proxy charged for its calls; without the CLI every attempt is an error row naming it.
"""

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.orchestrator.bwrap_workspace import bwrap_usable
from tests.orchestrator.fakes import FakeStore
from tests.orchestrator.test_harbor_installed_agents import GREET, proxy, spent, through
from tests.orchestrator.test_harbor_phase import harbor_run, swept
from tests.support.harbor_scripts import TASKS
from tests.support.scripted_agent_model import ScriptBook, ScriptedAgentServer, call, final

pytestmark = [
    pytest.mark.skipif(not bwrap_usable(), reason="bubblewrap cannot make a sandbox"),
    pytest.mark.slow,
]

__all__ = ["proxy"]  # the proxy fixture, in front of this module's model

FAKE_CODEX = Path(__file__).resolve().parents[1] / "support" / "fake_codex.py"
# Codex's shell tool under ``--enable unified_exec``, as the fake offers it.
SCRIPTS = {"greeting.txt": [call("exec_command", cmd=GREET), final("wrote the greeting")]}


@pytest.fixture
def agent_bin(tmp_path: Path) -> Path:
    directory = tmp_path / "agent-bin"
    directory.mkdir()
    shutil.copy(FAKE_CODEX, directory / "codex")
    (directory / "codex").chmod(0o755)
    return directory


@pytest.fixture
def model() -> Iterator[ScriptedAgentServer]:
    server = ScriptedAgentServer(ScriptBook(SCRIPTS, default=(final("nothing to do"),)))
    server.start()
    yield server
    server.stop()


async def test_codex_solves_what_its_model_says_through_the_proxy(
    agent_bin: Path, model: ScriptedAgentServer, proxy: tuple[str, str, list[Any]]
) -> None:
    ctx = through(harbor_run("harbor:codex"), proxy, agent_bin=agent_bin)
    rows = await swept(ctx)
    outcomes = {name: (r[0].outcome, r[0].score) for name, r in rows.items()}
    assert rows["write-greeting"][0].error is None, rows["write-greeting"][0].error
    assert outcomes == {n: ("pass", 1.0) if n == "write-greeting" else ("fail", 0.0) for n in TASKS}
    # The greeting took two calls (system + user; then the call and its output: four
    # messages), every other task one; each row carries what the proxy charged for them.
    for name, by_trial in rows.items():
        row = by_trial[0]
        expected = spent(2, 2 + 4) if name == "write-greeting" else spent(1, 2)
        assert {k: getattr(row, k) for k in expected} == expected, name
    _, key, metered = proxy
    assert len(metered) == len(model.requests) == len(TASKS) + 1
    assert sum(c.cost_micros for c in metered) == sum(r[0].cost_micros for r in rows.values())
    # Harbor ran the CLI as it runs Codex; the run's key went no further than the proxy.
    store = ctx.store
    assert isinstance(store, FakeStore)
    ran = [e.output for e in store.saved if type(e).__name__ == "AgentToolResult"]
    assert any("codex exec --dangerously-bypass-approvals-and-sandbox" in o for o in ran)
    assert any('"type": "turn.completed"' in o for o in ran)
    assert all(key not in str(r["headers"]) for r in model.requests)


async def test_without_the_cli_every_attempt_is_an_error_row_naming_it(
    proxy: tuple[str, str, list[Any]],
) -> None:
    assert shutil.which("codex", path="/usr/local/bin:/usr/bin:/bin") is None
    ctx = through(harbor_run("harbor:codex", task="write-greeting"), proxy)
    row = (await swept(ctx))["write-greeting"][0]
    assert (row.outcome, row.error_type) == ("err", "agent_unavailable")
    assert "'codex'" in row.error and "BW_AGENT_BIN_DIR" in row.error
