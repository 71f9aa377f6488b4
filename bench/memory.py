"""Peak memory of the platform's own processes while one 10,000-task run sweeps.

Starts ``benchwright up`` (every service in one process, its own nats-server,
SQLite) in a subprocess, launches one pinned MMLU run (``all``, 14,042 rows;
``--tasks`` of them) against an instant fake model, and samples the resident
memory (VmRSS) of the platform process, of its nats-server and of the
sandboxes' processes every 0.2 s until the run is over. Reports the peaks and
how long the run took.

    .venv/bin/python bench/memory.py                   # 10,000 tasks
    .venv/bin/python bench/memory.py --tasks 2000 --json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import free_port  # noqa: E402
from tests.support.fake_openai import FakeOpenAIServer  # noqa: E402


def rss_mb(pid: int) -> float:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def children(pid: int) -> list[int]:
    found = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                found += [int(c) for c in (task / "children").read_text().split()]
    return found


def tree(pid: int) -> list[tuple[int, bool]]:
    """``pid`` and its descendants, each with whether it runs inside a sandbox (it or
    an ancestor below ``pid`` is bubblewrap or the sandbox's runner)."""
    out: list[tuple[int, bool]] = []
    todo = [(pid, False)]
    while todo:
        p, inside = todo.pop()
        out.append((p, inside))
        cmd = name_of(p) if p != pid else ""
        inside = inside or any(mark in cmd for mark in SANDBOX_MARKS)
        todo += [(c, inside) for c in children(p)]
    return out


# A process with one of these in its command line (or below one) is a sandbox's.
SANDBOX_MARKS = ("bwrap", "bench_runner", "init.py")


def name_of(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return ""


def sample(platform: int, others: dict[str, float] | None = None) -> dict[str, float]:
    """RSS of the platform process, its nats-server and everything in sandboxes (MB).

    ``others`` collects the peak of each other child counted as the platform's."""
    figures = {"platform": rss_mb(platform), "nats-server": 0.0, "sandboxes": 0.0}
    for pid, inside in tree(platform)[1:]:
        cmd = name_of(pid)
        if "nats-server" in cmd:
            figures["nats-server"] += rss_mb(pid)
        elif inside or any(mark in cmd for mark in SANDBOX_MARKS):
            figures["sandboxes"] += rss_mb(pid)
        else:
            mb = rss_mb(pid)  # the local model's worker, if started
            figures["platform"] += mb
            if others is not None:
                others[cmd[:80]] = max(others.get(cmd[:80], 0.0), mb)
    return figures


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    model = FakeOpenAIServer(lambda prompt: "The answer is A.").start()
    peaks: dict[str, float] = {}
    others: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bw-memory-") as tmp:
        ready = Path(tmp) / "ready"
        env = {
            **os.environ,
            "BW_DATA_DIR": tmp,
            "BW_GATEWAY_PORT": str(free_port()),
            "BW_PROXY_PORT": str(free_port()),
            "BW_READY_FILE": str(ready),
            "BW_TASK_CONCURRENCY": "8",
        }
        for name in ("BW_NATS_URL", "BW_DATABASE_URL"):
            env.pop(name, None)
        proc = subprocess.Popen(  # noqa: ASYNC220 - started once, stopped below
            [str(ROOT / ".venv/bin/benchwright"), "up"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(1200):
                if ready.exists():
                    break
                await asyncio.sleep(0.1)
            idle = sample(proc.pid)
            creds = json.loads((Path(tmp) / "credentials.json").read_text())
            headers = {"Authorization": f"Bearer {creds['token']}"}
            async with httpx.AsyncClient(
                base_url=creds["base_url"], headers=headers, timeout=60
            ) as client:
                body = {
                    "benchmark": "MMLU",
                    "subset": "all",
                    "sut": {
                        "model": "fake",
                        "provider": "openai_compatible",
                        "api_base": model.base_url,
                    },
                    "driver": "builtin",
                    "metadata": {"limit": args.tasks},
                }
                launched = await client.post("/v1/runs", json=body)
                launched.raise_for_status()
                run_id = launched.json()["id"]
                started = time.monotonic()
                run: dict[str, Any] = {}
                while True:
                    for name, value in sample(proc.pid, others).items():
                        peaks[name] = max(peaks.get(name, 0.0), value)
                    with contextlib.suppress(httpx.TransportError):
                        run = (await client.get(f"/v1/runs/{run_id}")).json()
                        if run.get("status") in ("ok", "error"):
                            break
                    await asyncio.sleep(0.2)
                wall = time.monotonic() - started
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
            model.stop()
    summary = run.get("summary") or {}
    result: dict[str, Any] = {
        "tasks": summary.get("total"),
        "status": run.get("status"),
        "wall_s": round(wall, 1),
        "idle_mb": {k: round(v) for k, v in idle.items()},
        "peak_mb": {k: round(v) for k, v in peaks.items()},
        "platform_and_nats_peak_mb": round(peaks["platform"] + peaks["nats-server"]),
        "other_children_peak_mb": {k: round(v) for k, v in others.items()},
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"\none pinned MMLU run of {result['tasks']} tasks: {result['status']} in {wall:.0f} s")
    print(f"{'process':14} {'idle MB':>8} {'peak MB':>8}")
    for name in ("platform", "nats-server", "sandboxes"):
        print(f"{name:14} {result['idle_mb'][name]:>8} {result['peak_mb'][name]:>8}")
    print(f"platform + nats-server peak: {result['platform_and_nats_peak_mb']} MB")
    for cmd, mb in result["other_children_peak_mb"].items():
        print(f"  counted with the platform: {cmd} ({mb} MB at most)")


if __name__ == "__main__":
    asyncio.run(main())
