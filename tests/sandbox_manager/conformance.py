"""The suite every sandbox backend must pass (``SandboxBackend`` in ``ports.py``).

Import ``BackendConformance`` into a test module as a ``Test…`` subclass and give
it a ``backend_name`` fixture; ``test_conformance.py`` does so for every backend
in the registry. The suite builds each backend through ``get_backend`` with its
own settings (an egress proxy it runs itself), so a new backend passes or fails
the same checks: files, exec and its time limit, snapshots, kill, resource
limits, a scrubbed environment, no view of the host, no network but the
forwarded addresses, and a sandbox's own absolute directories (``TASK_DIRS``, as
a Harbor task has them; a remote backend's fake must be able to present them).
"""

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from benchwright_sandbox_manager.backends import get_backend
from benchwright_sandbox_manager.ports import (
    BackendError,
    ExecResult,
    SandboxBackend,
    SandboxLimits,
    UnsafePathError,
)
from benchwright_shared.settings import Settings
from tests.sandbox_manager.probes import (
    HOST_VIEW,
    NETWORK_PROBE,
    Listener,
    gone,
    host_processes,
    marker,
)

SECRET = "sk-conformance-must-not-leak"
# A sandbox's own absolute directories, as a Harbor task's sandbox has them.
TASK_DIRS = ("/app", "/logs")
# Where it is, what /app holds, a reward; then the working directory's listing ($HOME).
HARBOR_STEP = (
    "pwd; cat x.txt; mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; "
    "touch mine; ls -A \"$HOME\" | tr '\\n' ' '; echo"
)
OWNERSHIP = (
    "import json, os\n"
    "print(json.dumps({d: [os.access(d, os.W_OK), os.stat(d + '/mine').st_uid == os.getuid()]"
    " for d in ('/app', '/logs')}))"
)
REPOSITORY = Path(__file__).resolve().parents[2]
HOST_PASSWD = Path("/etc/passwd").read_text()


