"""The dashboard in-process: sessions and sign-in, CSRF, the strict CSP, escaping of
untrusted text, ownership, the outcome vector and its live updates."""

import html
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from faststream.nats import NatsBroker
from nats.aio.msg import Msg

from benchwright_gateway.app import GatewayService
from benchwright_gateway.web import live
from benchwright_gateway.web.highlight import highlight_python
from benchwright_gateway.web.sessions import CONTENT_SECURITY_POLICY, csrf_token
from benchwright_shared import subjects
from benchwright_shared.contracts import SubsetRows
from benchwright_shared.settings import Settings

pytestmark = pytest.mark.connected

RUN = "33333333-3333-3333-3333-333333333333"
PASSWORD = "a long enough password"
# Model outputs and task inputs are untrusted: each of these must arrive as text.
SCRIPT = "<script>document.title='pwned'</script>"
ATTRIBUTE = '"><img src=x onerror=alert(1)>'
TASKS = [
    (0, "t-0", "pass", f"the answer {SCRIPT}"),
    (1, "t-1", "fail", f"nope {ATTRIBUTE}"),
    (2, "t-2", None, None),  # a trial in, not aggregated: running
]


def message(seq: int, kind: str, **data: Any) -> dict[str, Any]:
    return {"run_id": RUN, "seq": seq, "type": kind, "ts": f"2026-12-01T00:00:{seq:02d}Z",
            "data": data}  # fmt: skip


def run_log(account: str) -> list[dict[str, Any]]:
    log = [
        message(
            0,
            "RunLaunched",
            account=account,
            benchmark_id="bm_1",
            benchmark_name=f"Sums {SCRIPT}",
            subset_id="sub_1",
            subset_slug="v1",
            sut={"model": ATTRIBUTE, "provider": "openai_compatible"},
        ),
        message(1, "DatasetTasksArtifact", selected_tasks=4, content_sha256="x"),
    ]
    for index, task_id, outcome, output in TASKS:
        seq = 10 + 2 * index
        log.append(
            message(
                seq,
                "MaterializeTaskResult",
                task_id=task_id,
                index=index,
                trial=0,
                output=output,
                duration_ms=5,
            )
        )
        if outcome:
            log.append(
                message(
                    seq + 1,
                    "MaterializeTaskAggregated",
                    task_id=task_id,
                    index=index,
                    outcome=outcome,
                    score=1.0 if outcome == "pass" else 0.0,
                )
            )
    return log


@pytest.fixture
async def gateway(tmp_path: Path, embedded_nats: str) -> AsyncIterator[GatewayService]:
    service = GatewayService(Settings(data_dir=tmp_path, nats_url=embedded_nats))
    broker = NatsBroker(embedded_nats, logger=None)
    await broker.connect()
    service.ctx.broker = broker  # no other service: the pages must still answer

    async def subset_rows(msg: Msg) -> None:
        # The registry's part of a task's payload: an input carrying markup.
        rows = [{"task_id": "t-0", "input": {"question": ATTRIBUTE}, "expected": SCRIPT}]
        await msg.respond(SubsetRows(subset_id="sub_1", rows=rows).model_dump_json().encode())

    sub = await broker.connection.subscribe(subjects.GET_SUBSET_ROWS, cb=subset_rows)
    service.app.create_login("alice", PASSWORD, account="acct_alice")
    service.app.create_login("bob", PASSWORD, account="acct_bob")
    service.views.store.apply_many(
        "runs", [(i + 1, m) for i, m in enumerate(run_log("acct_alice"))]
    )
    yield service
    await sub.unsubscribe()
    await broker.stop()
    service.app.close()
    service.views.close()


def browser(service: GatewayService, session: str | None = None) -> httpx.AsyncClient:
    cookies = {"bw_session": session} if session else None
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=service.http), base_url="http://gw.test",
        cookies=cookies, follow_redirects=False,
    )  # fmt: skip


def session_of(service: GatewayService, username: str) -> str:
    token, _ = service.app.open_session(username, PASSWORD)
    return token


