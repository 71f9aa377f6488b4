"""The dashboard over a real socket, as a browser without JavaScript sees it: the
login form, the runs list and a run's task table (search, filters), the registry's
pages, and the account page's forms (tokens shown once, secrets never shown back,
host rules). The live page in a real browser: ``test_dashboard_browser.py``."""

import html
import json
import re
from collections.abc import AsyncIterator

import httpx
import pytest

from benchwright import AsyncBenchwright
from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer
from tests.system.test_authoring import TASK_IMPL, TASKS, arithmetic
from tests.system.test_leaderboards import finish

pytestmark = [pytest.mark.slow, pytest.mark.connected]

SECRET_VALUE = "sk-dashboard-test-0123456789"


def hidden(page: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert found, f"no hidden {name!r} in the page"
    return html.unescape(found.group(1))


@pytest.fixture
async def signed_in(platform: Platform) -> AsyncIterator[httpx.AsyncClient]:
    """A browser-like client signed in with the admin's login through the form."""
    assert platform.client is not None
    creds = json.loads((platform.settings.data_dir / "credentials.json").read_text())
    async with httpx.AsyncClient(base_url=str(platform.client.base_url), timeout=60) as client:
        form = await client.get("/sign-in")
        login = creds["login"]
        signed = await client.post(
            "/sign-in",
            data={"username": login["username"], "password": login["password"],
                  "csrf": hidden(form.text, "csrf"), "next": "/runs"},
        )  # fmt: skip
        assert signed.status_code == 303 and signed.headers["location"] == "/runs"
        yield client


async def test_pages_and_forms_of_a_signed_in_browser(
    platform: Platform, signed_in: httpx.AsyncClient
) -> None:
    assert platform.client is not None
    calculator = FakeOpenAIServer(arithmetic).start()
    try:
        base_url = str(platform.client.base_url).rstrip("/")
        async with AsyncBenchwright(api_key=platform.token, base_url=base_url) as bw:
            bm = await bw.benchmarks.create(name="Dashboard Sums", category="math")
            sub = await bw.benchmarks.subsets.create(benchmark=bm.id, slug="v1", tasks=TASKS)
            impl = await bw.impls.create(subset=sub.id, label="sums", code=TASK_IMPL)
            sut = {"model": "calc", "provider": "openai_compatible",
                   "api_base": calculator.base_url}  # fmt: skip
            run = await finish(
                bw, (await bw.runs.launch(benchmark=bm.id, subset=sub.id, impl=impl.id, sut=sut)).id
            )
    finally:
        calculator.stop()
    client = signed_in
    assert run.links.dashboard == f"{base_url}/runs/{run.id}"

    # -- the runs list: searched, filtered, paged on the server -------------------------
    found = await client.get("/runs", params={"q": "dashboard sums", "status": "ok"})
    assert run.id in found.text and "page 1 of 1" in found.text
    missing = await client.get("/runs", params={"q": "no such benchmark"})
    assert run.id not in missing.text and "No runs match" in missing.text

    # -- a finished run's page: no live stream, the table filtered by outcome ---------
    page = await client.get(f"/runs/{run.id}", params={"outcome": "fail"})
    assert page.status_code == 200
    assert 'data-live="no"' in page.text and 'data-vector="ppfpp"' in page.text
    assert "sum-13-29" in page.text and "sum-2-3" not in page.text
    assert "4 of 5 passed" in page.text
    searched = await client.get(f"/runs/{run.id}", params={"q": "40-2"})
    assert "sum-40-2" in searched.text and "sum-13-29" not in searched.text
    vector = (await client.get(f"/runs/{run.id}/outcomes")).json()
    assert vector["vector"] == "ppfpp" and vector["state"]["status"] == "ok"

    # -- the registry: a benchmark, its subset's page, the impl's highlighted code ----
    assert bm.id in (await client.get("/registry")).text
    subset_page = await client.get(f"/registry/subsets/{sub.id}")
    assert subset_page.status_code == 200 and run.id[:8] in subset_page.text
    impl_page = await client.get(f"/registry/impls/{impl.id}")
    assert '<span class="k">class</span><span class="w"> </span><span class="nc">Task</span>' in (
        impl_page.text
    )

    # -- tokens: shown once, in the answer to the form; revoked from the page ---------
    account = await client.get("/account")
    csrf = hidden(account.text, "csrf")
    # A repeated name (one per ticked scope), as a browser posts the form.
    made = await client.post(
        "/account/tokens",
        data={"csrf": csrf, "label": "from the dashboard",
              "scopes": ["runs:read", "billing:read"]},
    )  # fmt: skip
    assert made.status_code == 200 and made.url.path == "/account/tokens"
    token = re.search(r"<pre>(bw_live_pat_[^<]+)</pre>", made.text)
    assert token, made.text
    headers = {"Authorization": f"Bearer {token.group(1)}"}
    me = (await platform.client.get("/v1/me", headers=headers)).json()
    assert sorted(me["scopes"]) == ["billing:read", "runs:read"]
    listed = await client.get("/account")
    assert "from the dashboard" in listed.text and token.group(1) not in listed.text
    token_id = re.search(r"<td><code>([^<]+)</code></td><td>from the dashboard</td>", made.text)
    assert token_id
    revoked = await client.post(
        "/account/revoke-token", data={"csrf": csrf, "token_id": token_id.group(1)}
    )
    assert revoked.status_code == 303 and revoked.headers["location"].endswith("token_revoked")
    assert (await platform.client.get("/v1/me", headers=headers)).status_code == 401

    # -- secrets are write-only: the page shows a masked preview, never the value ------
    saved = await client.post(
        "/account/save-secret",
        data={"csrf": csrf, "name": "OPENAI_KEY", "value": SECRET_VALUE, "description": "key"},
    )
    assert saved.status_code == 303, saved.text
    shown = (await client.get("/account")).text
    assert "OPENAI_KEY" in shown and SECRET_VALUE not in shown

    # -- the host policy: a rule added from the page is listed ------------------------
    rule = await client.post(
        "/account/host-rule",
        data={"csrf": csrf, "pattern": "*.example.com", "rule_action": "block"},
    )
    assert rule.status_code == 303, rule.text
    assert "*.example.com" in (await client.get("/account")).text
    refused = await client.post(
        "/account/host-rule", data={"csrf": csrf, "pattern": "not a host!", "rule_action": "x"}
    )
    assert refused.status_code >= 400 and 'role="alert"' in refused.text
    # The balance and the ledger answer from billing.
    assert re.search(r'id="balance">\$[0-9.]+<', shown) and 'id="ledger"' in shown
