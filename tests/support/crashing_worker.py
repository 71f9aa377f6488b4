"""A stand-in for the local model's worker process that segfaults on cue.

It speaks the worker's protocol (``benchwright_proxy.providers.local_worker``)
and answers "The answer is 42." to everything, except that a prompt containing
``CRASH`` kills it with a real SIGSEGV (a null pointer read through ctypes), the
way a native library's fault does. ``BW_CRASH_ONCE_FILE`` names a file: when set,
``CRASH`` crashes only if that file does not exist yet (and creates it first);
``ALWAYS_CRASH`` crashes every time.
"""

import ctypes
import json
import os
import sys
from pathlib import Path


def segfault() -> None:
    ctypes.string_at(0)


def main() -> None:
    print(json.dumps({"hello": {"system_info": "fake worker", "pid": os.getpid()}}), flush=True)
    once = os.environ.get("BW_CRASH_ONCE_FILE")
    for line in sys.stdin:
        message = json.loads(line)
        if "cancel" in message:
            continue
        prompt = json.dumps(message["body"].get("messages"))
        if "ALWAYS_CRASH" in prompt:
            segfault()
        if "CRASH" in prompt and not (once and Path(once).exists()):
            if once:
                Path(once).write_text("crashed")
            segfault()
        result = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": message["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "The answer is 42."},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8},
        }
        if message.get("stream"):
            chunk = {"choices": [{"index": 0, "delta": {"content": "The answer is 42."}}]}
            print(json.dumps({"id": message["id"], "chunk": chunk}), flush=True)
            print(json.dumps({"id": message["id"], "end": True}), flush=True)
        else:
            print(json.dumps({"id": message["id"], "result": result}), flush=True)


if __name__ == "__main__":
    main()
