"""The platform as separate processes: six services sharing nothing but the bus,
and an embedded platform killed mid-run and started again."""

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import (
    free_port,
    machine_database_url,
    machine_nats_url,
    reset_nats,
    reset_postgres,
)
from tests.support.fake_openai import FakeOpenAIServer, gsm8k_oracle
from tests.system.test_pinned_run import gsm8k_rows, launch_body

pytestmark = [pytest.mark.slow, pytest.mark.connected]

BENCHWRIGHT = str(Path(sys.executable).parent / "benchwright")
SERVICES = ["registry", "billing", "proxy", "sandbox-manager", "orchestrator", "gateway"]


def spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [BENCHWRIGHT, *args],
        env={**os.environ, **env},
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )


async def wait_for_file(
    path: Path, procs: list[subprocess.Popen[bytes]], timeout: float = 60
) -> None:
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(path.exists):
        for proc in procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args} exited with {proc.returncode}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        await asyncio.sleep(0.1)


async def wait_terminal(
    client: httpx.AsyncClient, run_id: str, timeout: float = 120
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = await client.get(f"/v1/runs/{run_id}")
        if response.status_code == 200 and response.json()["status"] != "running":
            return response.json()  # type: ignore[no-any-return]
        await asyncio.sleep(0.2)
    raise TimeoutError(run_id)


def processes_mentioning(text: str) -> list[int]:
    """Pids of live processes whose command line mentions ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry.name))
    return found


def stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


async def test_six_services_as_six_processes(tmp_path: Path) -> None:
    nats_url, db_url = machine_nats_url(), machine_database_url()
    if not (nats_url and db_url):
        pytest.skip("needs BW_TEST_NATS_URL and BW_TEST_DATABASE_URL")
    await reset_nats(nats_url)
    reset_postgres(db_url)
    model = FakeOpenAIServer(gsm8k_oracle(gsm8k_rows()[:20])).start()
    gateway_port, proxy_port = free_port(), free_port()
    procs = []
    try:
        for service in SERVICES:
            # Each process its own data directory: nothing is shared but NATS and PostgreSQL.
            env = {
                "BW_NATS_URL": nats_url,
                "BW_DATABASE_URL": db_url,
                "BW_DATA_DIR": str(tmp_path / service),
                "BW_GATEWAY_PORT": str(gateway_port),
                "BW_PROXY_PORT": str(proxy_port),
                "BW_TASK_CONCURRENCY": "4",
            }
            procs.append(spawn(["serve", service], env, tmp_path / f"{service}.log"))
        creds_path = tmp_path / "gateway" / "credentials.json"
        await wait_for_file(creds_path, procs)
        creds = json.loads(creds_path.read_text())
        async with httpx.AsyncClient(
            base_url=creds["base_url"],
            headers={"Authorization": f"Bearer {creds['token']}"},
            timeout=30,
        ) as client:
            for _ in range(100):  # the registry loads its catalog on start
                response = await client.post("/v1/runs", json=launch_body(model, limit=8))
                if response.status_code != 504 and response.status_code < 500:
                    break
                await asyncio.sleep(0.2)
            assert response.status_code == 201, response.text
            done = await wait_terminal(client, response.json()["id"])
            assert done["status"] == "ok", (done["error"], done["phase"])
            assert done["summary"]["passed"] == 4 and done["summary"]["failed"] == 4
            # Usage is reported in short windows by the proxy: cost converges.
            for _ in range(100):
                if done["cost"]["model"]["calls"] == 8:
                    break
                await asyncio.sleep(0.1)
                done = (await client.get(f"/v1/runs/{done['id']}")).json()
            assert done["cost"]["model"]["calls"] == 8
    finally:
        stop_all(procs)
        model.stop()
    for service in SERVICES:
        log = (tmp_path / f"{service}.log").read_text()
        assert "Traceback" not in log, f"{service}:\n{log}"


async def test_killed_mid_sweep_the_run_resumes_where_its_log_ends(tmp_path: Path) -> None:
    rows = gsm8k_rows()[:30]
    oracle = gsm8k_oracle(rows)
    asked: list[tuple[float, int]] = []  # (when, task index) of every model call

    def slow(prompt: str) -> str:
        index = next(i for i, r in enumerate(rows) if r["input"]["question"].strip() in prompt)
        asked.append((time.monotonic(), index))
        time.sleep(0.15)  # slow enough to kill the platform mid-sweep
        return oracle(prompt)

    model = FakeOpenAIServer(slow).start()
    env = {
        "BW_DATA_DIR": str(tmp_path / "data"),
        "BW_GATEWAY_PORT": str(free_port()),
        "BW_PROXY_PORT": str(free_port()),
        "BW_TASK_CONCURRENCY": "2",
    }
    env.pop("BW_NATS_URL", None)
    ready = tmp_path / "ready"
    first = spawn(["up"], {**env, "BW_READY_FILE": str(ready)}, tmp_path / "first.log")
    try:
        await wait_for_file(ready, [first])
        creds = json.loads((tmp_path / "data" / "credentials.json").read_text())
        headers = {"Authorization": f"Bearer {creds['token']}"}
        async with httpx.AsyncClient(base_url=creds["base_url"], headers=headers, timeout=30) as c:
            run_id = (await c.post("/v1/runs", json=launch_body(model, limit=30))).json()["id"]
            for _ in range(300):
                events = (await c.get(f"/v1/runs/{run_id}/events")).json()["data"]
                if sum(e["type"] == "MaterializeTaskAggregated" for e in events) >= 4:
                    break
                await asyncio.sleep(0.1)
            before = (await c.get(f"/v1/runs/{run_id}/events", params={"limit": 5000})).json()
        first.send_signal(signal.SIGKILL)  # no chance to clean up
        first.wait(10)
        killed_at = time.monotonic()
        # Its nats-server goes with it rather than holding the data directory.
        for _ in range(50):
            if not processes_mentioning(str(tmp_path / "data" / "nats")):
                break
            await asyncio.sleep(0.1)
        assert processes_mentioning(str(tmp_path / "data" / "nats")) == []
    finally:
        if first.poll() is None:
            first.kill()

    ready.unlink(missing_ok=True)
    second = spawn(["up"], {**env, "BW_READY_FILE": str(ready)}, tmp_path / "second.log")
    try:
        await wait_for_file(ready, [second])
        async with httpx.AsyncClient(base_url=creds["base_url"], headers=headers, timeout=30) as c:
            run = await wait_terminal(c, run_id)
            # The run carried on and finished every task.
            assert run["status"] == "ok", run
            after = (await c.get(f"/v1/runs/{run_id}/events", params={"limit": 5000})).json()
            events = after["data"]
            assert [e["seq"] for e in events] == list(range(len(events)))
            # Nothing that was stored before the kill is lost or changed.
            assert events[: len(before["data"])] == before["data"]
            assert events[-1]["type"] == "PipelineFinished"
            assert "PipelineResumed" in [e["type"] for e in events]
            indices = [
                e["data"]["index"] for e in events if e["type"] == "MaterializeTaskAggregated"
            ]
            assert sorted(indices) == list(range(30))  # each task once
            aggregated = len(indices)
            # No task finished before the kill was sent to the model again.
            finished_before = {
                e["data"]["index"]
                for e in before["data"]
                if e["type"] == "MaterializeTaskAggregated"
            }
            asked_again = {i for t, i in asked if t > killed_at} & finished_before
            assert asked_again == set()
            # The fingerprint is the one an uninterrupted run would have.
            derivation = (await c.get(f"/v1/runs/{run_id}/fingerprint")).json()
            assert derivation["matches"] is True
            assert [r["type"] for r in derivation["records"]] == [
                "FetchArtifact",
                "DatasetTasksArtifact",
                "SetupArtifact",
                "ModelProxyArtifact",
            ]
            # Messages the killed process had pulled but not acknowledged come back
            # after the ack wait, out of order: the read model converges all the same.
            for _ in range(300):
                tasks = (await c.get(f"/v1/runs/{run_id}/tasks")).json()
                if tasks["summary"]["total"] == aggregated:
                    break
                await asyncio.sleep(0.2)
            assert tasks["summary"]["total"] == aggregated
    finally:
        stop_all([second])
        model.stop()
    # SIGTERM shuts down cleanly: exit 0, and no orphaned nats-server.
    assert second.returncode == 0, (tmp_path / "second.log").read_text()
    assert processes_mentioning(str(tmp_path / "data" / "nats")) == []


async def test_two_platforms_on_one_machine_each_get_a_model_proxy(
    tmp_path: Path, fake_model: FakeOpenAIServer
) -> None:
    """The second ``benchwright up`` finds the proxy's default port taken, takes a free
    one, says which, and runs a task through it."""
    procs: list[subprocess.Popen[bytes]] = []
    blocker = None
    try:
        # Whatever holds the default port (another platform, another program).
        blocker = socket.socket()
        try:
            blocker.bind(("127.0.0.1", 8766))
            blocker.listen()
        except OSError:
            pass  # taken already: the same situation
        clients = []
        for name in ("one", "two"):
            env = {"BW_DATA_DIR": str(tmp_path / name), "BW_GATEWAY_PORT": str(free_port())}
            env["BW_READY_FILE"] = str(tmp_path / f"{name}.ready")
            procs.append(spawn(["up"], env, tmp_path / f"{name}.log"))
            await wait_for_file(tmp_path / f"{name}.ready", procs)
            creds = json.loads((tmp_path / name / "credentials.json").read_text())
            clients.append(creds)
        banners = [(tmp_path / f"{n}.log").read_text() for n in ("one", "two")]
        proxies = [b.split("model proxy: ")[1].split()[0] for b in banners]
        assert len(set(proxies)) == 2 and not any(p.endswith(":8766") for p in proxies), proxies
        for creds in clients:
            headers = {"Authorization": f"Bearer {creds['token']}"}
            async with httpx.AsyncClient(
                base_url=creds["base_url"], headers=headers, timeout=30
            ) as c:
                body = launch_body(fake_model, limit=1)
                run_id = (await c.post("/v1/runs", json=body)).json()["id"]
                run = await wait_terminal(c, run_id)
                assert run["status"] == "ok" and run["summary"]["total"] == 1, run
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        if blocker is not None:
            blocker.close()
