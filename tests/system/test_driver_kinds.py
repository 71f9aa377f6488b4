"""The builtin Driver on real catalog data of every kind it recognises: it finds the
benchmark from plain English, writes a scorer, proves it, and the run scores an
oracle model (right on every second task) as it should."""

import json
from collections.abc import Callable
from typing import Any

import pytest

from benchwright_registry.catalog import builtin_catalog
from tests.conftest import Platform
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = [pytest.mark.slow, pytest.mark.connected]


def rows_of(benchmark: str, subset: str) -> list[dict[str, Any]]:
    bench = next(b for b in builtin_catalog() if b.name.startswith(benchmark))
    return next(s for s in bench.subsets if s.slug == subset).load_rows()


def question_of(row: dict[str, Any]) -> str:
    value = row["input"].get("question") or row["input"].get("prompt")
    if isinstance(value, list):  # BFCL: turns of messages
        value = value[-1][-1]["content"]
    return str(value).strip()


def oracle(rows: list[dict[str, Any]], right: Callable[[dict[str, Any]], str], wrong: str) -> Any:
    """Answers row i right when i is even, wrong otherwise."""
    keyed = [(question_of(r), i, r) for i, r in enumerate(rows)]
    # The longest question first: one question may contain another.
    keyed.sort(key=lambda k: -len(k[0]))

    def answer(prompt: str) -> str:
        for question, i, row in keyed:
            if question in prompt:
                return right(row) if i % 2 == 0 else wrong
        return wrong

    return answer


def bfcl_answer(row: dict[str, Any]) -> str:
    calls = [
        {name: {k: v[0] for k, v in args.items() if v and v[0] != ""}}
        for call in row["expected"]
        for name, args in call.items()
    ]
    return json.dumps(calls)


def code_answer(row: dict[str, Any]) -> str:
    return "```python\n" + row["input"]["prompt"] + row["expected"]["canonical_solution"] + "```"


CASES = [
    (
        "Run BFCL parallel function calling, first 4 tasks",
        ("BFCL", "parallel"),
        bfcl_answer,
        "[]",
        "function_call",
    ),
    (
        "Run Natural Questions, first 4 questions",
        ("Natural", "validation"),
        lambda r: r["expected"][0],
        "no idea at all",
        "exact_match",
    ),
    (
        "Run HumanEval, first 4 problems",
        ("HumanEval", "test"),
        code_answer,
        "```python\ndef nothing():\n    pass\n```",
        "code",
    ),
]


@pytest.mark.parametrize(("request_text", "source", "right", "wrong", "kind"), CASES)
async def test_each_kind_end_to_end(
    platform: Platform,
    request_text: str,
    source: tuple[str, str],
    right: Callable[[dict[str, Any]], str],
    wrong: str,
    kind: str,
) -> None:
    rows = rows_of(*source)[:4]
    server = FakeOpenAIServer(oracle(rows, right, wrong)).start()
    try:
        client = platform.client
        assert client
        body = {
            "request": request_text,
            "driver": "builtin",
            "sut": {
                "model": "oracle",
                "provider": "openai_compatible",
                "api_base": server.base_url,
            },
        }
        run = (await client.post("/v1/runs", json=body)).json()
        done = await platform.wait_terminal(run["id"])
        assert done["status"] == "ok", (done["error"], done["phase"])
        events = (await client.get(f"/v1/runs/{run['id']}/events", params={"limit": 5000})).json()
        analysis = next(e for e in events["data"] if e["type"] == "AnalyzeArtifact")
        assert analysis["data"]["kind"] == kind
        tasks = (await client.get(f"/v1/runs/{run['id']}/tasks")).json()
        assert [t["outcome"] for t in tasks["data"]] == ["pass", "fail", "pass", "fail"], tasks
    finally:
        server.stop()


async def test_one_sample_from_each_mmlu_category(platform: Platform) -> None:
    """A scoping phrase makes a synthetic subset: one task per subject, 57 in all."""
    rows = rows_of("MMLU", "all")
    letters = "ABCD"
    server = FakeOpenAIServer(lambda prompt: "Answer: A").start()
    try:
        client = platform.client
        assert client
        body = {
            "request": "one sample from each MMLU category",
            "driver": "builtin",
            "sut": {"model": "a", "provider": "openai_compatible", "api_base": server.base_url},
        }
        run = (await client.post("/v1/runs", json=body)).json()
        done = await platform.wait_terminal(run["id"], timeout=180)
        assert done["status"] == "ok", (done["error"], done["phase"])
        assert done["summary"]["total"] == 57
        events = (await client.get(f"/v1/runs/{run['id']}/events", params={"limit": 5000})).json()
        synthetic = next(e for e in events["data"] if e["type"] == "SyntheticSubsetCreated")
        assert synthetic["data"]["task_count"] == 57
        picked = synthetic["data"]["selection"]["indices"]
        assert len({rows[i]["category"] for i in picked}) == 57
        # "Answer: A" is right exactly where the reference is A.
        expected_passes = sum(1 for i in picked if rows[i]["expected"] == letters[0])
        assert done["summary"]["passed"] == expected_passes
    finally:
        server.stop()
