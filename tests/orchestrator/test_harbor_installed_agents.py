"""Harbor's installed agents through the bridge (``harbor:claude-code``), over real task
sandboxes (bubblewrap) and the run's real proxy (in process), offline.

The ``claude`` CLI is a fake (``tests/support/fake_claude.py``) in the operator's agent
directory, which the sandbox binds read-only: Harbor's ``claude-code`` runs it as it
runs Claude Code (nothing installed), pointed through the driver's relay at the proxy's
Anthropic endpoint, which asks a scripted model. Exactly the task the script solves
passes, each row carrying what the proxy charged for its calls; without the CLI every
attempt is an error row naming it.
"""

import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from benchwright_orchestrator.phases import PhaseContext
from benchwright_proxy.app import build
from benchwright_shared.contracts import ModelAttached, SutRef
from benchwright_shared.settings import Settings
from tests.orchestrator.bwrap_workspace import bwrap_usable
from tests.orchestrator.fakes import FakeStore
from tests.orchestrator.test_harbor_phase import context, harbor_run, swept
from tests.support.harbor_scripts import TASKS
from tests.support.scripted_agent_model import (
    INPUT_TOKENS_PER_MESSAGE,
    OUTPUT_TOKENS_PER_TURN,
    ScriptBook,
    ScriptedAgentServer,
    call,
    final,
)

pytestmark = [
    pytest.mark.skipif(not bwrap_usable(), reason="bubblewrap cannot make a sandbox"),
    pytest.mark.slow,
]

FAKE_CLAUDE = Path(__file__).resolve().parents[1] / "support" / "fake_claude.py"
# A micro-dollar a prompt token, two a completion token.
PRICES = {"openai_compatible/scripted": {"prompt_per_mtok": 1.0, "completion_per_mtok": 2.0}}
GREET = "printf 'Hello from Benchwright!\\n' > /app/greeting.txt"
SCRIPTS = {"greeting.txt": [call("bash", command=GREET), final("wrote the greeting")]}


@pytest.fixture
def agent_bin(tmp_path: Path) -> Path:
    directory = tmp_path / "agent-bin"
    directory.mkdir()
    shutil.copy(FAKE_CLAUDE, directory / "claude")
    (directory / "claude").chmod(0o755)
    return directory


@pytest.fixture
def model() -> Iterator[ScriptedAgentServer]:
    server = ScriptedAgentServer(ScriptBook(SCRIPTS, default=(final("nothing to do"),)))
    server.start()
    yield server
    server.stop()


@pytest.fixture
async def proxy(
    tmp_path: Path, model: ScriptedAgentServer
) -> AsyncIterator[tuple[str, str, list[Any]]]:
    """The run's proxy in front of the scripted model; what it metered, call by call."""
    settings = Settings(
        data_dir=tmp_path, proxy_port=0, nats_url=None, database_url=None, model_prices=PRICES
    )
    service = build(settings)
    metered: list[Any] = []
    record = service.runtime.record_usage

    def keep(call: Any) -> None:
        metered.append(call)
        record(call)

    service.runtime.record_usage = keep
    url = await service.runtime.serve_http()
    sut = SutRef(model="scripted", provider="openai_compatible", api_base=model.base_url)
    _, key = await service.runtime.bind(str(uuid.uuid4()), "acct", sut, None, (None, None))
    yield url, key, metered
    await service.stop()


def through(run: Any, proxy: tuple[str, str, list[Any]], **work: Any) -> PhaseContext:
    ctx = context(run, **work)
    url, key, _ = proxy
    ctx.work.model = ModelAttached(  # type: ignore[attr-defined]
        command_id="c",
        run_id=run.run_id,
        proxy_url=url,
        proxy_key=key,
        model_id="scripted",
        litellm_config_yaml="model_list: []\n",
    )
    return ctx


def spent(calls: int, messages: int) -> dict[str, int]:
    """What ``calls`` calls whose chat completions held ``messages`` messages in all cost."""
    prompt, completion = INPUT_TOKENS_PER_MESSAGE * messages, OUTPUT_TOKENS_PER_TURN * calls
    return {
        "calls": calls,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cost_micros": prompt + 2 * completion,
    }


async def test_claude_code_solves_what_its_model_says_through_the_proxy(
    agent_bin: Path, model: ScriptedAgentServer, proxy: tuple[str, str, list[Any]]
) -> None:
    ctx = through(harbor_run("harbor:claude-code"), proxy, agent_bin=agent_bin)
    rows = await swept(ctx)
    outcomes = {name: (r[0].outcome, r[0].score) for name, r in rows.items()}
    assert outcomes == {n: ("pass", 1.0) if n == "write-greeting" else ("fail", 0.0) for n in TASKS}
    # The greeting took two calls (system + user; then its tool result: four messages),
    # every other task one; each row carries what the proxy charged for them.
    for name, by_trial in rows.items():
        row = by_trial[0]
        expected = spent(2, 2 + 4) if name == "write-greeting" else spent(1, 2)
        assert {k: getattr(row, k) for k in expected} == expected, name
    _, _, metered = proxy
    assert len(metered) == len(model.requests) == len(TASKS) + 1
    assert sum(c.cost_micros for c in metered) == sum(r[0].cost_micros for r in rows.values())
    # Harbor ran the CLI as it runs Claude Code; the run's key went no further than the proxy.
    store = ctx.store
    assert isinstance(store, FakeStore)
    ran = [e.output for e in store.saved if type(e).__name__ == "AgentToolResult"]
    assert any("claude --verbose --output-format=stream-json" in o for o in ran)
    _, key, _ = proxy
    assert all(key not in str(r["headers"]) for r in model.requests)


async def test_without_the_cli_every_attempt_is_an_error_row_naming_it(
    proxy: tuple[str, str, list[Any]],
) -> None:
    assert shutil.which("claude", path="/usr/local/bin:/usr/bin:/bin") is None
    ctx = through(harbor_run("harbor:claude-code", task="write-greeting"), proxy)
    row = (await swept(ctx))["write-greeting"][0]
    assert (row.outcome, row.error_type) == ("err", "agent_unavailable")
    assert "'claude'" in row.error and "BW_AGENT_BIN_DIR" in row.error