class BackendConformance:
    """The checks; a subclass provides ``backend_name``."""

    @pytest.fixture
    async def egress(self) -> AsyncIterator[Listener]:
        async with Listener(b"egress-pong\n") as listener:
            yield listener

    @pytest.fixture
    def backend_settings(self, egress: Listener) -> dict[str, object]:
        """Settings for the backend under test; a remote backend's module overrides
        this to point it at its fake service (and its egress at ``egress``)."""
        return {"egress_proxy_url": f"http://127.0.0.1:{egress.port}"}

    @pytest.fixture
    async def backend(
        self,
        backend_name: str,
        backend_settings: dict[str, object],
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> AsyncIterator[SandboxBackend]:
        # What the service's own environment holds must never reach a sandbox.
        monkeypatch.setenv("BW_OPENROUTER_API_KEY", SECRET)
        settings = Settings.model_validate({"data_dir": tmp_path / "data", **backend_settings})
        backend = get_backend(backend_name, tmp_path / "data" / "sandboxes", settings)
        await backend.start()
        assert backend.isolation != "none", "the conformance suite runs isolated backends"
        yield backend
        await backend.close()

    @pytest.fixture
    async def sandbox(self, backend: SandboxBackend) -> AsyncIterator[str]:
        sandbox_id = f"sbx_{uuid.uuid4()}"
        await backend.create(sandbox_id)
        yield sandbox_id
        await backend.kill(sandbox_id)

    @staticmethod
    async def run(
        backend: SandboxBackend,
        sandbox_id: str,
        argv: list[str],
        *,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        timeout_s: float = 30,
        limits: SandboxLimits | None = None,
    ) -> ExecResult:
        return await backend.exec(
            sandbox_id, argv, stdin=stdin, env=env or {}, timeout_s=timeout_s, limits=limits
        )

    @staticmethod
    def limits(**changes: int) -> SandboxLimits:
        return replace(SandboxLimits.from_settings(Settings()), **changes)

    # -- files ----------------------------------------------------------------------
    async def test_files_go_in_and_come_out(self, backend: SandboxBackend, sandbox: str) -> None:
        await backend.put_file(sandbox, "data/in.txt", b"h\xc3\xa9llo")
        assert await backend.get_file(sandbox, "data/in.txt") == "héllo".encode()
        script = "open('data/out.txt', 'w').write(open('data/in.txt').read().upper())"
        assert (await self.run(backend, sandbox, ["python", "-c", script])).exit_code == 0
        assert await backend.get_file(sandbox, "data/out.txt") == "HÉLLO".encode()
        for bad in ("../escape.txt", "/etc/passwd", "a/../../b"):
            with pytest.raises(UnsafePathError):
                await backend.put_file(sandbox, bad, b"no")

    async def test_a_symlink_a_command_plants_leads_nowhere(
        self, backend: SandboxBackend, sandbox: str
    ) -> None:
        script = "import os; os.symlink('/etc/hostname', 'host'); os.symlink('..', 'up')"
        assert (await self.run(backend, sandbox, ["python", "-c", script])).exit_code == 0
        for path in ("host", "up/secret.txt"):
            with pytest.raises(UnsafePathError):
                await backend.get_file(sandbox, path)

    # -- a sandbox's own absolute directories ------------------------------------------
    @pytest.fixture
    async def task_sandbox(self, backend: SandboxBackend) -> AsyncIterator[str]:
        sandbox_id = f"sbx_{uuid.uuid4()}"
        await backend.create(sandbox_id, dirs=TASK_DIRS)
        yield sandbox_id
        await backend.kill(sandbox_id)

    async def test_a_harbor_task_runs_in_its_own_directories(
        self, backend: SandboxBackend, task_sandbox: str
    ) -> None:
        await backend.put_file(task_sandbox, "/app/x.txt", b"given\n")
        await backend.put_file(task_sandbox, "kept.txt", b"in the working directory")
        step = await backend.exec(
            task_sandbox,
            ["sh", "-c", HARBOR_STEP],
            stdin=None,
            env={},
            timeout_s=30,
            cwd="/app",
        )
        assert step.exit_code == 0, step.stderr
        where, given, listing = step.stdout.splitlines()
        assert (where, given) == ("/app", "given")
        # /work shows the working directory's files, never the folders behind /app or /logs.
        assert "kept.txt" in listing.split()
        assert not {"app", "logs", "dirs", "x.txt", "mine"} & set(listing.split()), listing
        reward = await self.run(backend, task_sandbox, ["cat", "/logs/verifier/reward.txt"])
        assert (reward.exit_code, reward.stdout) == (0, "1\n")
        assert await backend.get_file(task_sandbox, "/logs/verifier/reward.txt") == b"1\n"
        touch = await backend.exec(
            task_sandbox, ["touch", "mine"], stdin=None, env={}, timeout_s=30, cwd="/logs"
        )
        assert touch.exit_code == 0, touch.stderr
        owned = await self.run(backend, task_sandbox, ["python", "-c", OWNERSHIP])
        assert json.loads(owned.stdout) == {"/app": [True, True], "/logs": [True, True]}
        below = await backend.exec(
            task_sandbox, ["pwd"], stdin=None, env={}, timeout_s=30, cwd="/logs/verifier"
        )
        assert below.stdout == "/logs/verifier\n"
        missing = await backend.exec(
            task_sandbox, ["pwd"], stdin=None, env={}, timeout_s=30, cwd="/app/nowhere"
        )
        assert missing.exit_code == 126 and "/app/nowhere" in missing.stderr

    async def test_only_the_sandboxs_own_directories_take_absolute_paths(
        self, backend: SandboxBackend, task_sandbox: str, sandbox: str
    ) -> None:
        for bad in ("/etc/passwd", "/app/../etc/x", "/app", "/application/x", "/tmp/x"):
            with pytest.raises(UnsafePathError):
                await backend.put_file(task_sandbox, bad, b"no")
        with pytest.raises(UnsafePathError):
            await backend.put_file(sandbox, "/app/x.txt", b"no dirs here")
        for cwd in ("/etc", "/work", "../x", "/app/../etc"):
            with pytest.raises(UnsafePathError):
                await backend.exec(
                    task_sandbox, ["true"], stdin=None, env={}, timeout_s=30, cwd=cwd
                )
        plant = "ln -s /etc/hostname /app/host && ln -s .. /logs/up"
        assert (await self.run(backend, task_sandbox, ["sh", "-c", plant])).exit_code == 0
        for path in ("/app/host", "/logs/up/etc/hostname"):
            with pytest.raises(UnsafePathError):
                await backend.get_file(task_sandbox, path)

    @pytest.mark.parametrize(
        "dirs",
        [
            ["app"],
            ["/"],
            ["/app/"],
            ["/app/../etc"],
            ["//app"],
            ["/etc/app"],
            ["/usr"],
            ["/lib64/x"],
            ["/tmp"],
            ["/opt"],
            ["/work/app"],
            ["/app", "/app/sub"],
            [f"/d{i}" for i in range(17)],
        ],
    )
    async def test_bad_directories_are_refused_before_anything_exists(
        self, backend: SandboxBackend, dirs: list[str]
    ) -> None:
        sandbox_id = f"sbx_{uuid.uuid4()}"
        with pytest.raises(UnsafePathError):
            await backend.create(sandbox_id, dirs=dirs)
        with pytest.raises((BackendError, OSError)):
            await backend.get_file(sandbox_id, "anything")

    async def test_the_disk_quota_counts_the_own_directories(
        self, backend: SandboxBackend, task_sandbox: str
    ) -> None:
        limits = self.limits(disk_mb=32, file_size_mb=8)
        fill = (
            "import itertools\n"
            "for i in itertools.count():\n"
            "    open(f'/logs/fill{i}', 'wb').write(b'x' * (4 << 20))\n"
        )
        result = await backend.exec(
            task_sandbox,
            ["python", "-c", fill],
            stdin=None,
            env={},
            timeout_s=60,
            limits=limits,
            cwd="/app",
        )
        assert result.exit_code != 0 and not result.timed_out
        assert "disk quota" in result.stderr

    async def test_kill_takes_the_own_directories_too(self, backend: SandboxBackend) -> None:
        sandbox_id = f"sbx_{uuid.uuid4()}"
        await backend.create(sandbox_id, dirs=TASK_DIRS)
        await backend.put_file(sandbox_id, "/app/x.txt", b"x")
        await backend.kill(sandbox_id)
        with pytest.raises((BackendError, OSError)):
            await backend.get_file(sandbox_id, "/app/x.txt")

    # -- exec -----------------------------------------------------------------------
    async def test_exec_reports_exit_code_output_and_takes_stdin(
        self, backend: SandboxBackend, sandbox: str
    ) -> None:
        script = "import sys; d = sys.stdin.read(); print(d.upper()); sys.exit(len(d))"
        result = await self.run(backend, sandbox, ["python", "-c", script], stdin=b"abc")
        assert (result.exit_code, result.stdout, result.timed_out) == (3, "ABC\n", False)
        missing = await self.run(backend, sandbox, ["no-such-program"])
        assert missing.exit_code == 127 and "no-such-program" in missing.stderr
        lines = backend.exec_lines(
            sandbox,
            ["python", "-c", "import sys\nfor l in sys.stdin: print(l.strip() * 2)"],
            stdin_lines=["a", "b"],
            env={},
            timeout_s=30,
        )
        assert [line async for line in lines] == ["aa\n", "bb\n"]
        with pytest.raises(BackendError, match="exit code 4"):
            failing = ["python", "-c", "raise SystemExit(4)"]
            async for _ in backend.exec_lines(
                sandbox, failing, stdin_lines=[], env={}, timeout_s=30
            ):
                pass

    async def test_a_timeout_kills_the_tree_and_the_sandbox_keeps_working(
        self, backend: SandboxBackend, sandbox: str
    ) -> None:
        mark = marker()
        script = (
            "import subprocess, time\n"
            f"subprocess.Popen(['sleep', '{mark}'])\n"
            "print('started', flush=True)\n"
            "time.sleep(60)\n"
        )
        started = time.monotonic()
        result = await self.run(backend, sandbox, ["python", "-c", script], timeout_s=2)
        assert result.timed_out and result.stdout == "started\n"
        assert time.monotonic() - started < 15
        assert await gone(f"sleep {mark}")
        again = await self.run(backend, sandbox, ["python", "-c", "print('still here')"])
        assert (again.exit_code, again.stdout) == (0, "still here\n")

    async def test_nothing_outlives_its_command(
        self, backend: SandboxBackend, sandbox: str
    ) -> None:
        """A daemon (double fork, new session) dies with the command that started it."""
        mark = marker()
        script = (
            "import os, subprocess\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            f"    subprocess.Popen(['sleep', '{mark}'], stdout=subprocess.DEVNULL,"
            " stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)\n"
            "    os._exit(0)\n"
            "os.wait()\n"
        )
        result = await self.run(backend, sandbox, ["python", "-c", script], timeout_s=20)
        assert result.exit_code == 0 and not result.timed_out and result.duration_ms < 10_000
        assert await gone(f"sleep {mark}")
        listing = "import os; print(sum(p.isdigit() for p in os.listdir('/proc')))"
        inside = await self.run(backend, sandbox, ["python", "-c", listing])
        assert int(inside.stdout) <= 3  # the sandbox's init, the command, its forwarder

    async def test_kill_stops_what_runs_and_removes_the_sandbox(
        self, backend: SandboxBackend
    ) -> None:
        sandbox_id = f"sbx_{uuid.uuid4()}"
        await backend.create(sandbox_id)
        mark = marker()
        running = asyncio.create_task(self.run(backend, sandbox_id, ["sleep", mark], timeout_s=120))
        for _ in range(200):
            if host_processes(f"sleep {mark}"):
                break
            await asyncio.sleep(0.05)
        await backend.kill(sandbox_id)
        result = await asyncio.wait_for(running, 10)
        assert result.exit_code != 0
        assert await gone(f"sleep {mark}")
        with pytest.raises((BackendError, OSError)):
            await backend.get_file(sandbox_id, "anything")

    # -- snapshots ------------------------------------------------------------------
    async def test_snapshot_and_restore(
        self, backend: SandboxBackend, sandbox: str, tmp_path: Path
    ) -> None:
        await backend.put_file(sandbox, "kept.txt", b"given")
        made = "import os; os.makedirs('made/deep'); open('made/deep/f.txt', 'w').write('made')"
        assert (await self.run(backend, sandbox, ["python", "-c", made])).exit_code == 0
        archive = tmp_path / "snap.tar.gz"
        await backend.snapshot(sandbox, archive)
        restored = f"sbx_{uuid.uuid4()}"
        await backend.create(restored)
        try:
            await backend.restore(restored, archive)
            assert await backend.get_file(restored, "kept.txt") == b"given"
            change = "open('made/deep/f.txt', 'a').write('+more')"
            assert (await self.run(backend, restored, ["python", "-c", change])).exit_code == 0
            assert await backend.get_file(restored, "made/deep/f.txt") == b"made+more"
        finally:
            await backend.kill(restored)

    # -- the environment ------------------------------------------------------------
    async def test_the_environment_is_only_what_the_command_is_given(
        self, backend: SandboxBackend, sandbox: str
    ) -> None:
        script = (
            "import json, os\n"
            "seen = dict(os.environ)\n"
            "for pid in os.listdir('/proc'):\n"
            "    try: seen[pid] = open(f'/proc/{pid}/environ', 'rb').read().decode()\n"
            "    except OSError: pass\n"
            "print(json.dumps(seen))\n"
        )
        result = await self.run(backend, sandbox, ["python", "-c", script], env={"GIVEN": "yes"})
        assert result.exit_code == 0, result.stderr
        env = json.loads(result.stdout)
        assert env["GIVEN"] == "yes"
        assert SECRET not in result.stdout and "BW_OPENROUTER_API_KEY" not in result.stdout

    # -- limits ---------------------------------------------------------------------
    async def test_memory_is_limited(self, backend: SandboxBackend, sandbox: str) -> None:
        script = "x = bytearray(1024 * 1024 * 1024)"
        result = await self.run(
            backend, sandbox, ["python", "-c", script], limits=self.limits(memory_mb=256)
        )
        assert result.exit_code != 0 and "MemoryError" in result.stderr

    async def test_cpu_time_is_limited(self, backend: SandboxBackend, sandbox: str) -> None:
        started = time.monotonic()
        result = await self.run(
            backend,
            sandbox,
            ["python", "-c", "while True: pass"],
            timeout_s=60,
            limits=self.limits(cpu_seconds=1),
        )
        assert result.exit_code != 0 and not result.timed_out
        assert time.monotonic() - started < 20

    async def test_file_size_is_limited(self, backend: SandboxBackend, sandbox: str) -> None:
        script = "open('big', 'wb').write(b'x' * (8 << 20))"
        result = await self.run(
            backend, sandbox, ["python", "-c", script], limits=self.limits(file_size_mb=4)
        )
        assert result.exit_code != 0 and "File too large" in result.stderr

    async def test_processes_are_limited(self, backend: SandboxBackend, sandbox: str) -> None:
        script = (
            "import os, time\n"
            "n = 0\n"
            "try:\n"
            "    for _ in range(200):\n"
            "        if os.fork() == 0:\n"
            "            time.sleep(30); os._exit(0)\n"
            "        n += 1\n"
            "except OSError as exc:\n"
            "    print(n, type(exc).__name__)\n"
        )
        result = await self.run(
            backend, sandbox, ["python", "-c", script], limits=self.limits(max_procs=20)
        )
        count, error = result.stdout.split()
        assert int(count) < 20 and error == "BlockingIOError", result

    async def test_disk_is_limited(self, backend: SandboxBackend, sandbox: str) -> None:
        limits = self.limits(disk_mb=64, file_size_mb=16, tmp_mb=8)
        tmp = "open('/tmp/big', 'wb').write(b'x' * (12 << 20))"
        result = await self.run(backend, sandbox, ["python", "-c", tmp], limits=limits)
        assert result.exit_code != 0 and "No space left" in result.stderr
        fill = (
            "import itertools\n"
            "for i in itertools.count():\n"
            "    open(f'fill{i}', 'wb').write(b'x' * (8 << 20))\n"
        )
        result = await self.run(
            backend, sandbox, ["python", "-c", fill], timeout_s=60, limits=limits
        )
        assert result.exit_code != 0 and not result.timed_out
        assert "disk quota" in result.stderr

    # -- what the sandbox can see and reach -------------------------------------------
    async def test_the_host_is_out_of_sight(
        self, backend: SandboxBackend, sandbox: str, tmp_path: Path
    ) -> None:
        other = f"sbx_{uuid.uuid4()}"
        await backend.create(other)
        await backend.put_file(other, "secret.txt", b"other sandbox's")
        host_secret = tmp_path / "host-secret.txt"
        host_secret.write_text(SECRET)
        try:
            paths = [
                "/etc/passwd",
                str(host_secret),
                str(tmp_path),
                str(Path.home()),
                str(REPOSITORY),
                f"../{other}/secret.txt",
                "/proc/1/environ",
            ]
            result = await self.run(backend, sandbox, ["python", "-c", HOST_VIEW, *paths])
            assert result.exit_code == 0, result.stderr
            seen = json.loads(result.stdout)
        finally:
            await backend.kill(other)
        assert seen["/etc/passwd"] != HOST_PASSWD
        assert HOST_PASSWD.splitlines()[0] not in seen["/etc/passwd"]
        assert seen[str(host_secret)].startswith("error")
        assert seen[str(tmp_path)].startswith("error")
        assert seen[f"../{other}/secret.txt"].startswith("error")
        assert SECRET not in result.stdout and "other sandbox's" not in result.stdout
        for path in (str(Path.home()), paths[4]):  # at most the runtime's own directory
            listed = seen[path]
            assert listed.startswith("error") if isinstance(listed, str) else len(listed) <= 1

    async def test_the_network_is_only_the_forwarders(
        self, backend: SandboxBackend, sandbox: str, egress: Listener
    ) -> None:
        async with Listener(b"model-pong\n") as model, Listener(b"leak\n") as other:
            result = await self.run(
                backend,
                sandbox,
                ["python", "-c", NETWORK_PROBE, str(other.port), str(model.port)],
                env={"BW_MODEL_PROXY_URL": f"http://127.0.0.1:{model.port}/v1"},
            )
            assert result.exit_code == 0, result.stderr
            report = json.loads(result.stdout)
            assert report["model"] == "model-pong\n"
            assert report["egress"] == "egress-pong\n"
            for name in ("other_host_port", "model_port_on_another_address", "external"):
                assert report[name].startswith("error"), (name, report)
            assert report["private"].startswith("error") and report["dns"].startswith("error")
            assert report["interfaces"] == ["lo"]
            assert other.connections == 0 and model.connections == 1
