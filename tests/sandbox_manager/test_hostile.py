"""Hostile scorers: real malicious ``task_impl.py`` files swept by the sandbox-manager.

Each row of the dataset names an attack the scorer carries out in ``solve``. An
attack that works returns ``ESCAPED: <evidence>`` (a pass row); one that fails
raises, which the runner turns into an ``err`` row. The sweep goes through the
real service over NATS (``RunTasks``), with a fake model behind the forwarder,
and must finish with every attack an ``err`` row and the honest tasks passing.
"""

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from benchwright_shared.contracts import (
    KillSandbox,
    RunTasks,
    SandboxKilled,
    SandboxTasksFinished,
    TaskOutcome,
    TaskSpec,
)
from benchwright_shared.settings import Settings
from tests.sandbox_manager.conformance import HOST_PASSWD
from tests.sandbox_manager.conftest import SandboxService, new_id
from tests.sandbox_manager.probes import Listener, gone, marker

pytestmark = pytest.mark.connected

PROVIDER_KEY = "sk-or-v1-hostile-suite-real-provider-key"
THIS_FILE = Path(__file__).resolve()

HOSTILE_SCORER = r'''
import itertools, json, os, socket, subprocess
from bench_task import BenchTask


class AttackFailed(Exception):
    pass


def escaped(evidence):
    return "ESCAPED: " + str(evidence)[:1000]


class Task(BenchTask):
    def solve(self, index, input):
        if input == "control":
            return self.complete("What is 2 + 2?")
        return getattr(self, "attack_" + input["attack"])(input)

    def score(self, index, output, expected):
        if output.startswith("ESCAPED") or output == expected:
            return 1.0
        raise AttackFailed(output)

    # -- secrets ---------------------------------------------------------------
    def attack_env_secret(self, input):
        """The provider key: in our environment, or any process's we can see."""
        places = {"self": "\n".join(f"{k}={v}" for k, v in os.environ.items())}
        for pid in os.listdir("/proc"):
            for part in ("environ", "cmdline"):
                try:
                    places[f"{pid}/{part}"] = open(f"/proc/{pid}/{part}", "rb").read().decode()
                except OSError:
                    pass
        for place, text in places.items():
            for marker in ("OPENROUTER", "OPENAI_API_KEY", "sk-or-"):
                if marker in text:
                    return escaped(f"{place}: {text}")
        raise AttackFailed(f"no provider key in {len(places)} places")

    # -- the host's files --------------------------------------------------------
    def attack_host_passwd(self, input):
        text = open("/etc/passwd").read()
        if input["host_line"] in text:
            return escaped(text)
        raise AttackFailed("only a passwd of the sandbox's own: " + text.splitlines()[0])

    def attack_host_files(self, input):
        errors = []
        for path in input["paths"]:
            try:
                if os.path.isdir(path):
                    listing = os.listdir(path)
                    if listing:
                        return escaped(f"{path}: {listing}")
                    errors.append(f"{path}: empty")
                else:
                    return escaped(f"{path}: {open(path).read()}")
            except OSError as exc:
                errors.append(f"{path}: {type(exc).__name__}")
        raise PermissionError("; ".join(errors))

    # -- the network -------------------------------------------------------------
    def attack_direct_provider(self, input):
        errors = []
        for host, port in input["addresses"]:
            try:
                with socket.create_connection((host, port), timeout=3) as conn:
                    conn.sendall(b"GET / HTTP/1.0\r\n\r\n")
                    return escaped(f"{host}:{port} answered {conn.recv(100)!r}")
            except OSError as exc:
                errors.append(f"{host}:{port}: {type(exc).__name__}")
        try:
            socket.getaddrinfo("openrouter.ai", 443)
            return escaped("DNS resolved openrouter.ai")
        except OSError as exc:
            errors.append(f"dns: {type(exc).__name__}")
        raise ConnectionError("; ".join(errors))

    # -- resources ---------------------------------------------------------------
    def attack_memory(self, input):
        hoard = []
        while True:
            hoard.append(bytearray(64 << 20))

    def attack_disk_tmp(self, input):
        with open("/tmp/fill", "wb") as f:
            while True:
                f.write(b"x" * (1 << 20))

    def attack_disk_file(self, input):
        with open("fill.bin", "wb") as f:
            while True:
                f.write(b"x" * (1 << 20))

    def attack_outlive(self, input):
        """A daemon (double fork, its own session) meant to keep running after the run."""
        if os.fork() == 0:
            os.setsid()
            subprocess.Popen(["sleep", input["marker"]], start_new_session=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
            os._exit(0)
        os.wait()
        return "daemon started"

    def attack_fork_bomb(self, input):
        while True:
            os.fork()
'''

