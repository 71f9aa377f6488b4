"""Start a product under test, wait for it, drive it with one task, stop it: in the sandbox.

Shipped as text and run as ``python3 -I -c <this file> `` with a JSON config on stdin
(``ProductConfig`` in ``phases/harbor_product.py`` writes it); standard library only.
It prints one JSON report on stdout. Everything happens in one command because a
sandbox command takes whatever it started with it when it ends (the local backend
kills the process group, and gives each command its own network namespace): the
product lives exactly as long as the task that drives it.

    boot     Popen(command) in its own session, output to the log; poll ready_url
             (any 2xx) until ready_timeout_s: "ready", "exited" (the product ended
             during boot), "not_ready" (it never answered), "not_started" (no such
             program)
    drive    POST the instruction to drive_url, wait for the reply until
             request_timeout_s: status and body, or "timed_out"
    stop     SIGTERM to the product's group, SIGKILL after a grace

The product is pointed at the run's proxy: ``OPENAI_BASE_URL``/``ANTHROPIC_BASE_URL``
lead to a relay the driver serves on loopback, which adds the task and trial
(``X-Benchwright-Task``/``-Trial``, so the proxy meters each call against its task and
applies ``limits.task.cost``) and passes each call on to ``BW_MODEL_PROXY_URL`` (which
the sandbox routes to the proxy), its answer streamed back as it comes. The keys are
``BW_MODEL_PROXY_KEY`` (the run's key). The ``BW_MODEL_*`` names themselves are not
passed on.

A config with ``exec`` (Harbor's bridge, for an installed agent's CLI) runs that one
shell command instead, pointed at the relay the same way, its output passed through
and its exit code returned; each call the relay passed on is reported on stderr as it
returns, one line ``<mark> {cost_micros, input_tokens, output_tokens}``, so that a
command cut short by its timeout has still reported what it spent. With ``relay_port``
the relay listens on that loopback port, not on one of the system's choosing: for a CLI
that reads its base URL from a file written before the command runs (Codex's
``config.toml``), which must name the relay's address in advance.
"""

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

POLL_S = 0.1
POLL_MAX_S = 1.0
PROBE_TIMEOUT_S = 2.0
STOP_GRACE_S = 5.0
# How much of the product's log and reply the report carries (the files keep all of it).
TAIL_CHARS = 4000
REPLY_CHARS = 8192

# No HTTP(S)_PROXY for the product's own loopback URLs.
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


# Headers that belong to one connection, not to the call the relay passes on.
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host"}
)
RELAY_TIMEOUT_S = 600.0
# What the proxy says each call cost, summed into the report's ``usage``.
STAMPS = {
    "x-benchwright-call-cost-micros": "cost_micros",
    "x-benchwright-call-prompt-tokens": "input_tokens",
    "x-benchwright-call-completion-tokens": "output_tokens",
}


def relay_to(
    proxy: str,
    attribution: dict[str, str],
    usage: dict[str, int] | None = None,
    on_call: Callable[[dict[str, int]], None] | None = None,
    port: int = 0,
) -> ThreadingHTTPServer:
    """Serve, on a loopback port (``port``; 0: any free one), every call passed on to
    ``proxy`` with ``attribution``; ``usage`` sums the calls and what the proxy stamped
    on them, ``on_call`` is told each call's stamps."""
    upstream = urlsplit(proxy)
    base_path = upstream.path.rstrip("/")
    counted = usage if usage is not None else {}
    lock = threading.Lock()

    def count(answer: http.client.HTTPResponse) -> None:
        stamped: dict[str, int] = {}
        for header, key in STAMPS.items():
            value = answer.getheader(header)
            if value and value.isdigit():
                stamped[key] = int(value)
        with lock:
            counted["calls"] = counted.get("calls", 0) + 1
            for key, amount in stamped.items():
                counted[key] = counted.get(key, 0) + amount
            if on_call is not None and "cost_micros" in stamped:
                on_call(stamped)

    class Relay(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            size = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(size) if size else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            headers.update(attribution)
            kind = (
                http.client.HTTPSConnection
                if upstream.scheme == "https"
                else http.client.HTTPConnection
            )
            connection = kind(
                upstream.hostname or "127.0.0.1", upstream.port, timeout=RELAY_TIMEOUT_S
            )
            answering = False
            try:
                connection.request(self.command, base_path + self.path, body, headers)
                answer = connection.getresponse()
                answering = True
                count(answer)
                self.send_response(answer.status, answer.reason)
                for name, value in answer.getheaders():
                    if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                        self.send_header(name, value)
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                while chunk := answer.read1(1 << 16):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except OSError as exc:
                if not answering:  # else the answer is cut short: the client sees that
                    self.send_error(502, f"model proxy unreachable: {exc}")
                self.close_connection = True
            finally:
                connection.close()

        do_GET = do_POST = _forward

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Relay)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def product_env(config: dict[str, Any], relay: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BW_MODEL_")}
    proxy = (relay or os.environ.get("BW_MODEL_PROXY_URL", "")).rstrip("/")
    key = os.environ.get("BW_MODEL_PROXY_KEY", "")
    model = os.environ.get("BW_MODEL_MODEL", "")
    if proxy:
        env.update(
            OPENAI_BASE_URL=f"{proxy}/v1",
            OPENAI_API_KEY=key,
            OPENAI_MODEL=model,
            ANTHROPIC_BASE_URL=proxy,
            ANTHROPIC_API_KEY=key,
            ANTHROPIC_MODEL=model,
        )
    env.update(config.get("env") or {})
    return env


def tail(path: str) -> str:
    try:
        with open(path, "rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - TAIL_CHARS))
            return log.read().decode(errors="replace")
    except OSError:
        return ""


def answers(url: str) -> bool:
    try:
        with DIRECT.open(url, timeout=PROBE_TIMEOUT_S) as reply:
            status: int = reply.status
    except (OSError, ValueError):
        return False
    return 200 <= status < 300


def stop(process: "subprocess.Popen[bytes]") -> None:
    for sig, wait_s in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)):
        if process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait_s)
        except subprocess.TimeoutExpired:
            continue