def hidden(page: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert found, f"no hidden {name!r} field in the page"
    return html.unescape(found.group(1))


async def test_a_page_without_a_session_sends_the_browser_to_sign_in(
    gateway: GatewayService,
) -> None:
    async with browser(gateway) as anonymous:
        response = await anonymous.get(f"/runs/{RUN}")
        assert response.status_code == 303
        assert response.headers["location"] == f"/sign-in?next=%2Fruns%2F{RUN}"
        # A PAT is not a browser session, even in the cookie.
        pat = gateway.app.mint_token("acct_alice", ["runs:read"], "cli")
        anonymous.cookies.set("bw_session", pat)
        assert (await anonymous.get("/runs")).status_code == 303


async def test_signing_in_sets_a_locked_down_cookie_and_needs_the_forms_token(
    gateway: GatewayService,
) -> None:
    async with browser(gateway) as client:
        form = await client.get("/sign-in", params={"next": f"/runs/{RUN}"})
        assert form.status_code == 200
        token = hidden(form.text, "csrf")
        fields = {"username": "alice", "password": PASSWORD, "next": f"/runs/{RUN}"}

        forged = await client.post("/sign-in", data={**fields, "csrf": "guessed"})
        assert forged.status_code == 403 and "bw_session" not in forged.headers.get(
            "set-cookie", ""
        )
        wrong = await client.post("/sign-in", data={**fields, "password": "x" * 12, "csrf": token})
        assert wrong.status_code == 401 and "unknown username or wrong password" in wrong.text

        signed = await client.post("/sign-in", data={**fields, "csrf": token})
        assert signed.status_code == 303 and signed.headers["location"] == f"/runs/{RUN}"
        cookie = next(
            c for c in signed.headers.get_list("set-cookie") if c.startswith("bw_session=")
        )
        attributes = {part.strip().lower() for part in cookie.split(";")}
        assert {"httponly", "samesite=lax", "path=/"} <= attributes
        assert "secure" not in attributes  # served over plain HTTP here
        page = await client.get(f"/runs/{RUN}")
        assert page.status_code == 200 and RUN in page.text

        # Sign-out is a form too, and ends the session for good.
        out = await client.post("/sign-out", data={"csrf": hidden(page.text, "csrf")})
        assert out.status_code == 303
        session = cookie.split(";")[0].split("=", 1)[1]
        assert gateway.app.verify(session) is None


async def test_the_cookie_is_secure_when_the_gateway_is_served_over_tls(
    gateway: GatewayService,
) -> None:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=gateway.http), base_url="https://gw.test"
    ) as client:
        form = await client.get("/sign-in")
        data = {"username": "alice", "password": PASSWORD, "csrf": hidden(form.text, "csrf")}
        signed = await client.post("/sign-in", data=data)
    cookie = next(c for c in signed.headers.get_list("set-cookie") if "bw_session=" in c)
    assert "secure" in cookie.lower()


async def test_the_next_page_after_sign_in_is_always_on_this_site(
    gateway: GatewayService,
) -> None:
    async with browser(gateway) as client:
        for target in ("https://evil.example/", "//evil.example/x", "/\\evil.example"):
            form = await client.get("/sign-in", params={"next": target})
            assert hidden(form.text, "next") == "/runs"


async def test_a_one_time_link_signs_in_once(gateway: GatewayService) -> None:
    gateway.app.create_login("admin", PASSWORD, account="acct_alice", admin=True)
    url = await gateway.sign_in_link()
    path = url.removeprefix(gateway.settings.gateway_url)
    assert path.startswith("/sign-in/link/bw_signin_")
    async with browser(gateway) as client:
        page = await client.get(path)
        assert page.headers["referrer-policy"] == "no-referrer"
        fields = {"csrf": hidden(page.text, "csrf"), "token": hidden(page.text, "token")}
        first = await client.post("/sign-in/link", data=fields)
        assert first.status_code == 303 and "bw_session=" in first.headers["set-cookie"]
        # The same link again, from its page (a new pre-session token): spent.
        page = await client.get(path)
        fields = {"csrf": hidden(page.text, "csrf"), "token": hidden(page.text, "token")}
        again = await client.post("/sign-in/link", data=fields)
        assert again.status_code == 401 and "was used, has expired" in again.text