DISK_FILLER = """
import itertools
from bench_task import BenchTask


class Task(BenchTask):
    def solve(self, index, input):
        for i in itertools.count():
            with open(f"fill{i}.bin", "wb") as f:
                f.write(b"x" * (16 << 20))

    def score(self, index, output, expected):
        return 0.0
"""


class FakeModel:
    """An OpenAI-compatible endpoint on the host's loopback: every answer is "4"."""

    def __init__(self) -> None:
        self.calls = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> "FakeModel":
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": "4"}}]})
        try:
            while await reader.readline():
                length = 0
                while (header := await reader.readline()) not in (b"\r\n", b""):
                    name, _, value = header.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                await reader.readexactly(length)
                self.calls += 1
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
                )
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


@pytest.fixture
async def hostile(
    nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[SandboxService]:
    """The sandbox-manager with a real provider key in its own environment."""
    monkeypatch.setenv("BW_OPENROUTER_API_KEY", PROVIDER_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", PROVIDER_KEY)
    settings = Settings(
        data_dir=tmp_path / "data",
        nats_url=nats_url,
        sandbox_memory_mb=1024,
        sandbox_file_size_mb=64,
        sandbox_tmp_mb=32,
        sandbox_max_procs=64,
    )
    service = SandboxService(settings)
    await service.start()
    yield service
    await service.close()


def dataset(rows: Sequence[tuple[str, object]]) -> str:
    return "".join(
        json.dumps({"task_id": name, "input": attack, "expected": "4"}) + "\n"
        for name, attack in rows
    )


async def sweep(
    service: SandboxService, sandbox_id: str, tasks: int, model: FakeModel
) -> tuple[SandboxTasksFinished, dict[str, TaskOutcome]]:
    command = RunTasks(
        command_id=new_id(),
        run_id="run_test",
        sandbox_id=sandbox_id,
        tasks=[TaskSpec(index=i) for i in range(tasks)],
        concurrency=1,
        timeout_s=60,
        env={
            "BW_MODEL_PROXY_URL": f"http://127.0.0.1:{model.port}",
            "BW_MODEL_MODEL": "fake",
            "BW_MODEL_PROXY_KEY": "bw-run-scoped-fake-key",
        },
    )
    finished = await service.send(command, timeout=240)
    assert isinstance(finished, SandboxTasksFinished), finished
    rows = {row.task_id: row for row in service.results.get(command.command_id, [])}
    return finished, rows


async def test_every_attack_fails_and_the_sweep_finishes_with_err_rows(
    hostile: SandboxService, tmp_path: Path
) -> None:
    other_id = await hostile.new_sandbox({"secret.txt": "another run's data"})
    host_secret = tmp_path / "host-secret.txt"
    host_secret.write_text(PROVIDER_KEY)
    data_dir = hostile.settings.data_dir
    sandboxes_dir = hostile.service.manager.root / "local"
    daemon = marker()
    assert hostile.settings.nats_url
    nats_port = int(hostile.settings.nats_url.rsplit(":", 1)[1])
    async with FakeModel() as model, Listener(b"HTTP/1.0 200 OK\r\n\r\nprovider") as provider:
        rows = [
            ("control", "control"),
            ("env_secret", {"attack": "env_secret"}),
            (
                "host_passwd",
                {"attack": "host_passwd", "host_line": HOST_PASSWD.split()[0]},
            ),
            (
                "host_files",
                {
                    "attack": "host_files",
                    "paths": [
                        str(host_secret),
                        str(THIS_FILE),  # the repository
                        str(Path.home() / ".ssh"),
                        str(data_dir),
                        str(sandboxes_dir / other_id / "work" / "secret.txt"),
                        f"../{other_id}/work/secret.txt",
                        "/proc/1/root/etc/shadow",
                    ],
                },
            ),
            (
                "direct_provider",
                {
                    "attack": "direct_provider",
                    "addresses": [
                        ["127.0.0.1", provider.port],  # a provider's stand-in on the host
                        ["127.0.0.1", nats_port],  # the platform's own bus
                        ["1.1.1.1", 443],
                        ["10.0.0.1", 443],
                    ],
                },
            ),
            ("memory", {"attack": "memory"}),
            ("disk_tmp", {"attack": "disk_tmp"}),
            ("disk_file", {"attack": "disk_file"}),
            ("outlive", {"attack": "outlive", "marker": daemon}),
            ("fork_bomb", {"attack": "fork_bomb"}),
            ("control_after", "control"),
        ]
        sandbox_id = await hostile.new_sandbox(
            {"task_impl.py": HOSTILE_SCORER, "tasks.jsonl": dataset(rows)}
        )
        finished, results = await sweep(hostile, sandbox_id, len(rows), model)

    assert finished.error_type is None, finished.detail
    assert finished.completed == len(rows) and set(results) == {name for name, _ in rows}
    # The honest tasks reached the model through the forwarder, before and after the attacks.
    for name in ("control", "control_after"):
        assert (results[name].outcome, results[name].output) == ("pass", "4"), results[name]
    assert model.calls == 2 and provider.connections == 0
    # Every attack failed: an err row each, naming what stopped it.
    attacks = {name: row for name, row in results.items() if not name.startswith("control")}
    for name, row in attacks.items():
        assert row.outcome == "err", (name, row.output)
    expected_errors = {
        "env_secret": "solve:AttackFailed",
        "host_passwd": "solve:AttackFailed",
        "host_files": "solve:PermissionError",
        "direct_provider": "solve:ConnectionError",
        "memory": "solve:MemoryError",
        "disk_tmp": "solve:OSError",
        "disk_file": "solve:OSError",
        "outlive": "score:AttackFailed",
        "fork_bomb": "solve:BlockingIOError",
    }
    assert {name: row.error_type for name, row in attacks.items()} == expected_errors
    assert "No space left" in (attacks["disk_tmp"].error or "")
    assert "File too large" in (attacks["disk_file"].error or "")
    for part in ("ConnectionRefusedError", "OSError", "dns: gaierror"):
        assert part in (attacks["direct_provider"].error or "")
    # Nothing the attacks read made it out.
    everything = json.dumps([row.model_dump() for row in results.values()])
    assert PROVIDER_KEY not in everything and "another run's data" not in everything
    # The daemon did not outlive the sweep, and the sandbox's files are all it wrote to.
    assert await gone(f"sleep {daemon}")
    killed = await hostile.send(
        KillSandbox(command_id=new_id(), run_id="run_test", sandbox_id=sandbox_id)
    )
    assert isinstance(killed, SandboxKilled)
    assert not (sandboxes_dir / sandbox_id).exists()
    assert (sandboxes_dir / other_id / "work" / "secret.txt").read_text() == "another run's data"


async def test_a_scorer_filling_the_disk_is_stopped_by_the_quota(
    nats_url: str, tmp_path: Path
) -> None:
    """Many files, each under the file size limit: the sandbox's quota kills the sweep."""
    settings = Settings(
        data_dir=tmp_path / "data", nats_url=nats_url, sandbox_disk_mb=128, sandbox_file_size_mb=32
    )
    service = await SandboxService(settings).start()
    try:
        sandbox_id = await service.new_sandbox(
            {"task_impl.py": DISK_FILLER, "tasks.jsonl": dataset([("fill", "x")])}
        )
        async with FakeModel() as model:
            finished, rows = await sweep(service, sandbox_id, 1, model)
        assert finished.error_type == "sandbox_exec_failed" and rows == {}
        assert "disk quota of 128 MiB" in (finished.detail or "")
        workdir = service.service.manager.root / "local" / sandbox_id / "work"
        written = sum(f.stat().st_size for f in workdir.glob("fill*.bin"))
        assert 128 << 20 <= written < 1 << 30  # stopped within moments of reaching the quota
    finally:
        await service.close()
