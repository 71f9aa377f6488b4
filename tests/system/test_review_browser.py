"""The review queue in a real browser (Debian's Chromium driven by Playwright, as in
``test_dashboard_browser``): a person signs in with the one-time link, opens a finished
run's queue, grades every sampled task with the form (one after another, as the queue
offers them), and the agreement the API then reports is scikit-learn's over the grades
entered and the grader's. The queue is stratified across the grader's grades and is
the same on every visit. Screenshots go to ``$BW_TEST_ARTIFACTS`` (else a tmp dir)."""

import os
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from benchwright import AsyncBenchwright
from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer
from tests.system.test_dashboard_browser import CHROMIUM_FLAGS, chromium, platform_and_link
from tests.system.test_run_labels import ROWS, graded_run, grader_grades, sloppy

pytestmark = [pytest.mark.slow, pytest.mark.connected]

__all__ = ["platform_and_link"]  # the fixture, shared with the dashboard's test

WAIT_MS = 30_000
# How the person grades what the grader called C, P and I: they read partial answers
# as wrong, and doubt every third correct one.
PERSON = {"P": "I", "I": "I"}


def person_grade(grader: str, position: int) -> str:
    if grader == "C":
        return "P" if position % 3 == 2 else "C"
    return PERSON[grader]


async def test_labels_entered_in_the_review_queue_give_scikit_learns_agreement(
    platform_and_link: tuple[Platform, str], tmp_path: Path
) -> None:
    from playwright.async_api import async_playwright, expect

    executable = chromium()
    platform, link = platform_and_link
    assert platform.client is not None
    base_url = str(platform.client.base_url).rstrip("/")
    screenshots = Path(os.environ.get("BW_TEST_ARTIFACTS") or tmp_path) / "review"
    screenshots.mkdir(parents=True, exist_ok=True)
    model = FakeOpenAIServer(sloppy).start()
    try:
        async with AsyncBenchwright(api_key=platform.token, base_url=base_url) as bw:
            run_id = await graded_run(bw, model, "Reviewed Sums")
            grader = await grader_grades(bw, run_id)

            async with async_playwright() as driver:
                browser = await driver.chromium.launch(
                    executable_path=executable, headless=True, args=CHROMIUM_FLAGS
                )
                page = await (await browser.new_context()).new_page()
                await page.goto(link)
                await page.click("#continue")
                await expect(page).to_have_url(f"{base_url}/runs")

                # The run page leads to the queue.
                await page.goto(f"{base_url}/runs/{run_id}")
                await page.click("#review-link")
                await expect(page.locator("h1")).to_have_text("Review queue")
                await expect(page.locator("[data-figure=compared]")).to_have_text("0")
                await expect(page.locator("[data-figure=corrected]")).to_be_visible()
                sample = page.locator("#review-sample tbody tr")
                await expect(sample).to_have_count(len(ROWS))
                order = [
                    (await sample.nth(i).locator("td").nth(2).inner_text()).strip()
                    for i in range(len(ROWS))
                ]
                # Stratified in proportion: any first n hold each grade's share to within one.
                for n in range(1, len(order) + 1):
                    for grade in "CPI":
                        share = n * list(grader.values()).count(grade) / len(ROWS)
                        assert abs(order[:n].count(grade) - share) <= 1, (n, grade, order)

                entered: dict[int, str] = {}
                for position in range(len(ROWS)):
                    shown = page.locator("#review-task")
                    await expect(shown).to_be_visible()
                    said = await shown.get_attribute("data-grader") or ""
                    row_id = await shown.get_attribute("data-task") or ""
                    index = int(row_id.rsplit("_", 1)[-1])
                    assert said == grader[index] == order[position]
                    # What the person reads: the input, the output and the reasoning.
                    await expect(shown).to_contain_text(ROWS[index]["task_id"])
                    await expect(shown).to_contain_text("reasoning")
                    grade = person_grade(said, position)
                    await page.check(f"#label-form input[name=grade][value={grade}]")
                    await page.fill("#label-form textarea[name=note]", f"read as {grade}")
                    if position == 1:
                        await page.screenshot(path=str(screenshots / "queue.png"), full_page=True)
                    await page.click("#label-form button[type=submit]")
                    entered[index] = grade
                    await expect(page.locator("#review-done")).to_have_text(str(position + 1))
                await expect(page.locator("#review-finished")).to_be_visible()
                await expect(page.locator("[data-figure=compared]")).to_have_text(str(len(ROWS)))
                await page.screenshot(path=str(screenshots / "done.png"), full_page=True)

                # The same queue on the next visit: the order is the run's.
                await page.reload()
                again = [
                    (await sample.nth(i).locator("td").nth(2).inner_text()).strip()
                    for i in range(len(ROWS))
                ]
                assert again == order
                await browser.close()

            report = await bw.runs.agreement(run_id)
            labels = await bw.runs.labels(run_id)
    finally:
        model.stop()

    assert {lab.index: lab.grade for lab in labels.data} == entered
    assert all(lab.note == f"read as {lab.grade}" for lab in labels.data)
    keys = sorted(entered)
    people = [entered[k] for k in keys]
    graded = [grader[k] for k in keys]
    assert report.agreement.compared == len(ROWS)
    assert report.agreement.kappa.value == pytest.approx(cohen_kappa_score(people, graded))
    assert [list(r) for r in report.agreement.confusion] == confusion_matrix(
        people, graded, labels=["I", "P", "C"]
    ).tolist()
    assert report.agreement.raw_agreement == pytest.approx(
        sum(p == g for p, g in zip(people, graded, strict=True)) / len(keys)
    )
    assert report.corrected is not None and report.corrected.corrected