async def test_state_changing_forms_need_the_sessions_csrf_token(
    gateway: GatewayService,
) -> None:
    session = session_of(gateway, "alice")
    async with browser(gateway, session) as client:
        no_token = await client.post(f"/runs/{RUN}/halt", data={"csrf": ""})
        assert no_token.status_code == 403 and "form is stale" in no_token.text
        other_site = await client.post(
            f"/runs/{RUN}/halt",
            data={"csrf": csrf_token(session)},
            headers={"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
        )
        assert other_site.status_code == 403
        # Another session's token does not open this one's forms either.
        stolen = csrf_token(session_of(gateway, "bob"))
        assert (await client.post(f"/runs/{RUN}/halt", data={"csrf": stolen})).status_code == 403


async def test_untrusted_text_renders_as_text_under_a_strict_policy(
    gateway: GatewayService,
) -> None:
    async with browser(gateway, session_of(gateway, "alice")) as client:
        pages = [await client.get(f"/runs/{RUN}"), await client.get("/runs")]
        pages.append(await client.get(f"/runs/{RUN}/tasks/t1_0"))
        pages.append(await client.get(f"/runs/{RUN}/tasks/t1_1"))
    for page in pages:
        assert page.status_code == 200, page.text
        assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert page.headers["x-frame-options"] == "DENY"
        assert "<script>document" not in page.text
        assert "<img src=x" not in page.text
    run_page, runs_list, task_page, failed_page = (p.text for p in pages)
    assert "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in run_page
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in runs_list
    # The drill-down: input and expected from the registry, the output from the run.
    assert "&lt;script&gt;document.title" in task_page
    assert "onerror=alert(1)&gt;" in task_page and "onerror=alert(1)&gt;" in failed_page
    # Every script a page loads is the package's own file; no inline script at all.
    assert re.findall(r"<script[^>]*>", run_page) == [
        next(s for s in re.findall(r"<script[^>]*>", run_page) if "/static/dashboard.js" in s)
    ]
    assert "style=" not in run_page


async def test_a_bad_query_parameter_is_a_page_naming_it(gateway: GatewayService) -> None:
    async with browser(gateway, session_of(gateway, "alice")) as client:
        response = await client.get(f"/runs/{RUN}", params={"sort": "<script>"})
    assert response.status_code == 400 and response.headers["content-type"].startswith("text/html")
    assert "sort:" in response.text and "<script>" not in response.text


async def test_another_accounts_run_is_not_found(gateway: GatewayService) -> None:
    async with browser(gateway, session_of(gateway, "bob")) as bob:
        for path in (f"/runs/{RUN}", f"/runs/{RUN}/outcomes", f"/runs/{RUN}/tasks/t1_0"):
            response = await bob.get(path)
            assert response.status_code == 404, (path, response.text)
        halt = await bob.post(
            f"/runs/{RUN}/halt", data={"csrf": csrf_token(bob.cookies["bw_session"])}
        )
        assert halt.status_code == 404
        listed = await bob.get("/runs")
    assert RUN[:8] not in listed.text


async def test_the_outcome_vector_has_a_character_per_task(gateway: GatewayService) -> None:
    async with browser(gateway, session_of(gateway, "alice")) as client:
        found = (await client.get(f"/runs/{RUN}/outcomes")).json()
        filtered = await client.get(f"/runs/{RUN}", params={"outcome": "fail", "q": "t-"})
    # Four selected tasks: pass, fail, one running, one not started.
    assert found["vector"] == "pfr."
    assert found["counts"] | {"pass_rate": None} == {
        "total": 4, "pending": 1, "running": 1, "passed": 1, "failed": 1, "errored": 0,
        "pass_rate": None,
    }  # fmt: skip
    assert found["counts"]["pass_rate"] == 0.5
    assert 'data-vector="pfr."' in filtered.text
    assert "<code>t-1</code>" in filtered.text and "<code>t-0</code>" not in filtered.text


async def test_live_updates_send_only_the_cells_that_changed(gateway: GatewayService) -> None:
    events = live.updates(gateway.ctx.read, RUN, poll_s=0.01)
    first = await anext(events)
    assert (first["event"], first["data"]) == ("vector", "pfr.")
    assert json.loads((await anext(events))["data"])["status"] == "running"
    gateway.views.store.apply_many(
        "runs",
        [
            (100, message(30, "MaterializeTaskResult", task_id="t-2", index=2, trial=0,
                          error_type="infra:sandbox_lost", error="lost")),
            (101, message(31, "MaterializeTaskAggregated", task_id="t-2", index=2,
                          outcome="err")),
            (102, message(32, "PipelineFinished", status="ok", summary={"total": 3})),
        ],
    )  # fmt: skip
    cells = await anext(events)
    assert cells["event"] == "cells" and json.loads(cells["data"]) == [[2, "x"]]
    state = json.loads((await anext(events))["data"])
    assert state["status"] == "ok"
    assert (await anext(events))["event"] == "end"


async def test_a_task_heard_started_shows_running_until_it_settles(
    gateway: GatewayService,
) -> None:
    started: set[int] = set()
    events = live.updates(gateway.ctx.read, RUN, poll_s=0.01, started=started)
    assert (await anext(events))["data"] == "pfr."
    await anext(events)  # the state
    started.update({3, 0})  # the sweep began tasks 0 (settled already) and 3
    cells = await anext(events)
    assert cells["event"] == "cells" and json.loads(cells["data"]) == [[3, "r"]]
    gateway.views.store.apply_many(
        "runs",
        [
            (100, message(30, "MaterializeTaskResult", task_id="t-3", index=3, trial=0,
                          outcome="pass", score=1.0)),
            (101, message(31, "MaterializeTaskAggregated", task_id="t-3", index=3,
                          outcome="pass", score=1.0)),
        ],
    )  # fmt: skip
    cells = await anext(events)
    assert json.loads(cells["data"]) == [[3, "p"]]


def test_highlighted_code_is_the_code_escaped() -> None:
    code = 'def score(x):\n    # a </script> in a comment\n    return "<b>" + str(x)  # done\n'
    shown = str(highlight_python(code))
    assert "</script>" not in shown and "<b>" not in shown
    assert '<span class="k">def</span>' in shown and '<span class="nf">score</span>' in shown
    assert html.unescape(re.sub(r"<[^>]+>", "", shown)) == code


async def test_the_review_queue_escapes_needs_the_csrf_token_and_is_the_owners(
    gateway: GatewayService,
) -> None:
    session = session_of(gateway, "alice")
    async with browser(gateway, session) as client:
        queue = await client.get(f"/runs/{RUN}/review")
        assert queue.status_code == 200, queue.text
        assert queue.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        # The two settled tasks, pass and fail, are the sample; the running one is not.
        assert queue.text.count("</code></td>") == 2 and "t-2" not in queue.text
        assert "<script>document" not in queue.text and "<img src=x" not in queue.text
        assert 'id="review-task"' in queue.text and 'name="grade" value="pass"' in queue.text
        forged = await client.post(
            f"/runs/{RUN}/review", data={"csrf": "guessed", "task": "t1_0", "grade": "fail"}
        )
        assert forged.status_code == 403 and "form is stale" in forged.text
        # A grade off the scale comes back as the queue with the API's problem.
        off_scale = await client.post(
            f"/runs/{RUN}/review",
            data={"csrf": hidden(queue.text, "csrf"), "task": "t1_0", "grade": "C"},
        )
        assert off_scale.status_code == 422 and "not a grade" in off_scale.text
    async with browser(gateway, session_of(gateway, "bob")) as stranger:
        assert (await stranger.get(f"/runs/{RUN}/review")).status_code == 404
