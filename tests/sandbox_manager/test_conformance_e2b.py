"""The `e2b` backend passes the conformance suite, against a fake of E2B on loopback.

The fake (``fakes/e2b_api.py``) speaks E2B's REST API and envd to the real e2b SDK;
each of its sandboxes is a sandbox of the `local` backend, so the suite's isolation
checks meet real isolation while what they prove is the e2b adapter: the launcher
it sends with every command, its files, snapshots, limits and environment.
"""

import json
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from benchwright_sandbox_manager.backends import get_backend
from benchwright_sandbox_manager.backends.e2b import E2BBackend
from benchwright_sandbox_manager.backends.e2b import backend as e2b_backend
from benchwright_sandbox_manager.backends.e2b.commands import proxied_env
from benchwright_sandbox_manager.ports import IsolationUnavailableError, SandboxBackend
from benchwright_shared.settings import Settings
from tests.sandbox_manager.conformance import TASK_DIRS, BackendConformance
from tests.sandbox_manager.fakes.e2b_api import FakeE2B
from tests.sandbox_manager.probes import Listener, gone, marker

API_KEY = "e2b_fake_key_that_must_stay_outside"

ENV_AND_PROCESSES = """
import json, os
seen = {"env": dict(os.environ), "proc": {}}
for pid in os.listdir('/proc'):
    for part in ("environ", "cmdline"):
        try: data = open(f'/proc/{pid}/{part}', 'rb').read()
        except OSError: continue
        seen["proc"][f"{pid}/{part}"] = data.decode(errors='replace')
print(json.dumps(seen))
"""


