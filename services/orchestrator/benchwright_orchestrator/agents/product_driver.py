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
from ``BW_MODEL_PROXY_URL`` (which the sandbox routes to the proxy), the keys from
``BW_MODEL_PROXY_KEY`` (the run's key). The ``BW_MODEL_*`` names themselves are not
passed on.
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

POLL_S = 0.1
POLL_MAX_S = 1.0
PROBE_TIMEOUT_S = 2.0
STOP_GRACE_S = 5.0
# How much of the product's log and reply the report carries (the files keep all of it).
TAIL_CHARS = 4000
REPLY_CHARS = 8192

# No HTTP(S)_PROXY for the product's own loopback URLs.
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def product_env(config: dict[str, Any]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BW_MODEL_")}
    proxy = os.environ.get("BW_MODEL_PROXY_URL", "").rstrip("/")
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


def boot(config: dict[str, Any], report: dict[str, Any]) -> "subprocess.Popen[bytes] | None":
    started = time.monotonic()
    log_path = config["log_path"]
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    try:
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                config["command"],
                cwd=config["cwd"],
                env=product_env(config),
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


def main() -> None:
    config = json.loads(sys.stdin.read())
    report: dict[str, Any] = {}
    process = boot(config, report)
    if process is not None:
        try:
            drive(config, report)
        finally:
            stop(process)
    report["log_tail"] = tail(config["log_path"])
    print(json.dumps(report))


if __name__ == "__main__":
    main()
