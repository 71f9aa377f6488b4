"""The litellm Driver end to end, against a scripted OpenAI-compatible server.

The script plays a Driver that reads the catalog, resolves the request, looks at
rows, writes a scorer, proves it on a reference answer and submits it. The test
then checks that the run used that scorer, that the conversation is in the log,
and that the Driver never saw the model-under-test's key (nor the SUT its key).
"""

import json
from pathlib import Path
from typing import Any

import pytest

from benchwright_registry.catalog import builtin_catalog
from benchwright_shared.ids import benchmark_id_for
from tests.conftest import Platform, platform_settings
from tests.support.fake_openai import FakeOpenAIServer, gsm8k_oracle
from tests.support.scripted_openai import ScriptedOpenAIServer, say, tool_call

pytestmark = [pytest.mark.slow, pytest.mark.connected]

DRIVER_KEY = "driver-secret-key"

SCORER = '''"""Numeric match on the final number (written by the scripted Driver)."""

import re

from bench_task import BenchTask


class Task(BenchTask):
    def solve(self, index, input):
        return self.complete("Q: " + input["question"] + "\\nEnd with: The answer is N.")

    def score(self, index, output, expected):
        numbers = re.findall(r"-?\\d+(?:\\.\\d+)?", (output or "").replace(",", ""))
        got = numbers[-1] if numbers else None
        ok = got is not None and float(got) == float(expected)
        return {"score": 1.0 if ok else 0.0, "parsed": got}
'''


def gsm8k_rows() -> list[dict[str, Any]]:
    bench = next(b for b in builtin_catalog() if b.name == "GSM8K")
    return bench.subsets[0].load_rows()


def script(expected: str) -> list[dict[str, Any]]:
    return [
        say("Looking at the catalog.", ("list_catalog", {})),
        tool_call(
            "resolve_benchmark",
            benchmark_id=benchmark_id_for("GSM8K"),
            subset_id="test",
            scope={"kind": "first_n", "n": 4},
        ),
        tool_call("read_rows", indices=[0, 1]),
        tool_call(
            "record_analysis",
            kind="math",
            schema={"input.question": "string", "expected": "string"},
            fields={"question": "input.question"},
        ),
        tool_call("write_file", path="task_impl.py", content=SCORER),
        tool_call(
            "score_sample",
            path="task_impl.py",
            outputs=[{"index": 0, "output": f"The answer is {expected}."}],
        ),
        say(
            "The scorer gives the reference full marks.",
            ("submit_scorer", {"path": "task_impl.py", "kind": "math"}),
        ),
    ]


@pytest.fixture
async def driven(tmp_path: Path) -> Any:
    rows = gsm8k_rows()
    driver = ScriptedOpenAIServer(script(rows[0]["expected"])).start()
    sut = FakeOpenAIServer(gsm8k_oracle(rows[:20], correct_every=2)).start()
    settings = platform_settings(tmp_path, None, None).model_copy(
        update={"driver_api_key": DRIVER_KEY, "driver_api_base": driver.base_url}
    )
    platform = await Platform(settings).start()
    try:
        yield platform, driver, sut
    finally:
        await platform.shutdown()
        driver.stop()
        sut.stop()


async def test_the_llm_driver_authors_the_scorer_through_its_tools(driven: Any) -> None:
    platform, driver, sut = driven
    client = platform.client
    launched = await client.post(
        "/v1/runs",
        json={
            "request": "Run four GSM8K problems",
            "driver": "litellm",
            "sut": {"model": "fake", "provider": "openai_compatible", "api_base": sut.base_url},
        },
    )
    assert launched.status_code == 201, launched.text
    done = await platform.wait_terminal(launched.json()["id"])
    assert done["status"] == "ok", (done["error"], done["phase"])
    assert done["driver"] == "litellm"
    assert done["summary"]["total"] == 4 and done["summary"]["passed"] == 2

    events = (await client.get(f"/v1/runs/{done['id']}/events", params={"limit": 5000})).json()[
        "data"
    ]
    texts = [e["data"]["text"] for e in events if e["type"] == "AgentTextEvent"]
    assert "Looking at the catalog." in texts
    tools = [e["data"]["tool"] for e in events if e["type"] == "ToolCallEvent"]
    for tool in ("list_catalog", "resolve_benchmark", "read_rows", "record_analysis",
                 "write_file", "score_outputs", "submit_scorer"):  # fmt: skip
        assert tool in tools, tools
    atomized = next(e for e in events if e["type"] == "AtomizeArtifact")
    assert atomized["data"]["code"] == SCORER
    assert done["impl_id"] == atomized["data"]["impl_id"]

    # The Driver's conversation carried tool results back, with the Driver's own key...
    assert len(driver.requests) == 7
    assert all(r["headers"]["authorization"] == f"Bearer {DRIVER_KEY}" for r in driver.requests)
    assert any(m["role"] == "tool" for m in driver.requests[-1]["body"]["messages"])
    # ...and never the model-under-test's per-run key; the SUT never saw the Driver's.
    assert "bw_proxy_" not in json.dumps([r["body"] for r in driver.requests])
    assert all(DRIVER_KEY not in a for a in sut.state["auth"])


