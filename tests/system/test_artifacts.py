"""A run's artifacts, its HTML report and its narration, read through the API."""

import asyncio

import pytest

from benchwright import AsyncBenchwright, Benchwright
from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer
from tests.system.test_pinned_run import launch_body

pytestmark = [pytest.mark.slow, pytest.mark.connected]


async def test_artifacts_report_and_narration(platform: Platform) -> None:
    client = platform.client
    assert client
    model = FakeOpenAIServer().start()
    try:
        run = (await client.post("/v1/runs", json=launch_body(model, limit=3))).json()
        done = await platform.wait_terminal(run["id"])
        assert done["status"] == "ok", done["error"]
        url = f"/v1/runs/{run['id']}"

        listed = (await client.get(f"{url}/artifacts")).json()["data"]
        kinds = {a["type"]: a for a in listed}
        assert {"fetch", "dataset_tasks", "setup", "model_proxy", "report"} <= set(kinds)
        assert all(a["latest"] and a["version"] == 1 for a in listed)

        setup = kinds["setup"]
        assert setup["media_type"] == "text/x-python" and setup["phase"] == "setup"
        code = await client.get(f"{url}/artifacts/{setup['id']}/content")
        assert code.headers["content-type"].startswith("text/x-python")
        assert "class Task" in code.text and len(code.content) == setup["size_bytes"]

        proxy = (await client.get(f"{url}/artifacts/{kinds['model_proxy']['id']}")).json()
        assert proxy["data"]["model_id"] and proxy["object"] == "artifact"
        report_file = await client.get(f"{url}/artifacts/{kinds['report']['id']}/content")
        assert report_file.json()["run_id"] == run["id"]

        only = (await client.get(f"{url}/artifacts", params={"type": "setup"})).json()["data"]
        assert [a["id"] for a in only] == [setup["id"]]
        unknown = await client.get(f"{url}/artifacts", params={"type": "colour"})
        assert unknown.status_code == 400 and unknown.json()["field"] == "type"
        missing = await client.get(f"{url}/artifacts/art_999999")
        assert missing.status_code == 404

        html = await client.get(f"{url}/report")
        assert html.headers["content-type"].startswith("text/html")
        assert run["id"] in html.text and "<h2>Tasks</h2>" in html.text
        assert html.text.count("<tr><td>") == 3 and "<script" not in html.text

        told = (await client.get(f"{url}/narrate", params={"slice": "all"})).json()
        assert told["text"].splitlines()[0].startswith("Launched (pinned)")
        assert "Finished: 3 of 3 tasks passed." in told["text"] or "Finished:" in told["text"]
        assert sum(told["outcomes"].values()) == 3

        # The same through the SDK.
        async with AsyncBenchwright(api_key=platform.token, base_url=str(client.base_url)) as bw:
            (atomized,) = await bw.runs.artifacts(run["id"], type="setup")
            assert (await bw.runs.artifact(run["id"], atomized.id)).data.code == code.text
            assert (await bw.runs.artifact_content(run["id"], atomized.id)).decode() == code.text
            assert run["id"] in await bw.runs.report(run["id"])
            assert "Phase" in (await bw.runs.narrate(run["id"])).text
        with Benchwright(api_key=platform.token, base_url=str(client.base_url)) as sync:
            versions = await asyncio.to_thread(sync.runs.artifacts, run["id"], None, True)
            assert len(versions) >= len(listed)
    finally:
        model.stop()