@pytest.fixture(autouse=True)
def no_e2b_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK reads ``E2B_*`` variables for what it is not given: none here."""
    for name in ("E2B_API_KEY", "E2B_API_URL", "E2B_SANDBOX_URL", "E2B_DOMAIN", "E2B_DEBUG"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def fake_e2b(tmp_path: Path) -> AsyncIterator[FakeE2B]:
    fake = await FakeE2B(tmp_path / "fake-e2b", API_KEY, vm_dirs=TASK_DIRS).start()
    yield fake
    await fake.close()


def e2b_settings(fake: FakeE2B, egress_port: int) -> dict[str, object]:
    return {
        "e2b_api_key": API_KEY,
        "e2b_api_url": fake.url,
        "e2b_sandbox_url": fake.url,
        "e2b_egress_proxy_url": f"http://127.0.0.1:{egress_port}",
    }


class TestE2BBackend(BackendConformance):
    @pytest.fixture
    def backend_name(self) -> str:
        return "e2b"

    @pytest.fixture
    def backend_settings(self, egress: Listener, fake_e2b: FakeE2B) -> dict[str, object]:
        return e2b_settings(fake_e2b, egress.port)

    async def test_nothing_outlives_its_command(
        self, backend: SandboxBackend, sandbox: str
    ) -> None:
        """The suite's check, with one difference in what the command may see in /proc.

        On an E2B VM (where user namespaces are allowed) the launcher mounts a /proc of
        the command's own PID namespace: the command and its init. Inside the fake each
        command is a bubblewrap sandbox, whose /proc the kernel will not let the launcher
        replace, so the command also sees bubblewrap's init, the egress forwarder, the
        launcher and its own init: five with itself, where `local` shows three. Checked
        instead: at most those five, and none of them what the daemon started.
        """
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
        listing = (
            "import json, os\n"
            "print(json.dumps([open(f'/proc/{p}/cmdline', 'rb').read().decode()"
            " for p in os.listdir('/proc') if p.isdigit()]))"
        )
        inside = await self.run(backend, sandbox, ["python", "-c", listing])
        seen = json.loads(inside.stdout)
        assert len(seen) <= 5 and not any(mark in cmdline for cmdline in seen), seen

    # -- e2b's own -------------------------------------------------------------------
    async def test_without_an_api_key_create_refuses_clearly(
        self, fake_e2b: FakeE2B, tmp_path: Path
    ) -> None:
        settings = Settings.model_validate(
            {"data_dir": tmp_path / "data", **e2b_settings(fake_e2b, 9), "e2b_api_key": None}
        )
        backend = get_backend("e2b", tmp_path / "sandboxes", settings)
        await backend.start()  # never raises
        with pytest.raises(IsolationUnavailableError, match="BW_E2B_API_KEY"):
            await backend.create(f"sbx_{uuid.uuid4()}")
        await backend.kill("sbx_never_made")
        assert fake_e2b.sandboxes == {}

    async def test_a_sandbox_can_reach_only_the_injector(
        self, backend: SandboxBackend, sandbox: str, fake_e2b: FakeE2B
    ) -> None:
        (made,) = fake_e2b.sandboxes.values()
        assert made.metadata == {"benchwright_sandbox_id": sandbox}
        assert made.template == "base"
        assert made.network == {
            "allowOut": ["127.0.0.1"],
            "denyOut": ["0.0.0.0/0"],
            "dnsServers": [],
        }
        assert made.allows("127.0.0.1") and not made.allows("1.1.1.1")

    async def test_the_environment_is_exactly_what_is_given(
        self, backend: SandboxBackend, sandbox: str, egress: Listener
    ) -> None:
        """envd's own variables (``E2B_SANDBOX``, ``USER``...) stay with the launcher."""
        result = await self.run(
            backend,
            sandbox,
            ["python", "-c", ENV_AND_PROCESSES],
            env={"GIVEN": "yes", "BW_MODEL_PROXY_URL": "http://127.0.0.1:9/v1"},
        )
        env = json.loads(result.stdout)["env"]
        proxy = f"http://127.0.0.1:{egress.port}"
        assert env["GIVEN"] == "yes" and env["HTTPS_PROXY"] == proxy
        assert env["NO_PROXY"].split(",") == ["localhost", "127.0.0.1"]
        assert set(env) == {
            "GIVEN",
            "BW_MODEL_PROXY_URL",
            *("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy"),
            *("PATH", "HOME", "PYTHONPATH", "LANG", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"),
        }

    async def test_the_injector_on_loopback_is_reached_at_its_e2b_address(
        self, backend: SandboxBackend, sandbox: str, egress: Listener
    ) -> None:
        """A run's injector URL names this host's loopback: the sandbox gets the same
        URL (its key included) at the address e2b sandboxes reach the injector at."""
        script = "import json, os; print(json.dumps(dict(os.environ)))"
        run = {"HTTPS_PROXY": "http://run:k%2Fey@127.0.0.1:1/"}
        result = await self.run(backend, sandbox, ["python", "-c", script], env=run)
        assert json.loads(result.stdout)["HTTPS_PROXY"] == (
            f"http://run:k%2Fey@127.0.0.1:{egress.port}/"
        )
        # A proxy the command names elsewhere is its own business.
        own = {"HTTPS_PROXY": "http://proxy.example:3128"}
        assert proxied_env(own, "http://injector.example:8899")["HTTPS_PROXY"] == (
            "http://proxy.example:3128"
        )

    async def test_the_api_key_never_reaches_a_sandbox(
        self, backend: SandboxBackend, sandbox: str
    ) -> None:
        result = await self.run(backend, sandbox, ["python", "-c", ENV_AND_PROCESSES])
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["proc"]  # it did see the processes
        assert API_KEY not in result.stdout

    async def test_a_restarted_backend_finds_its_sandboxes(
        self,
        backend: SandboxBackend,
        sandbox: str,
        fake_e2b: FakeE2B,
        egress: Listener,
        tmp_path: Path,
    ) -> None:
        await backend.put_file(sandbox, "kept.txt", b"before")
        settings = Settings.model_validate(
            {"data_dir": tmp_path / "data", **e2b_settings(fake_e2b, egress.port)}
        )
        again = get_backend("e2b", tmp_path / "again", settings)
        await again.start()
        assert await again.get_file(sandbox, "kept.txt") == b"before"
        result = await self.run(again, sandbox, ["python", "-c", "print(open('kept.txt').read())"])
        assert (result.exit_code, result.stdout) == (0, "before\n")
        await again.kill(sandbox)
        await again.close()
        assert fake_e2b.sandboxes == {}

    async def test_only_the_own_directories_are_made_as_root(
        self, backend: SandboxBackend, sandbox: str, task_sandbox: str, fake_e2b: FakeE2B
    ) -> None:
        """Root makes a task's directories and hands them to the user; nothing else
        (no command, no file) runs as root, and a sandbox without them asks root nothing."""
        (as_root,) = fake_e2b.as_root
        assert "mkdir -p -- /app /logs && chown -R -- " in as_root
        made = {
            box.metadata[e2b_backend.META_KEY]: box.metadata for box in fake_e2b.sandboxes.values()
        }
        assert made[task_sandbox][e2b_backend.META_DIRS] == json.dumps(list(TASK_DIRS))
        assert e2b_backend.META_DIRS not in made[sandbox]
        result = await self.run(backend, task_sandbox, ["id", "-u"])
        assert result.stdout.strip() != "0" and len(fake_e2b.as_root) == 1

    async def test_a_restarted_backend_finds_a_sandboxs_own_directories(
        self,
        task_sandbox: str,
        fake_e2b: FakeE2B,
        egress: Listener,
        tmp_path: Path,
    ) -> None:
        settings = Settings.model_validate(
            {"data_dir": tmp_path / "data", **e2b_settings(fake_e2b, egress.port)}
        )
        again = get_backend("e2b", tmp_path / "again", settings)
        await again.start()
        await again.put_file(task_sandbox, "/logs/kept.txt", b"after a restart")
        result = await again.exec(
            task_sandbox, ["cat", "kept.txt"], stdin=None, env={}, timeout_s=30, cwd="/logs"
        )
        assert (result.exit_code, result.stdout) == (0, "after a restart")
        await again.close()

    async def test_a_launcher_past_its_wall_clock_is_killed_from_outside(
        self, backend: SandboxBackend, sandbox: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The backstop: a launcher that does not keep its own clock is killed through envd."""
        assert isinstance(backend, E2BBackend)
        stuck = backend._launcher.replace('float(config["timeout_s"])', "3600.0")
        assert stuck != backend._launcher
        monkeypatch.setattr(backend, "_launcher", stuck)
        monkeypatch.setattr(e2b_backend, "STREAM_GRACE_S", 1.0)
        mark = marker()
        started = time.monotonic()
        result = await self.run(backend, sandbox, ["sleep", mark], timeout_s=1)
        assert result.timed_out and result.exit_code != 0
        assert time.monotonic() - started < 15
        assert await gone(f"sleep {mark}")

    async def test_a_long_command_keeps_its_sandbox_up(
        self, backend: SandboxBackend, sandbox: str, fake_e2b: FakeE2B
    ) -> None:
        """E2B ends a sandbox at its timeout: one that outlasts that pushes it first."""
        (made,) = fake_e2b.sandboxes.values()
        assert made.timeout_s == 3600
        assert (await self.run(backend, sandbox, ["true"], timeout_s=600)).exit_code == 0
        assert made.timeout_s == 3600
        assert (await self.run(backend, sandbox, ["true"], timeout_s=7200)).exit_code == 0
        assert made.timeout_s == 7200 + 300
