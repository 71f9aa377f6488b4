"""The dashboard in a real browser: Debian's Chromium driven by Playwright.

One platform, printing what ``benchwright up`` prints. The admin signs in with the
one-time link it printed, launches a run from the CLI, opens the ``dashboard:`` URL
the CLI printed and watches the heatmap fill over server-sent events (the model
holds most answers until the test lets them through), opens a task whose output
carries markup, compares with a second run, publishes it and finds it on the
subset's leaderboard. Another account signs in with the login form and finds the
run missing. Screenshots go to ``$BW_TEST_ARTIFACTS`` (else the test's tmp dir).
"""

import asyncio
import os
import re
import shutil
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from benchwright import AsyncBenchwright
from benchwright.cli import app
from tests.conftest import Platform, platform_settings
from tests.support.fake_openai import FakeOpenAIServer
from tests.system.test_authoring import TASK_IMPL, arithmetic
from tests.system.test_leaderboards import PASSWORD, new_account

pytestmark = [pytest.mark.slow, pytest.mark.connected]

# Without these Chromium keeps trying to reach Google's services from a machine
# that has no internet.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PAIRS = [(2, 3), (7, 5), (13, 29), (40, 2), (11, 11), (6, 1), (9, 9), (20, 22), (1, 1), (8, 4)]
ROWS = [
    {"task_id": f"sum-{a}-{b}", "input": {"a": a, "b": b}, "expected": str(a + b)} for a, b in PAIRS
]
# Answers let through before the gate opens: the page sees a part-filled heatmap.
EARLY_ANSWERS = 3
# This model's answer to 2 + 3 carries markup (no digits, so it still scores).
HOSTILE = (
    "The sum is 5 <img src=x onerror=\"document.title='pwned'\">"
    "<script>document.title='pwned'</script>"
)
WAIT_MS = 60_000


def chromium() -> str:
    """Debian's Chromium; the suite skips only where it cannot be had, never in CI."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI") or os.environ.get("BW_REQUIRE_CHROMIUM"):
        pytest.fail("chromium is missing on a CI machine: scripts/bootstrap.sh installs it")
    pytest.skip("chromium is not installed (apt-get install chromium; scripts/bootstrap.sh)")


class GatedModel:
    """The arithmetic model, holding every answer after the first few until ``open``."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.answered = 0
        self.lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        with self.lock:
            self.answered += 1
            early = self.answered <= EARLY_ANSWERS
        if not early:
            self.gate.wait(60)
        if "2 + 3?" in prompt:
            return HOSTILE
        return arithmetic(prompt)


def correct(prompt: str) -> str:
    found = re.search(r"What is (\d+) \+ (\d+)\?", prompt)
    return f"The sum is {int(found.group(1)) + int(found.group(2))}" if found else "?"


@pytest.fixture
async def platform_and_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> AsyncIterator[tuple[Platform, str]]:
    settings = platform_settings(tmp_path, None, None).model_copy(update={"task_concurrency": 1})
    running = await Platform(settings, quiet=False).start()
    # The banner is printed once the API listens, a moment after the credentials.
    printed = ""
    for _ in range(100):
        printed += capsys.readouterr().err
        if "sign in: " in printed:
            break
        await asyncio.sleep(0.05)
    link = re.search(r"sign in: (\S+)", printed)
    assert link, f"benchwright up printed no sign-in link: {printed!r}"
    yield running, link.group(1)
    await running.shutdown()


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("BW_TEST_ARTIFACTS") or tmp_path) / "dashboard"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def cli(*args: str) -> Any:
    # The platform shares this event loop: the CLI's blocking calls go to a thread.
    return await asyncio.to_thread(CliRunner().invoke, app, list(args))


