"""What the guide's scenarios share: models, the CLI as a process, and a step log.

The guide's code is synchronous and the embedded platform runs on the test's own
event loop, so every scenario step runs on a worker thread (``offthread``).
"""

import asyncio
import importlib.util
import json
import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchwright_registry.catalog import builtin_catalog
from tests.conftest import Platform
from tests.support.chat_oracle import ChatOracleServer, last_user_text

# The guide's models are real providers; offline, the one real model is SmolLM2 served
# by llama.cpp in the proxy (slow: ~28 tokens/s, one call at a time).
LOCAL = {"model": "smollm2", "provider": "local"}
# The same weights under the local provider's other name: a second model id to replay on.
LOCAL_ALIAS = {"model": "smollm2-135m-instruct", "provider": "local"}
# The scenarios that score SmolLM2 need llama.cpp (scripts/bootstrap.sh --model).
needs_local_model = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None,
    reason="scores the local model: llama-cpp-python is not installed",
)
# Upper bound for one run; the guide waits without one.
RUN_TIMEOUT = 900.0
BENCHWRIGHT = Path(sys.executable).with_name("benchwright")


async def offthread[T](fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run blocking guide code off the event loop the platform is serving on."""
    return await asyncio.to_thread(fn, *args, **kwargs)


class Steps(dict[str, Any]):
    """What a scenario's earlier steps produced, for the steps after them."""

    def need(self, *names: str) -> Any:
        """The named results, or a skip naming the earlier step that did not finish."""
        missing = [n for n in names if n not in self]
        if missing:
            pytest.skip(f"an earlier step of this scenario did not produce {missing}")
        found = [self[n] for n in names]
        return found[0] if len(found) == 1 else found


# -- the CLI, as a user runs it --------------------------------------------------------------
@dataclass
class CliResult:
    """One finished ``benchwright`` process."""

    args: list[str]
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """stdout as one JSON document."""
        return json.loads(self.stdout)

    def ndjson(self) -> list[Any]:
        """stdout as JSON lines."""
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def __str__(self) -> str:
        return (
            f"$ benchwright {' '.join(self.args)}\nexit {self.exit_code}\n"
            f"--- stdout\n{self.stdout[-4000:]}\n--- stderr\n{self.stderr[-4000:]}"
        )


async def cli(*args: str, cwd: Path, stdin: str | None = None, timeout: float = 1200) -> CliResult:
    """``benchwright ARGS`` in a child process, with this process's environment
    (``BW_PAT``, ``BW_BASE_URL``, ``BW_CONFIG`` set by the scenario's fixture)."""
    process = await asyncio.create_subprocess_exec(
        str(BENCHWRIGHT),
        *args,
        cwd=cwd,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(
        process.communicate(stdin.encode() if stdin is not None else None), timeout
    )
    assert process.returncode is not None
    return CliResult(list(args), process.returncode, out.decode(), err.decode())


async def shell(script: str, *, cwd: Path, env: dict[str, str], timeout: float = 1200) -> CliResult:
    """A CI step's ``run:`` block under bash, with the venv's ``benchwright`` on PATH."""
    environment = {**os.environ, **env}
    environment["PATH"] = f"{BENCHWRIGHT.parent}:{environment.get('PATH', '')}"
    process = await asyncio.create_subprocess_exec(
        "bash",
        "-e",
        "-c",
        script,
        cwd=cwd,
        env=environment,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode is not None
    return CliResult(["<bash>", script], process.returncode, out.decode(), err.decode())


# -- the built-in catalog's rows, to script fake models against ---------------------------------
def catalog_rows(benchmark: str, slug: str) -> list[dict[str, Any]]:
    """The rows of a built-in subset, in order."""
    bench = next(b for b in builtin_catalog() if b.name == benchmark)
    subset = next(s for s in bench.subsets if s.slug == slug)
    return list(subset.load_rows())


def sut_of(server: ChatOracleServer, model: str) -> dict[str, str]:
    """The guide's model name, served by a fake OpenAI-compatible server."""
    return {"model": model, "provider": "openai_compatible", "api_base": server.base_url}


def gsm8k_panelist(rows: Iterable[dict[str, Any]], right: set[str]) -> ChatOracleServer:
    """Answers the GSM8K rows in ``right`` (task ids) correctly, the rest off by one."""
    answers = {r["input"]["question"].strip(): (r["expected"], r["task_id"] in right) for r in rows}

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        prompt = last_user_text(body)
        for question, (expected, correct) in answers.items():
            if question in prompt:
                value = expected if correct else str(int(float(expected)) + 1)
                return {"content": f"Step by step. The answer is {value}."}
        return {"content": "The answer is 0."}

    return ChatOracleServer(reply)


def mmlu_panelist(rows: Iterable[dict[str, Any]], right: set[str]) -> ChatOracleServer:
    """A model that picks the right letter for the MMLU rows in ``right``, a wrong one else."""
    answers = {
        r["input"]["question"].strip(): (str(r["expected"]), r["task_id"] in right) for r in rows
    }

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        prompt = last_user_text(body)
        for question, (letter, correct) in answers.items():
            if question in prompt:
                chosen = letter if correct else ("A" if letter != "A" else "B")
                return {"content": f"The answer is {chosen}."}
        return {"content": "I am not sure."}

    return ChatOracleServer(reply)


def bfcl_reference_calls(expected: Any) -> list[dict[str, Any]]:
    """BFCL's reference ``[{name: {arg: [acceptable values]}}]`` as concrete calls."""
    calls = []
    for item in expected if isinstance(expected, list) else [expected]:
        name, args = next(iter(item.items()))
        concrete = {}
        for key, acceptable in (args or {}).items():
            options = acceptable if isinstance(acceptable, list) else [acceptable]
            chosen = next((o for o in options if o != ""), None)
            if chosen is not None:
                concrete[key] = chosen
        calls.append({"name": name, "arguments": concrete})
    return calls


def bfcl_question_text(row: dict[str, Any]) -> str:
    """The user's words of a BFCL row (its question is a list of turns of messages)."""
    question = row["input"]["question"]
    if isinstance(question, str):
        return question
    return " ".join(m["content"] for turn in question for m in turn if m.get("role") == "user")


def bfcl_panelist(rows: Iterable[dict[str, Any]], right: set[str]) -> ChatOracleServer:
    """A model that makes the reference calls of the BFCL rows in ``right`` (as JSON in its
    reply's text) and no call for the others."""
    answers = {
        bfcl_question_text(r).strip(): (bfcl_reference_calls(r["expected"]), r["task_id"] in right)
        for r in rows
    }

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        prompt = last_user_text(body)
        for question, (calls, correct) in answers.items():
            if question and question in prompt:
                return {"content": json.dumps(calls if correct else [])}
        return {"content": "[]"}

    return ChatOracleServer(reply)


def first_number(text: str) -> str | None:
    """The first number in ``text``."""
    found = re.search(r"-?\d+(?:\.\d+)?", text.replace(",", ""))
    return found.group(0) if found else None


# -- another account ---------------------------------------------------------------------------
async def new_account(platform: Platform, username: str, scopes: list[str]) -> str:
    """A second account, made by the admin ``benchwright up`` saved, and a token of
    ``scopes`` for it."""
    client = platform.client
    assert client is not None
    creds = json.loads((platform.settings.data_dir / "credentials.json").read_text())

    async def session(user: str, password: str) -> str:
        opened = await client.post("/v1/sessions", json={"username": user, "password": password})
        assert opened.status_code == 201, opened.text
        return str(opened.json()["token"])

    admin = await session(creds["login"]["username"], creds["login"]["password"])
    password = "a long enough password"
    made = await client.post(
        "/v1/accounts",
        json={"username": username, "password": password},
        headers={"Authorization": f"Bearer {admin}"},
    )
    assert made.status_code == 201, made.text
    minted = await client.post(
        "/v1/tokens",
        json={"label": "scenario", "scopes": scopes},
        headers={"Authorization": f"Bearer {await session(username, password)}"},
    )
    assert minted.status_code == 201, minted.text
    return str(minted.json()["token"])
