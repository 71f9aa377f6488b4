"""The platform's overhead per agent turn in a real run, beside a direct loop (issue 22).

The target: "the platform's own overhead per agent turn (everything except the
model's latency and the tool's run time) ... stays under 20 ms per turn".

Both sides drive the same scripted tool-calling model (``ScriptedAgentServer`` from
``tests/support``, an OpenAI-compatible server on loopback that answers at once) and
run the same tool command (``true``, in the shell tool's ``bash -c``) under bubblewrap:

* platform: the whole platform in this process (``run_embedded``: its own
  nats-server, SQLite stores, all six services), a Harbor run of the platform's agent
  on a one-task dataset whose script calls ``shell`` ``--turns`` times, then answers;
  ``--trials`` trials one after the other (task concurrency 1). Each model call goes
  through the run's proxy, each tool call is an ``ExecInSandbox`` to the
  sandbox-manager, each step is written to the run's log before the next. The time
  per turn is the attempts' time (``AgentAttemptStarted`` to ``AgentAttemptEnded``,
  from the log: the sandbox's creation and the verifier are outside it) over their
  turns;
* baseline: in the same process, a bare loop: the same conversation posted straight
  to the model server with httpx, each tool call a ``bwrap ... bash -c true`` started
  directly, nothing recorded.

The overhead is the difference of the two times per turn. Both sides take turns
(baseline, platform, baseline) so that a busy moment of the shared machine falls on
both.

    .venv/bin/python bench/agent_run.py                  # 3 x 40 turns, ~30 s
    .venv/bin/python bench/agent_run.py --turns 60 --trials 5 --json

Exits 1 when the overhead is 20 ms per turn or more.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from benchwright_orchestrator.agents.tools import SHELL_ARGV
from benchwright_runtime.cli import run_embedded
from benchwright_shared.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support: the scripted model both sides talk to

from bench.throughput import READY_FILE, free_port, wait_until_up  # noqa: E402
from tests.support.scripted_agent_model import (  # noqa: E402
    ScriptBook,
    ScriptedAgentServer,
    call,
    final,
)

TARGET_MS = 20.0
INSTRUCTION = "Run the checks, one at a time, then say you are done."
TOOL_COMMAND = "true"
RUN_TIMEOUT_S = 600.0


def dataset(turns: int) -> dict[str, str]:
    """One task: nothing to do but run the checks; its test always passes."""
    return {
        "checks/task.toml": (
            "[agent]\ntimeout_sec = 600.0\n[verifier]\ntimeout_sec = 60.0\n"
            '[environment]\nnetwork_mode = "no-network"\n'
        ),
        "checks/instruction.md": INSTRUCTION + "\n",
        "checks/environment/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\n",
        "checks/tests/test.sh": (
            "#!/bin/bash\nmkdir -p /logs/verifier\necho 1 > /logs/verifier/reward.txt\n"
        ),
    }


def script(turns: int) -> ScriptBook:
    return ScriptBook(
        {"Run the checks": [call("shell", command=TOOL_COMMAND)] * turns + [final("done")]}
    )


def parse_ts(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


# -- the platform -----------------------------------------------------------------------
async def platform_side(
    settings: Settings, model: ScriptedAgentServer, args: argparse.Namespace
) -> dict[str, Any]:
    stop = asyncio.Event()
    task = asyncio.create_task(
        run_embedded(settings, ready_file=settings.data_dir / READY_FILE, stop=stop, quiet=True)
    )
    try:
        creds = await wait_until_up(settings.data_dir, task)
        headers = {"Authorization": f"Bearer {creds['token']}"}
        async with httpx.AsyncClient(
            base_url=creds["base_url"], headers=headers, timeout=60
        ) as client:
            body = {
                "harness": "harbor",
                "sut": {
                    "model": "scripted",
                    "provider": "openai_compatible",
                    "api_base": model.base_url,
                },
                "metadata": {
                    "harbor_harness": {
                        "dataset": "turns",
                        "files": dataset(args.turns),
                        "agent": "benchwright",
                        "agent_args": {"max_turns": args.turns + 5},
                    }
                },
                "trials": {"plan": {"k": args.trials}, "aggregator": {"name": "mean"}},
            }
            launched = (await client.post("/v1/runs", json=body)).raise_for_status().json()
            run_id = launched["id"]
            deadline = time.monotonic() + RUN_TIMEOUT_S
            while (run := (await client.get(f"/v1/runs/{run_id}")).json())["status"] == "running":
                if time.monotonic() > deadline:
                    raise TimeoutError(f"run {run_id} still running")
                await asyncio.sleep(0.2)
            if run["status"] != "ok":
                raise RuntimeError(f"run {run_id} ended {run['status']}: {run.get('error')}")
            kinds = "AgentAttemptStarted,AgentAttemptEnded,AgentModelTurn,AgentToolResult"
            events = (
                await client.get(
                    f"/v1/runs/{run_id}/events", params={"types": kinds, "limit": 1000}
                )
            ).json()["data"]
    finally:
        stop.set()
        await task
    starts = {
        (e["data"]["trial"], e["data"]["attempt"]): parse_ts(e["ts"])
        for e in events
        if e["type"] == "AgentAttemptStarted"
    }
    attempts = []
    for e in events:
        if e["type"] == "AgentAttemptEnded":
            key = (e["data"]["trial"], e["data"]["attempt"])
            attempts.append((parse_ts(e["ts"]) - starts[key], e["data"]["turns"]))
    tools = [e["data"]["duration_ms"] for e in events if e["type"] == "AgentToolResult"]
    turns = sum(t for _, t in attempts)
    return {
        "run_id": run_id,
        "attempts": len(attempts),
        "turns": turns,
        "ms_per_turn": 1000 * sum(s for s, _ in attempts) / turns,
        "ms_per_turn_each_attempt": [round(1000 * s / t, 2) for s, t in attempts],
        "tool_exec_ms_median": statistics.median(tools) if tools else None,
    }


# -- the baseline -------------------------------------------------------------------------
def bwrap_argv(app: Path) -> list[str]:
    args = [
        "bwrap",
        "--unshare-all",
        "--die-with-parent",
        "--clearenv",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
    ]
    args += ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64"):
        host = Path(f"/{name}")
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), f"/{name}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), str(host)]
    args += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "--bind",
        str(app),
        "/app",
        "--chdir",
        "/app",
    ]
    return args


async def baseline_side(model: ScriptedAgentServer, args: argparse.Namespace) -> dict[str, Any]:
    app = Path(tempfile.mkdtemp(prefix="bw-bench-app-"))
    prefix = bwrap_argv(app)
    tools = [{"type": "function", "function": {"name": "shell", "parameters": {"type": "object"}}}]
    per_attempt = []
    try:
        async with httpx.AsyncClient(timeout=60) as client:
            for _ in range(args.trials):
                messages: list[dict[str, Any]] = [
                    {"role": "system", "content": "You are an agent."},
                    {"role": "user", "content": INSTRUCTION},
                ]
                turns, started = 0, time.perf_counter()
                while True:
                    reply = (
                        await client.post(
                            f"{model.base_url}/chat/completions",
                            json={"model": "scripted", "messages": messages, "tools": tools},
                        )
                    ).json()["choices"][0]["message"]
                    turns += 1
                    messages.append(reply)
                    if not reply.get("tool_calls"):
                        break
                    for tool_call in reply["tool_calls"]:
                        command = json.loads(tool_call["function"]["arguments"])["command"]
                        process = await asyncio.create_subprocess_exec(
                            *prefix,
                            *SHELL_ARGV,
                            command,
                            stdout=asyncio.subprocess.PIPE,
                            stderr=asyncio.subprocess.PIPE,
                        )
                        out, err = await process.communicate()
                        messages.append(
                            {
                                "role": "tool",
                                "tool_call_id": tool_call["id"],
                                "content": out.decode() + err.decode(),
                            }
                        )
                per_attempt.append((time.perf_counter() - started, turns))
    finally:
        shutil.rmtree(app, ignore_errors=True)
    turns = sum(t for _, t in per_attempt)
    return {"turns": turns, "ms_per_turn": 1000 * sum(s for s, _ in per_attempt) / turns}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    model = ScriptedAgentServer(script(args.turns)).start()
    data_dir = Path(tempfile.mkdtemp(prefix="bw-bench-agent-"))
    try:
        settings = Settings(
            data_dir=data_dir,
            gateway_port=free_port(),
            proxy_port=free_port(),
            task_concurrency=1,
        )
        before = await baseline_side(model, args)
        platform = await platform_side(settings, model, args)
        after = await baseline_side(model, args)
    finally:
        model.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    baseline_ms = statistics.mean([before["ms_per_turn"], after["ms_per_turn"]])
    overhead = platform["ms_per_turn"] - baseline_ms
    return {
        "turns_per_attempt": args.turns + 1,
        "trials": args.trials,
        "platform": platform,
        "baseline_before": before,
        "baseline_after": after,
        "baseline_ms_per_turn": round(baseline_ms, 2),
        "overhead_ms_per_turn": round(overhead, 2),
        "target_ms": TARGET_MS,
        "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=40, help="tool turns per attempt")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        p = result["platform"]
        print(
            f"turns: {p['turns']} on the platform ({p['attempts']} attempts), "
            f"{result['baseline_before']['turns']} per baseline pass"
        )
        each = p["ms_per_turn_each_attempt"]
        print(f"platform   {p['ms_per_turn']:8.2f} ms/turn   (attempts: {each})")
        before, after = result["baseline_before"], result["baseline_after"]
        print(
            f"baseline   {result['baseline_ms_per_turn']:8.2f} ms/turn   "
            f"(before {before['ms_per_turn']:.2f}, after {after['ms_per_turn']:.2f})"
        )
        print(
            f"overhead   {result['overhead_ms_per_turn']:8.2f} ms/turn   (target < {TARGET_MS:.0f})"
        )
        print(f"tool exec in the sandbox-manager: median {p['tool_exec_ms_median']} ms")
    sys.exit(0 if result["overhead_ms_per_turn"] < TARGET_MS else 1)


if __name__ == "__main__":
    main()