async def test_the_dashboard_in_chromium(
    platform_and_link: tuple[Platform, str],
    screenshots: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    from playwright.async_api import async_playwright, expect

    executable = chromium()
    platform, link = platform_and_link
    assert platform.client is not None
    base_url = str(platform.client.base_url).rstrip("/")
    gated, right = GatedModel(), correct
    servers = [FakeOpenAIServer(gated, threaded=True).start(), FakeOpenAIServer(right).start()]
    try:
        async with AsyncBenchwright(api_key=platform.token, base_url=base_url) as bw:
            bm = await bw.benchmarks.create(name="Browser Sums", category="math")
            sub = await bw.benchmarks.subsets.create(benchmark=bm.id, slug="v1", tasks=ROWS)
            impl = await bw.impls.create(subset=sub.id, label="sums", code=TASK_IMPL)

            # -- the CLI launches and prints the run's page --------------------------
            monkeypatch.setenv("BW_PAT", platform.token)
            monkeypatch.setenv("BW_BASE_URL", base_url)
            monkeypatch.setenv("BW_CONFIG", str(tmp_path / "config.toml"))
            monkeypatch.chdir(tmp_path)
            launched = await cli(
                "run", "--benchmark", bm.id, "--subset", sub.id, "--impl", impl.id,
                "--model", "calc", "--api-base", servers[0].base_url, "--no-wait", "-o", "table",
            )  # fmt: skip
            assert launched.exit_code == 0, launched.output
            dashboard = re.search(r"dashboard: (\S+)", launched.stdout)
            assert dashboard, launched.stdout
            run_url = dashboard.group(1)
            run_id = run_url.rsplit("/", 1)[-1]
            assert run_url == f"{base_url}/runs/{run_id}"

            async with async_playwright() as driver:
                browser = await driver.chromium.launch(
                    executable_path=executable, headless=True, args=CHROMIUM_FLAGS
                )
                admin = await browser.new_context(viewport={"width": 1280, "height": 900})
                page = await admin.new_page()
                policy_violations: list[str] = []
                page.on(
                    "console",
                    lambda m: (
                        policy_violations.append(m.text)
                        if "Content Security Policy" in m.text
                        else None
                    ),
                )

                # -- signed out, the dashboard URL asks to sign in; the link signs in
                await page.goto(run_url)
                await expect(page.locator("h1")).to_have_text("Sign in")
                await page.goto(link)
                await page.click("#continue")
                await expect(page).to_have_url(f"{base_url}/runs")
                for _ in range(100):  # the runs view follows the log: a moment behind
                    if run_id[:8] in await page.locator("#runs").inner_text():
                        break
                    await asyncio.sleep(0.1)
                    await page.reload()
                await expect(page.locator("#runs")).to_contain_text(run_id[:8])
                cookies = await admin.cookies()
                session = next(c for c in cookies if c["name"] == "bw_session")
                assert session["httpOnly"] and session["sameSite"] == "Lax"

                # -- the live run page: part filled while the model holds answers ----
                loads: list[str] = []
                page.on("load", lambda p: loads.append(p.url))
                await page.goto(run_url)
                heatmap = page.locator("#heatmap")
                await expect(heatmap).to_have_attribute("data-live", "yes")
                # (Waits read attributes: the page's policy forbids evaluating strings.)
                await expect(heatmap).to_have_attribute(
                    "data-settled", re.compile(r"^[1-9]"), timeout=WAIT_MS
                )
                held = int(await heatmap.get_attribute("data-settled") or 0)
                assert 1 <= held <= EARLY_ANSWERS < len(ROWS)
                # The task the model holds was begun: it shows running, live.
                await expect(heatmap).to_have_attribute("data-inflight", "1", timeout=WAIT_MS)
                await page.screenshot(path=str(screenshots / "run-live.png"), full_page=True)

                # -- the buttons: pause parks the run, resume carries it on ----------
                await page.click("button.b-pause")
                await expect(page.locator(".notice")).to_have_text("Pause requested.")
                await expect(page.locator("#run-status")).to_have_text("paused", timeout=WAIT_MS)
                for _ in range(100):  # the button shows once the view has the halt
                    if await page.locator("button.b-resume").count():
                        break
                    await asyncio.sleep(0.1)
                    await page.reload()
                await page.click("button.b-resume")
                await expect(page.locator(".notice")).to_have_text("Resume requested.")
                await expect(page.locator("#run-status")).to_have_text("running", timeout=WAIT_MS)
                loads_before = len(loads)
                gated.gate.set()
                await expect(heatmap).to_have_attribute(
                    "data-settled", str(len(ROWS)), timeout=WAIT_MS
                )
                # Filled over the stream: the page was not reloaded to get there.
                assert len(loads) == loads_before
                await expect(page.locator("#run-status")).to_have_text("ok", timeout=WAIT_MS)
                await expect(page.locator("#heatmap")).to_have_attribute("data-live", "no")
                await expect(page.locator("[data-count=passed]")).to_have_text("9")
                await page.screenshot(path=str(screenshots / "run-finished.png"), full_page=True)

                # -- a task: the model's markup is text, and runs nothing ------------
                await page.click("text=sum-2-3")
                await expect(page.locator("h1")).to_contain_text("sum-2-3")
                await expect(page.locator(".task-fields")).to_contain_text(
                    "<script>document.title='pwned'</script>"
                )
                assert await page.title() != "pwned"
                assert await page.locator(".task-fields img").count() == 0
                await page.screenshot(path=str(screenshots / "task.png"), full_page=True)
                await page.go_back()
                await page.click("text=sum-13-29")
                await expect(page.locator(".task-fields")).to_contain_text("The sum is 43")

                # -- compare with a second run of the same tasks ---------------------
                sut = {"model": "right", "provider": "openai_compatible",
                       "api_base": servers[1].base_url}  # fmt: skip
                other = await bw.runs.launch(benchmark=bm.id, subset=sub.id, impl=impl.id, sut=sut)
                done = await bw.runs.wait(other.id, timeout=120, poll_interval=0.2)
                assert done.status == "ok", done.error
                await page.goto(run_url)
                await page.fill("input[name=b]", other.id)
                await page.click("button:has-text('Compare')")
                await expect(page.locator("#flips-fixed")).to_have_text("1")
                await expect(page.locator("#flips-regressed")).to_have_text("0")
                await expect(page.locator("#changes")).to_contain_text("sum-13-29")
                await page.screenshot(path=str(screenshots / "compare.png"), full_page=True)

                # -- publish the second run; it leads the subset's leaderboard -------
                await page.goto(f"{base_url}/runs/{other.id}")
                await page.click("button.b-publish")
                await expect(page.locator(".notice")).to_have_text("The run is public.")
                board = page.locator("#leaderboard")
                for _ in range(100):
                    await page.goto(f"{base_url}/registry/subsets/{sub.id}")
                    if "openai_compatible/right" in await board.inner_text():
                        break
                    await asyncio.sleep(0.2)
                await expect(board).to_contain_text("100.0%")
                await page.screenshot(path=str(screenshots / "leaderboard.png"), full_page=True)
                await page.goto(f"{base_url}/registry/impls/{impl.id}")
                await expect(page.locator("#scorer .kn").first).to_have_text("import")
                assert not policy_violations, policy_violations

                # -- another account signs in with the form; the run is not there ----
                await new_account(platform, "bob", ["runs:read"])
                stranger = await (await browser.new_context()).new_page()
                await stranger.goto(run_url)
                await stranger.fill("input[name=username]", "bob")
                await stranger.fill("input[name=password]", PASSWORD)
                await stranger.click("button[type=submit]")
                await expect(stranger.locator("h1")).to_contain_text("404")
                await expect(stranger.locator("#problem")).to_contain_text(run_id)
                await stranger.screenshot(path=str(screenshots / "not-found.png"))
                await browser.close()
        print(f"screenshots in {screenshots}")
    finally:
        gated.gate.set()
        for server in servers:
            server.stop()
