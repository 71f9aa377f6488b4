"""An agent's transcript on the dashboard, live, in a real browser (Debian's Chromium
driven by Playwright; ``BW_REQUIRE_CHROMIUM=1`` fails instead of skipping).

A Harbor run of one task with the platform's own agent, its model the scripted
tool-calling server answering slowly. The task page is opened while the agent runs:
turns appear over the stream without a reload, and the finished page shows the exact
tool calls the script made, the tool's hostile output as text, how the attempt ended
and the verifier's outcome. Screenshots go to ``$BW_TEST_ARTIFACTS`` (else tmp).
"""

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from benchwright import AsyncBenchwright
from tests.conftest import Platform
from tests.support.harbor_scripts import DATASET_NAME, dataset_files
from tests.support.scripted_agent_model import ScriptBook, ScriptedAgentServer, call, final
from tests.system.test_dashboard_browser import CHROMIUM_FLAGS, chromium
from tests.system.test_leaderboards import finish

pytestmark = [pytest.mark.slow, pytest.mark.connected, pytest.mark.embedded_only]

TASK = "write-greeting"
HOSTILE = '<script>document.title="pwned"</script><img src=x onerror="document.title=1">'
# The tool's output carries markup; then the task is solved; then the agent stops.
PROBE = f"echo '{HOSTILE}' | tee probe.txt"
SCRIPT = [
    call("shell", command=PROBE),
    call("write_file", path="greeting.txt", content="Hello from Benchwright!\n"),
    final("wrote /app/greeting.txt"),
]
# Each answer takes this long: the page, opened at launch, sees turns arrive.
ANSWER_DELAY_S = 3.0
WAIT_MS = 120_000


@pytest.fixture
def model() -> Any:
    server = ScriptedAgentServer(ScriptBook({"greeting.txt": SCRIPT}), delay_s=ANSWER_DELAY_S)
    yield server.start()
    server.stop()


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("BW_TEST_ARTIFACTS") or tmp_path) / "transcript"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def test_the_transcript_fills_live_and_shows_what_the_agent_did(
    platform: Platform, bw: AsyncBenchwright, model: ScriptedAgentServer, screenshots: Path
) -> None:
    from playwright.async_api import async_playwright, expect

    executable = chromium()
    assert platform.client is not None
    base_url = str(platform.client.base_url).rstrip("/")
    login = json.loads((platform.settings.data_dir / "credentials.json").read_text())["login"]
    harness = {"dataset": DATASET_NAME, "files": dataset_files(), "agent": "benchwright"}
    launched = await bw.runs.launch(
        harness="harbor",
        sut={"model": "scripted", "provider": "openai_compatible", "api_base": model.base_url},
        metadata={"harbor_harness": harness, "harbor_task": TASK},
    )
    # One task: index 0 of the run's first sweep, a page before its row exists.
    task_url = f"{base_url}/runs/{launched.id}/tasks/t1_0"

    async with async_playwright() as driver:
        browser = await driver.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_FLAGS
        )
        page = await (await browser.new_context(viewport={"width": 1280, "height": 900})).new_page()
        violations: list[str] = []
        page.on(
            "console",
            lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None,
        )
        await page.goto(task_url)
        await page.fill("input[name=username]", login["username"])
        await page.fill("input[name=password]", login["password"])
        await page.click("button[type=submit]")
        for _ in range(200):  # the gateway's view follows the log: a moment behind
            if await page.locator("#transcript").count():
                break
            await asyncio.sleep(0.1)
            await page.goto(task_url)
        transcript = page.locator("#transcript")
        await expect(transcript).to_have_attribute("data-live", "yes")

        # -- live: a turn the page was not drawn with arrives over the stream ---------
        loads: list[str] = []
        page.on("load", lambda p: loads.append(p.url))
        drawn = await page.locator(".turn").count()
        assert drawn < len(SCRIPT), "the run was over before its page was open"
        await expect(page.locator(f"#attempt-0-1-turn-{drawn + 1}")).to_be_attached(timeout=WAIT_MS)
        assert loads == [], "the page reloaded to show a turn"
        await expect(page.locator("#attempt-0-1-head")).to_contain_text("running")
        # The shell's hostile output arrives over the stream too, as text; nothing ran.
        await expect(page.locator(".tool-output").first).to_contain_text(HOSTILE, timeout=WAIT_MS)
        assert loads == [], "the page reloaded to show a tool's result"
        assert await page.locator("#transcript script, #transcript img").count() == 0
        assert await page.title() == f"Task {TASK} · Benchwright"
        await page.screenshot(path=str(screenshots / "transcript-live.png"), full_page=True)

        # -- finished: the page is drawn again with the task's outcome ---------------
        run = await finish(bw, launched.id)
        assert run.summary.passed == run.summary.total == 1
        await expect(transcript).to_have_attribute("data-live", "no", timeout=WAIT_MS)
        await expect(page.locator(".verdict")).to_contain_text("pass", timeout=WAIT_MS)
        await expect(page.locator("h1 .outcome")).to_have_text("pass")
        await expect(page.locator(".turn")).to_have_count(len(SCRIPT))
        await expect(page.locator(".tool-name")).to_have_text(["shell", "write_file"])
        arguments = [
            json.loads(text) for text in await page.locator(".tool-args").all_inner_texts()
        ]
        assert arguments == [
            {"command": PROBE},
            {"content": "Hello from Benchwright!\n", "path": "greeting.txt"},
        ]
        # The tool's output is shown as the text it was, and nothing in it ran.
        await expect(page.locator(".tool-output").first).to_contain_text(HOSTILE)
        assert await page.locator("#transcript script, #transcript img").count() == 0
        assert await page.title() == f"Task {TASK} · Benchwright"
        await expect(page.locator(".said").last).to_have_text("wrote /app/greeting.txt")
        await expect(page.locator(".end-reason")).to_have_text("done")
        await expect(page.locator(".reward")).to_have_text("1.0")
        await expect(page.locator(".m-user pre")).to_contain_text("greeting.txt")
        assert not violations, violations
        await page.screenshot(path=str(screenshots / "transcript-finished.png"), full_page=True)
        await browser.close()
