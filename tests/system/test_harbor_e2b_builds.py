"""A Harbor run on e2b, end to end on the embedded platform against the fake of E2B
(decision 0058): each task's Dockerfile becomes an e2b template through the SDK's
template API, built once however many trials start from it, and every trial's
sandbox starts from its task's template. The fake lays in what each template's COPY
steps put there, so the oracle and the tests meet the task's files where the
Dockerfile put them."""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from benchwright import AsyncBenchwright
from benchwright_sandbox_manager.backends.e2b.templates import template_name
from benchwright_shared.agentic import environment_build, load_dataset
from tests.conftest import Platform, platform_settings
from tests.sandbox_manager.fakes.e2b_api import FakeE2B
from tests.support.harbor_scripts import DATASET_NAME, TASKS, dataset_files, starter_book
from tests.support.scripted_agent_model import ScriptedAgentServer
from tests.system.test_leaderboards import finish

pytestmark = [pytest.mark.slow, pytest.mark.connected, pytest.mark.embedded_only]

API_KEY = "e2b_fake_key_for_a_harbor_run"
HARBOR_DIRS = ("/app", "/logs", "/tests", "/solution")


@pytest.fixture(autouse=True)
def no_e2b_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("E2B_API_KEY", "E2B_API_URL", "E2B_SANDBOX_URL", "E2B_DOMAIN", "E2B_DEBUG"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def fake(tmp_path: Path) -> AsyncIterator[FakeE2B]:
    fake = await FakeE2B(tmp_path / "fake-e2b", API_KEY, vm_dirs=HARBOR_DIRS).start()
    yield fake
    await fake.close()


@pytest.fixture
def model() -> Any:
    server = ScriptedAgentServer(starter_book()).start()
    yield server
    server.stop()


@pytest.fixture
async def on_e2b(tmp_path: Path, fake: FakeE2B) -> AsyncIterator[AsyncBenchwright]:
    settings = platform_settings(tmp_path / "data", None, None).model_copy(
        update={"e2b_api_key": API_KEY, "e2b_api_url": fake.url, "e2b_sandbox_url": fake.url}
    )
    platform = await Platform(settings).start()
    assert platform.client is not None
    try:
        base_url = str(platform.client.base_url).rstrip("/")
        async with AsyncBenchwright(api_key=platform.token, base_url=base_url) as client:
            yield client
    finally:
        await platform.shutdown()


async def test_each_tasks_dockerfile_is_built_once_and_its_trials_start_from_it(
    on_e2b: AsyncBenchwright, fake: FakeE2B, model: ScriptedAgentServer
) -> None:
    harness: dict[str, Any] = {"dataset": DATASET_NAME, "files": dataset_files(), "agent": "oracle"}
    launched = await on_e2b.runs.launch(
        harness="harbor",
        sut={"model": "scripted", "provider": "openai_compatible", "api_base": model.base_url},
        metadata={"harbor_harness": harness},
        compute="e2b",
        trials={"plan": {"k": 2}, "aggregator": {"name": "mean"}},
    )
    run = await finish(on_e2b, launched.id)
    assert run.summary.passed == len(TASKS), run.summary
    # One build per task, whatever the trials.
    dataset = load_dataset(dataset_files(), dataset=DATASET_NAME)
    names = {template_name(environment_build(task)) for task in dataset.tasks.values()}
    assert sorted(name for name, _ in fake.templates.started) == sorted(names)
    # Every sandbox of the run started from one of them: two trials of each task.
    built = {fake.templates.by_name[name] for name in names}
    assert len(fake.started_from) == 2 * len(TASKS), fake.started_from
    assert set(fake.started_from) == built
