#!/usr/bin/env python3
"""A stand-in for OpenAI's ``codex`` CLI, as Harbor's ``codex`` agent runs it.

Standard library only: it runs inside a task sandbox. It takes the arguments Harbor
passes (``codex exec --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check
--model M --json [...] -- <instruction>``) and refuses any other shape. Like Codex, it
reads its base URL from ``$CODEX_HOME/config.toml`` (``openai_base_url``, or the
chosen ``model_providers`` entry's ``base_url``; the ``OPENAI_BASE_URL`` variable only
when the file names none) and its key from ``CODEX_API_KEY``, ``OPENAI_API_KEY`` or
``$CODEX_HOME/auth.json``. Then it does what Codex does, deterministically: it asks the
model at ``<base>/responses`` (streaming, ``store`` off, the whole conversation each
time), runs each ``exec_command`` function call it is answered with, sends the outputs
back as ``function_call_output`` items, and stops at the first answer without one. It
prints ``--json`` lines like Codex's, the last ``turn.completed`` with the usage. A
model call that fails exits 1, as Codex does.
"""

import argparse
import json
import os
import subprocess
import sys
import tomllib
import urllib.request
from pathlib import Path
from typing import Any

MAX_TURNS = 10
INSTRUCTIONS = "You are a fake Codex, driven by a scripted model."
EXEC_COMMAND = {
    "type": "function",
    "name": "exec_command",
    "description": "Run a shell command and see its output.",
    "strict": False,
    "parameters": {
        "type": "object",
        "properties": {"cmd": {"type": "string"}},
        "required": ["cmd"],
    },
}


def say(line: dict[str, Any]) -> None:
    print(json.dumps(line), flush=True)


def base_url() -> str | None:
    """Where Codex sends its calls: its config file first, as Codex reads it."""
    home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
    try:
        config = tomllib.loads((home / "config.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        config = {}
    provider = (config.get("model_providers") or {}).get(config.get("model_provider", ""), {})
    return (
        provider.get("base_url")
        or config.get("openai_base_url")
        or (os.environ.get("OPENAI_BASE_URL") or None)
    )


def api_key() -> str | None:
    for name in ("CODEX_API_KEY", "OPENAI_API_KEY"):
        if os.environ.get(name):
            return os.environ[name]
    home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
    try:
        return str(json.loads((home / "auth.json").read_text()).get("OPENAI_API_KEY") or "")
    except (OSError, ValueError):
        return None


def ask(base: str, key: str, model: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """One streamed Responses call; the response its ``response.completed`` carries,
    checked against the output items the stream announced one by one."""
    body = {
        "model": model,
        "instructions": INSTRUCTIONS,
        "input": items,
        "tools": [EXEC_COMMAND],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "store": False,
        "stream": True,
        "include": [],
    }
    request = urllib.request.Request(
        base.rstrip("/") + "/responses",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "authorization": f"Bearer {key}"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    done: dict[int, dict[str, Any]] = {}
    arguments: dict[int, str] = {}
    completed: dict[str, Any] | None = None
    with opener.open(request, timeout=120) as answer:
        for raw in answer:
            line = raw.decode().strip()
            if not line.startswith("data: "):
                continue
            event = json.loads(line[len("data: ") :])
            kind = event["type"]
            if kind == "response.function_call_arguments.delta":
                index = event["output_index"]
                arguments[index] = arguments.get(index, "") + event["delta"]
            elif kind == "response.output_item.done":
                done[event["output_index"]] = event["item"]
            elif kind == "response.completed":
                completed = event["response"]
            elif kind in ("response.failed", "error"):
                raise OSError(f"the model call failed: {event}")
    if completed is None:
        raise OSError("the stream ended before response.completed")
    for index, item in done.items():
        if item.get("type") == "function_call" and arguments.get(index) != item["arguments"]:
            raise OSError(f"function call {index}: its deltas do not make its arguments")
    return completed


def main() -> int:
    parser = argparse.ArgumentParser(prog="codex")
    parser.add_argument("command", nargs="?")
    parser.add_argument("prompt", nargs="?")
    parser.add_argument("--model", "-m", default="gpt-5-codex")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dangerously-bypass-approvals-and-sandbox", action="store_true")
    parser.add_argument("--skip-git-repo-check", action="store_true")
    parser.add_argument("--enable", action="append", default=[])
    parser.add_argument("-c", "--config", action="append", default=[])
    parser.add_argument("--version", action="store_true")
    args = parser.parse_intermixed_args()
    if args.version:
        print("codex-cli 0.118.0 (fake)")
        return 0
    if args.command != "exec" or not args.json or not args.prompt:
        print("the fake codex runs only as Harbor does: codex exec --json [...] -- <prompt>")
        return 2
    base, key = base_url(), api_key()
    if not base or not key:
        print("ERROR: no base URL or API key for the model provider")
        return 1
    say({"type": "thread.started", "thread_id": "fake-thread"})
    say({"type": "turn.started"})
    items: list[dict[str, Any]] = [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": args.prompt}],
        }
    ]
    usage = {"input_tokens": 0, "output_tokens": 0}
    for _ in range(MAX_TURNS):
        try:
            response = ask(base, key, args.model, items)
        except OSError as exc:
            say({"type": "error", "message": str(exc)})
            return 1
        for kind in usage:
            usage[kind] += int((response.get("usage") or {}).get(kind) or 0)
        calls = [i for i in response["output"] if i.get("type") == "function_call"]
        for item in response["output"]:
            if item.get("type") == "message":
                text = "".join(p.get("text", "") for p in item.get("content") or [])
                say({"type": "item.completed", "item": {"type": "agent_message", "text": text}})
        if not calls:
            say({"type": "turn.completed", "usage": usage})
            return 0
        for used in calls:
            command = json.loads(used["arguments"] or "{}").get("cmd", "")
            ran = subprocess.run(["bash", "-c", command], capture_output=True, text=True)
            say(
                {
                    "type": "item.completed",
                    "item": {
                        "type": "command_execution",
                        "command": command,
                        "aggregated_output": ran.stdout + ran.stderr,
                        "exit_code": ran.returncode,
                    },
                }
            )
            items.append({k: used[k] for k in ("type", "call_id", "name", "arguments")})
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": used["call_id"],
                    "output": ran.stdout + ran.stderr,
                }
            )
    say({"type": "turn.failed", "error": {"message": "too many turns"}})
    return 1


if __name__ == "__main__":
    sys.exit(main())
