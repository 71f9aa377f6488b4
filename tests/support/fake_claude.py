#!/usr/bin/env python3
"""A stand-in for Claude Code's ``claude`` CLI, as Harbor's ``claude-code`` agent runs it.

Standard library only: it runs inside a task sandbox. It takes the arguments Harbor
passes (``--verbose --output-format=stream-json [...] --print``, the instruction on
stdin), refuses without ``--print`` or without ``ANTHROPIC_BASE_URL`` and a key, and
then does what Claude Code does, deterministically: it asks the model at
``$ANTHROPIC_BASE_URL/v1/messages`` (streaming, with the key in ``x-api-key``), runs
each ``bash`` tool call it is answered with, sends the results back, and stops at the
first answer without one. It prints stream-json lines like Claude Code's, the last a
``result``. A model call that fails exits 1, as Claude Code does.
"""

import argparse
import json
import os
import subprocess
import sys
import urllib.request
from typing import Any

MAX_TURNS = 10
SYSTEM = "You are a fake Claude Code, driven by a scripted model."
BASH = {
    "name": "bash",
    "description": "Run a shell command and see its output.",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
}


def say(line: dict[str, Any]) -> None:
    print(json.dumps(line), flush=True)


def ask(base: str, key: str, model: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """One streamed Messages call, its events put back together into the message."""
    body = {
        "model": model,
        "max_tokens": 4096,
        "system": SYSTEM,
        "tools": [BASH],
        "messages": messages,
        "stream": True,
    }
    request = urllib.request.Request(
        base.rstrip("/") + "/v1/messages",
        data=json.dumps(body).encode(),
        headers={
            "content-type": "application/json",
            "x-api-key": key,
            "anthropic-version": "2023-06-01",
        },
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    message: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    with opener.open(request, timeout=120) as answer:
        for raw in answer:
            line = raw.decode().strip()
            if not line.startswith("data: "):
                continue
            event = json.loads(line[len("data: ") :])
            kind = event["type"]
            if kind == "message_start":
                message = event["message"]
            elif kind == "content_block_start":
                blocks[event["index"]] = dict(event["content_block"])
            elif kind == "content_block_delta":
                delta = event["delta"]
                if delta["type"] == "text_delta":
                    block = blocks[event["index"]]
                    block["text"] = block.get("text", "") + delta["text"]
                elif delta["type"] == "input_json_delta":
                    partial[event["index"]] = (
                        partial.get(event["index"], "") + delta["partial_json"]
                    )
            elif kind == "message_delta":
                message["stop_reason"] = event["delta"].get("stop_reason")
    for index, text in partial.items():
        blocks[index]["input"] = json.loads(text or "{}")
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


def main() -> int:
    parser = argparse.ArgumentParser(prog="claude")
    parser.add_argument("--print", "-p", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--output-format", default="text")
    parser.add_argument("--version", action="store_true")
    args, _ = parser.parse_known_args()
    if args.version:
        print("2.0.0 (Claude Code, fake)")
        return 0
    if not args.print or args.output_format != "stream-json":
        print("the fake claude runs only as Harbor does: --print --output-format=stream-json")
        return 2
    base = os.environ.get("ANTHROPIC_BASE_URL")
    key = os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")
    if not base or not key:
        print("Invalid API key · Please run /login")
        return 1
    model = os.environ.get("ANTHROPIC_MODEL", "claude-sonnet")
    instruction = sys.stdin.read()
    say({"type": "system", "subtype": "init", "model": model, "cwd": os.getcwd()})
    messages: list[dict[str, Any]] = [{"role": "user", "content": instruction}]
    for _ in range(MAX_TURNS):
        try:
            message = ask(base, key, model, messages)
        except OSError as exc:
            print(f"API Error: {exc}")
            return 1
        say({"type": "assistant", "message": message})
        messages.append({"role": "assistant", "content": message["content"]})
        uses = [b for b in message["content"] if b.get("type") == "tool_use"]
        if not uses:
            text = "".join(b.get("text", "") for b in message["content"])
            say({"type": "result", "subtype": "success", "is_error": False, "result": text})
            return 0
        results = []
        for use in uses:
            ran = subprocess.run(
                ["bash", "-c", use["input"].get("command", "")], capture_output=True, text=True
            )
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": use["id"],
                    "content": ran.stdout + ran.stderr,
                }
            )
        messages.append({"role": "user", "content": results})
    say({"type": "result", "subtype": "error_max_turns", "is_error": True})
    return 1


if __name__ == "__main__":
    sys.exit(main())
