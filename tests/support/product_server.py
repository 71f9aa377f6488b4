"""A small product under test: an HTTP service that answers a task with a model's help.

Standard library only; started in a task's sandbox from a command
(``python3 /srv/product/server.py --port 8765``), it is what ``agent: "product"`` runs:

    GET  /health   200 once up (503 for ever with ``--never-ready``)
    POST /task     {"instruction": ...}: asks the model at OPENAI_BASE_URL (the run's
                   proxy, OPENAI_API_KEY its key) with the instruction as the user's
                   message, writes the answer's text to ./answer.txt (the task's
                   working directory) and replies {"answer": ...}

Every request is logged on stdout, which the platform keeps in /logs/agent/product.log.
"""

import argparse
import json
import os
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER_FILE = "answer.txt"


def ask_model(instruction: str) -> str:
    body = {
        "model": os.environ.get("OPENAI_MODEL") or "default",
        "messages": [{"role": "user", "content": instruction}],
    }
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={
            "content-type": "application/json",
            "authorization": f"Bearer {os.environ['OPENAI_API_KEY']}",
        },
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        answer = json.load(reply)
    return str(answer["choices"][0]["message"]["content"] or "")


class Product(BaseHTTPRequestHandler):
    never_ready = False

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path != "/health":
            self._reply(404, {"error": "no such page"})
        elif self.never_ready:
            self._reply(503, {"status": "warming up"})
        else:
            self._reply(200, {"status": "ok"})

    def do_POST(self) -> None:
        if self.path != "/task":
            self._reply(404, {"error": "no such page"})
            return
        size = int(self.headers.get("content-length") or 0)
        instruction = str(json.loads(self.rfile.read(size))["instruction"])
        answer = ask_model(instruction).strip()
        with open(ANSWER_FILE, "w") as out:
            out.write(answer + "\n")
        print(f"answered {len(instruction)} characters with {answer!r}", flush=True)
        self._reply(200, {"answer": answer})

    def log_message(self, format: str, *args: Any) -> None:
        print(format % args, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--never-ready", action="store_true")
    options = parser.parse_args()
    Product.never_ready = options.never_ready
    server = ThreadingHTTPServer(("127.0.0.1", options.port), Product)
    keys = " ".join(sorted(name for name in os.environ if "KEY" in name))
    print(f"product listening on 127.0.0.1:{options.port}; keys: {keys}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
