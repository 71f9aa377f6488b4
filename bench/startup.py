"""How long ``benchwright up`` takes to be ready, beside what Python itself costs.

Each sample is a fresh ``benchwright up`` process (the console script, as a user
runs it) on free ports; the clock stops when the gateway answers ``GET /healthz``
and the ready file names its address (every service subscribed, the API
serving). Samples alternate between a new data directory (first start: stores
created, credentials minted) and the same directory again (a restart). Baselines,
measured in the same run:

* ``python -c pass``: the interpreter alone;
* ``import benchwright_runtime.cli``: what ``up`` imports before it starts anything.

The project's sources are byte-compiled first, as installing its wheel does (an
editable install under ``PYTHONDONTWRITEBYTECODE=1``, as on CI machines, would
otherwise compile every module on every start: about 0.6 s more).

``--against REV`` also times the platform as it was at commit ``REV`` (its
sources exported to a temporary folder and put first on ``PYTHONPATH``, the same
interpreter and packages), in the same run: the machine's load moves both alike.

    .venv/bin/python bench/startup.py              # 5 samples of each
    .venv/bin/python bench/startup.py --samples 9 --json
    .venv/bin/python bench/startup.py --against 2bd57c1
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
CLI = VENV_BIN / "benchwright"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - started


SOURCE_DIRS = (
    "runtime",
    "sdk",
    "shared",
    "services/billing",
    "services/gateway",
    "services/orchestrator",
    "services/proxy",
    "services/registry",
    "services/sandbox-manager",
)


def export(rev: str, into: Path) -> dict[str, str]:
    """Commit ``rev``'s sources in ``into``, compiled; the environment that runs them."""
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    dirs = [str(into / d) for d in SOURCE_DIRS]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *dirs], capture_output=True)
    return {"PYTHONPATH": os.pathsep.join(dirs)}


def up_once(data_dir: Path, extra_env: dict[str, str] | None = None) -> float:
    """Seconds from exec to a gateway that answers, then a clean stop."""
    port = free_port()
    ready = data_dir.parent / f"ready-{port}"
    env = {
        **os.environ,
        **(extra_env or {}),
        "BW_READY_FILE": str(ready),
        "BW_PROXY_PORT": str(free_port()),
        "BW_LOG_LEVEL": "ERROR",
    }
    started = time.perf_counter()
    proc = subprocess.Popen(
        [str(CLI), "up", "--data-dir", str(data_dir), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            while True:
                if proc.poll() is not None:
                    raise SystemExit(f"benchwright up exited: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
                if ready.exists():
                    token = json.loads((data_dir / "credentials.json").read_text())["token"]
                    try:
                        answer = client.get(
                            "/v1/benchmarks", headers={"Authorization": f"Bearer {token}"}
                        )
                        if answer.status_code == 200 and answer.json()["data"]:
                            break
                    except httpx.TransportError:
                        pass
                time.sleep(0.01)
        elapsed = time.perf_counter() - started
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        ready.unlink(missing_ok=True)
    return elapsed


def summary(samples: list[float]) -> dict[str, Any]:
    return {
        "median_s": round(statistics.median(samples), 2),
        "min_s": round(min(samples), 2),
        "max_s": round(max(samples), 2),
        "samples": [round(s, 2) for s in samples],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--against", metavar="REV", help="also time commit REV")
    args = parser.parse_args()
    python = sys.executable
    rows: dict[str, list[float]] = {
        "python -c pass": [],
        "import benchwright_runtime.cli": [],
        "benchwright up, new data dir": [],
        "benchwright up, restart": [],
    }
    sources = [str(ROOT / d) for d in ("shared", "services", "runtime", "sdk")]
    subprocess.run([python, "-m", "compileall", "-q", *sources], check=True, capture_output=True)
    with tempfile.TemporaryDirectory(prefix="bw-startup-") as tmp:
        kept = Path(tmp) / "kept"
        up_once(kept)  # the restart samples find stores that exist
        before: dict[str, str] | None = None
        if args.against:
            before = export(args.against, Path(tmp) / "before")
            rows[f"{args.against}: up, new data dir"] = []
            rows[f"{args.against}: up, restart"] = []
            up_once(Path(tmp) / "kept-before", before)
        for n in range(args.samples):
            rows["python -c pass"].append(timed([python, "-c", "pass"]))
            rows["import benchwright_runtime.cli"].append(
                timed([python, "-c", "import benchwright_runtime.cli"])
            )
            rows["benchwright up, new data dir"].append(up_once(Path(tmp) / f"new-{n}"))
            rows["benchwright up, restart"].append(up_once(kept))
            if before is not None:
                rows[f"{args.against}: up, new data dir"].append(
                    up_once(Path(tmp) / f"new-before-{n}", before)
                )
                rows[f"{args.against}: up, restart"].append(
                    up_once(Path(tmp) / "kept-before", before)
                )
    results = {name: summary(samples) for name, samples in rows.items()}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"\nstart-up, {args.samples} samples each, {os.cpu_count()} CPUs")
    print(f"{'':36} {'median s':>9} {'min s':>7} {'max s':>7}")
    for name, r in results.items():
        print(f"{name:36} {r['median_s']:>9} {r['min_s']:>7} {r['max_s']:>7}")


if __name__ == "__main__":
    main()