def boot(
    config: dict[str, Any], report: dict[str, Any], relay: str | None
) -> "subprocess.Popen[bytes] | None":
    started = time.monotonic()
    log_path = config["log_path"]
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    try:
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                config["command"],
                cwd=config["cwd"],
                env=product_env(config, relay),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
    except OSError as exc:
        where = exc.filename or config["command"][0]
        report.update(boot="not_started", detail=f"{exc.strerror or exc}: {where}")
        return None
    pause = POLL_S
    deadline = started + float(config["ready_timeout_s"])
    while True:
        code = process.poll()
        if code is not None:
            report.update(boot="exited", exit_code=code)
            break
        if answers(config["ready_url"]):
            report["boot"] = "ready"
            break
        if time.monotonic() >= deadline:
            report["boot"] = "not_ready"
            break
        time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
        pause = min(pause * 2, POLL_MAX_S)
    report["boot_ms"] = int((time.monotonic() - started) * 1000)
    if report["boot"] != "ready":
        stop(process)
        return None
    return process


def drive(config: dict[str, Any], report: dict[str, Any]) -> None:
    if config["body"] == "json":
        payload = json.dumps({"instruction": config["instruction"], "task": config["task"]})
        media = "application/json"
    else:
        payload, media = config["instruction"], "text/plain; charset=utf-8"
    request = urllib.request.Request(
        config["drive_url"], data=payload.encode(), headers={"content-type": media}
    )
    started = time.monotonic()
    try:
        with DIRECT.open(request, timeout=float(config["request_timeout_s"])) as reply:
            status, body = reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    except TimeoutError:
        status, body = None, b""
        report["timed_out"] = True
    except (OSError, ValueError) as exc:
        status, body = None, str(getattr(exc, "reason", exc)).encode()
        report["request_error"] = True
    report["request_ms"] = int((time.monotonic() - started) * 1000)
    text = body.decode(errors="replace")
    with open(config["reply_path"], "w") as kept:
        kept.write(text)
    report.update(status=status, reply=text[:REPLY_CHARS], reply_chars=len(text))


def run_command(config: dict[str, Any], relay: str | None) -> int:
    """The ``exec`` command, pointed at the relay; its exit code."""
    try:
        return subprocess.run(
            ["bash", "-c", config["exec"]], env=product_env(config, relay)
        ).returncode
    except OSError as exc:
        print(f"cannot run bash: {exc}", file=sys.stderr)
        return 127


def main() -> None:
    config = json.loads(sys.stdin.read())
    report: dict[str, Any] = {}
    relay = None
    usage: dict[str, int] = {}
    lock = threading.Lock()

    def told(stamped: dict[str, int]) -> None:
        with lock:
            sys.stderr.write(f"{config['mark']} {json.dumps(stamped)}\n")
            sys.stderr.flush()

    if os.environ.get("BW_MODEL_PROXY_URL"):
        attribution = {
            "x-benchwright-task": str(config["index"]),
            "x-benchwright-trial": str(config["trial"]),
        }
        on_call = told if config.get("mark") else None
        port = int(config.get("relay_port") or 0)
        try:
            server = relay_to(os.environ["BW_MODEL_PROXY_URL"], attribution, usage, on_call, port)
        except OSError as exc:  # the port is taken: the CLI's calls would go astray
            print(f"the model relay cannot listen on 127.0.0.1:{port}: {exc}", file=sys.stderr)
            sys.exit(1)
        relay = f"http://127.0.0.1:{server.server_address[1]}"
    if config.get("exec") is not None:
        sys.exit(run_command(config, relay))
    process = boot(config, report, relay)
    if process is not None:
        try:
            drive(config, report)
        finally:
            stop(process)
    report["log_tail"] = tail(config["log_path"])
    report["usage"] = dict(usage)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
