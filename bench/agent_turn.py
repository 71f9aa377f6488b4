"""The platform's own overhead per agent turn, beside a direct loop (issue 22).

Both sides drive the same scripted tool-calling model in process
(``tests/support/scripted_agent_model.py``: answers at once) and the same tool
functions (``agents.tools.run_tool``) over the same trivial in-memory sandbox
(``exec`` answers at once, files in a dict), so model latency and tool run time are
zero on both sides and what is left is the loop itself:

* platform: ``agents.loop.run_agent``, with the limits checked every turn, every
  event built as its shared pydantic model, capped, and serialised to JSON by the
  trajectory (what a log writer would do first);
* baseline: a bare loop (call the model, append the assistant message, run each
  tool, append the tool messages, stop when no tool is called).

Each attempt is ``--turns-per-attempt`` turns (tool calls cycling shell,
write_file, edit_file, read_file; then a final answer), so the conversation grows
as a real one does. Rounds alternate the two sides; the figure is the median over
rounds of the time per turn, and the overhead the difference of the medians.

This measures only the loop for now: not the bus, the run log's store, the
sandbox-manager or the proxy, which a turn in a real run also crosses.

    .venv/bin/python bench/agent_turn.py                  # 2,000 turns each way, a few seconds
    .venv/bin/python bench/agent_turn.py --turns 500 --json

Exits 1 when the overhead is 20 ms per turn or more.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from benchwright_orchestrator.agents.loop import AgentLimits, AttemptRef, run_agent
from benchwright_orchestrator.agents.ports import AgentEvent, AgentModel, ExecResult
from benchwright_orchestrator.agents.tools import TOOL_SCHEMAS, run_tool

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 20.0


def load_file(name: str, path: Path) -> ModuleType:
    """Import a module from a file without growing ``sys.path`` (see bench/throughput.py)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# The scripted model imports the fake server it extends by its package name.
if "tests.support.fake_openai" not in sys.modules:
    load_file("tests.support.fake_openai", ROOT / "tests/support/fake_openai.py")
scripted = load_file("bw_scripted_agent_model", ROOT / "tests/support/scripted_agent_model.py")


class MemorySandbox:
    """A sandbox that answers at once: files in a dict, every command succeeds."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    async def exec(
        self,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        cwd: str = "/app",
        timeout_s: float | None = None,
    ) -> ExecResult:
        return ExecResult(0, f"ran {argv[-1]}\n", "", 0)

    async def write(self, path: str, content: str) -> None:
        self.files[path] = content

    async def read(self, path: str) -> str:
        try:
            return self.files[path]
        except KeyError:
            raise FileNotFoundError(2, "No such file or directory", path) from None


class JsonTrajectory:
    """Serialises each event as a log writer would, and keeps the bytes."""

    def __init__(self) -> None:
        self.size = 0

    async def record(self, event: AgentEvent) -> None:
        self.size += len(event.model_dump_json())


def script(turns: int) -> list[Any]:
    cycle = [
        scripted.call("shell", command="ls -la && cat notes.txt"),
        scripted.call("write_file", path="notes.txt", content="line one\nline two\n" * 20),
        scripted.call("edit_file", path="notes.txt", old="line one\nline two\n" * 20, new="ok\n"),
        scripted.call("read_file", path="notes.txt"),
    ]
    return [cycle[i % len(cycle)] for i in range(turns - 1)] + [scripted.final("done")]


async def platform_attempt(model: AgentModel, turns: int) -> int:
    end = await run_agent(
        "Solve the task in /app.",
        attempt=AttemptRef(task_id="t", index=0),
        model=model,
        sandbox=MemorySandbox(),
        trajectory=JsonTrajectory(),
        limits=AgentLimits(max_turns=turns + 1, max_tokens=10**9, wall_time_s=3600.0),
    )
    assert end.reason == "done" and end.turns == turns, end
    return end.turns


async def direct_attempt(model: AgentModel, turns: int) -> int:
    sandbox = MemorySandbox()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Solve the task in /app."},
    ]
    done = 0
    while True:
        reply = await model.complete(messages, TOOL_SCHEMAS)
        done += 1
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in reply.tool_calls
            ]
        messages.append(message)
        if not reply.tool_calls:
            break
        for c in reply.tool_calls:
            outcome = await run_tool(sandbox, c.name, c.arguments)
            messages.append({"role": "tool", "tool_call_id": c.id, "content": outcome.output})
    assert done == turns
    return done


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    book = scripted.ScriptBook({}, default=script(args.turns_per_attempt))
    model = scripted.ScriptedAgentModel(book)
    attempts_per_round = max(1, args.turns // args.turns_per_attempt // args.rounds)
    sides = {"platform": platform_attempt, "direct": direct_attempt}
    per_turn: dict[str, list[float]] = {name: [] for name in sides}
    turns_done = dict.fromkeys(sides, 0)
    for _ in range(args.warmup):
        for attempt in sides.values():
            await attempt(model, args.turns_per_attempt)
            book.seen.clear()
    for _ in range(args.rounds):
        for name, attempt in sides.items():
            started, turns = time.perf_counter(), 0
            for _ in range(attempts_per_round):
                turns += await attempt(model, args.turns_per_attempt)
                book.seen.clear()  # the scripted model's log of requests is not the loop's cost
            per_turn[name].append((time.perf_counter() - started) * 1000 / turns)
            turns_done[name] += turns
    platform_ms = statistics.median(per_turn["platform"])
    direct_ms = statistics.median(per_turn["direct"])
    return {
        "turns_each_way": turns_done["platform"],
        "turns_per_attempt": args.turns_per_attempt,
        "rounds": args.rounds,
        "platform_ms_per_turn": round(platform_ms, 4),
        "direct_ms_per_turn": round(direct_ms, 4),
        "overhead_ms_per_turn": round(platform_ms - direct_ms, 4),
        "target_ms": TARGET_MS,
        "scope": "the loop only (in process); not the bus, log store, sandbox-manager or proxy",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=2000, help="turns each way (default 2000)")
    parser.add_argument("--turns-per-attempt", type=int, default=20, help="(default 20)")
    parser.add_argument("--rounds", type=int, default=10, help="alternating rounds (default 10)")
    parser.add_argument("--warmup", type=int, default=3, help="warm-up attempts each way")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    figures = asyncio.run(measure(args))
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"agent loop, {figures['turns_each_way']} turns each way, in process")
        print(f"  platform (run_agent)  {figures['platform_ms_per_turn']:8.3f} ms/turn")
        print(f"  direct loop           {figures['direct_ms_per_turn']:8.3f} ms/turn")
        print(
            f"  overhead              {figures['overhead_ms_per_turn']:8.3f} ms/turn "
            f"(target < {TARGET_MS:g} ms)"
        )
        print(f"  measures {figures['scope']}")
    sys.exit(0 if figures["overhead_ms_per_turn"] < TARGET_MS else 1)


if __name__ == "__main__":
    main()