async def test_reviews_and_the_restart_cap_park_the_run_until_a_person_answers(
    tmp_path: Path,
) -> None:
    rows = gsm8k_rows()
    driver = ScriptedOpenAIServer(
        [
            tool_call(
                "resolve_benchmark",
                benchmark_id=benchmark_id_for("GSM8K"),
                subset_id="test",
                scope={"kind": "first_n", "n": 2},
            ),
            tool_call("record_analysis", kind="math", schema={"expected": "string"}),
            tool_call("request_human_review", reason="is the answer the last number?"),
            # After the answer: three restarts in a row, the third over the cap.
            tool_call("restart_phase", reason="proof failed"),
            tool_call("restart_phase", reason="proof failed again"),
            tool_call("restart_phase", reason="still failing"),
            # After the second answer: the scorer, submitted.
            tool_call("write_file", path="task_impl.py", content=SCORER),
            tool_call("submit_scorer", path="task_impl.py", kind="math"),
        ]
    ).start()
    sut = FakeOpenAIServer(gsm8k_oracle(rows[:20], correct_every=1)).start()
    settings = platform_settings(tmp_path, None, None).model_copy(
        update={"driver_api_key": DRIVER_KEY, "driver_api_base": driver.base_url}
    )
    platform = await Platform(settings).start()
    try:
        client = platform.client
        assert client
        run = (
            await client.post(
                "/v1/runs",
                json={
                    "request": "two GSM8K problems",
                    "driver": "litellm",
                    "sut": {
                        "model": "f",
                        "provider": "openai_compatible",
                        "api_base": sut.base_url,
                    },
                },
            )
        ).json()
        waiting = await platform.wait_for(
            run["id"], lambda r: r["display_status"] == "waiting", timeout=60
        )
        assert waiting["status"] == "running" and waiting["halted"] is True
        assert waiting["halt_reason"] == "agent_review: is the answer the last number?"
        not_paused = await client.post(f"/v1/runs/{run['id']}/resume")
        assert not_paused.status_code == 409 and not_paused.json()["code"] == "not_paused"

        answered = await client.patch(
            f"/v1/runs/{run['id']}", json={"review_resolution": "yes, the last number"}
        )
        assert answered.status_code == 200, answered.text
        capped = await platform.wait_for(
            run["id"],
            lambda r: (r.get("halt_reason") or "").startswith("restart_cap_exceeded"),
            timeout=60,
        )
        assert capped["halt_reason"] == "restart_cap_exceeded: still failing"
        assert capped["display_status"] == "waiting"

        await client.patch(f"/v1/runs/{run['id']}", json={"review_resolution": "keep it simple"})
        done = await platform.wait_terminal(run["id"], timeout=60)
        assert done["status"] == "ok", done["error"]
        assert done["summary"]["passed"] == 2

        events = (await client.get(f"/v1/runs/{run['id']}/events", params={"limit": 5000})).json()[
            "data"
        ]
        atomize_starts = [
            e for e in events if e["type"] == "PhaseStarted" and e["data"]["phase"] == "atomize"
        ]
        assert len(atomize_starts) == 5  # review, two restarts, the capped one, the last
        restarts = [e["data"]["restarts"] for e in events if e["type"] == "PhaseRestarted"]
        assert restarts == [1, 2]
        cleared = [e["data"]["resolution"] for e in events if e["type"] == "HaltCleared"]
        assert cleared == ["yes, the last number", "keep it simple"]
        # The person's words reached the Driver as guidance.
        last_prompt = json.dumps(driver.requests[-1]["body"]["messages"])
        assert "yes, the last number" in last_prompt and "keep it simple" in last_prompt
    finally:
        await platform.shutdown()
        driver.stop()
        sut.stop()


async def test_hints_reach_the_driver_and_phase_models_pick_each_phases_model(
    driven: Any,
) -> None:
    platform, driver, sut = driven
    client = platform.client
    hint = "the answer is the last number in the reply"
    launched = await client.post(
        "/v1/runs",
        json={
            "request": "Run four GSM8K problems",
            "driver": "litellm",
            "hints": [hint],
            "phase_models": {"find": "openai://finder-1", "atomize": "openai://scorer-writer-2"},
            "sut": {"model": "fake", "provider": "openai_compatible", "api_base": sut.base_url},
        },
    )
    assert launched.status_code == 201, launched.text
    done = await platform.wait_terminal(launched.json()["id"])
    assert done["status"] == "ok", (done["error"], done["phase"])
    # Find's two turns, Analyze's two, Atomize's three: each phase on its model.
    models = [r["body"]["model"] for r in driver.requests]
    default = models[2]
    assert models == ["finder-1"] * 2 + [default] * 2 + ["scorer-writer-2"] * 3
    assert default not in ("finder-1", "scorer-writer-2")
    atomize_prompt = json.dumps(driver.requests[4]["body"]["messages"][:2])
    assert hint in atomize_prompt
    assert hint not in json.dumps(driver.requests[0]["body"]["messages"][:2])

    events = (await client.get(f"/v1/runs/{done['id']}/events", params={"limit": 5000})).json()[
        "data"
    ]
    launched_event = events[0]["data"]
    assert launched_event["hints"] == [hint]
    selected = next(e["data"] for e in events if e["type"] == "DriverSelected")
    assert selected["phase_models"] == {
        "find": "openai://finder-1",
        "atomize": "openai://scorer-writer-2",
    }
    sut_body = {"model": "fake", "provider": "openai_compatible", "api_base": sut.base_url}
    for body, field in (
        ({"request": "Run GSM8K", "driver": "builtin", "phase_models": {"find": "a://b"}},
         "phase_models"),
        ({"request": "Run GSM8K", "phase_models": {"materialize": "a://b"}}, "phase_models"),
        ({"request": "Run GSM8K", "phase_models": {"find": "no-provider"}}, "phase_models"),
        ({"request": "Run GSM8K", "hints": []}, "hints"),
        ({"request": "Run GSM8K", "hints": ["x"] * 21}, "hints"),
        ({"replay": {"from_run": done["id"]}, "hints": "again"}, "hints"),
    ):  # fmt: skip
        refused = await client.post("/v1/runs", json={**body, "sut": sut_body})
        assert refused.status_code == 400, (body, refused.text)
        assert refused.json()["field"] == field, (body, refused.json())
