"""The ``sandbox0`` backend (pods on Kubernetes) against a fake API server whose pods
are real ``local`` sandboxes (``fakes/kube_api.py``): the conformance suite, what the
backend asks the cluster for, and the in-pod launcher on its own.

One suite check is adapted, not skipped: ``test_nothing_outlives_its_command``
counts the processes a command sees. In a pod that is the pod's ``sleep``, the
launcher and the command (3, the suite's bound); under the fake, each exec is a
bubblewrap sandbox of its own whose network forwarder is one process more (4).
What the check is about (no daemon outlives its command, in a PID namespace the
pod's commands share) is proven on the launcher itself below, outside bubblewrap.
"""

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from benchwright_sandbox_manager.backends import get_backend
from benchwright_sandbox_manager.backends.sandbox0 import Sandbox0Backend, launcher
from benchwright_sandbox_manager.backends.sandbox0.manifests import (
    ROLE_LABEL,
    SANDBOX_LABEL,
    object_name,
)
from benchwright_sandbox_manager.backends.sandbox0.session import SHELL, payload
from benchwright_sandbox_manager.ports import (
    BackendError,
    IsolationUnavailableError,
    SandboxBackend,
)
from benchwright_shared.settings import Settings
from tests.sandbox_manager.conformance import BackendConformance
from tests.sandbox_manager.fakes.kube_api import FakeKube
from tests.sandbox_manager.probes import Listener, gone, host_processes, marker

NAMESPACE = "bw-sandboxes-test"


@pytest.fixture
async def kube(tmp_path: Path) -> AsyncIterator[FakeKube]:
    fake = await FakeKube(tmp_path / "kube", NAMESPACE).start()
    yield fake
    await fake.close()


def _sandbox0(backend: SandboxBackend) -> Sandbox0Backend:
    assert isinstance(backend, Sandbox0Backend)
    return backend


class TestSandbox0Backend(BackendConformance):
    @pytest.fixture
    def backend_name(self) -> str:
        return "sandbox0"

    @pytest.fixture
    def backend_settings(
        self, egress: Listener, kube: FakeKube, tmp_path: Path
    ) -> dict[str, object]:
        return {
            "kube_config": kube.kubeconfig(tmp_path / "kubeconfig"),
            "kube_namespace": NAMESPACE,
            "kube_egress_proxy_url": f"http://127.0.0.1:{egress.port}",
            # A pod's /tmp is sized when it is created, not per command: the size
            # test_disk_is_limited gives its command.
            "sandbox_tmp_mb": 8,
        }

    async def test_nothing_outlives_its_command(
        self, backend: SandboxBackend, sandbox: str
    ) -> None:
        """The suite's check with the fake's forwarder counted (see the module docstring)."""
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
        # bubblewrap's init, the fake's forwarder, the launcher, the command.
        assert int(inside.stdout) <= 4

    # -- what goes to the cluster -----------------------------------------------------
    async def test_the_pod_is_locked_down(
        self, backend: SandboxBackend, sandbox: str, kube: FakeKube
    ) -> None:
        pod = kube.pods[object_name(sandbox)]
        assert pod["metadata"]["labels"][SANDBOX_LABEL] == sandbox
        spec = pod["spec"]
        assert spec["automountServiceAccountToken"] is False
        assert spec["enableServiceLinks"] is False
        assert spec["dnsPolicy"] == "None" and spec["dnsConfig"] == {"nameservers": ["127.0.0.1"]}
        security = spec["securityContext"]
        assert security["runAsNonRoot"] is True and security["runAsUser"] > 0
        assert security["seccompProfile"] == {"type": "RuntimeDefault"}
        (container,) = spec["containers"]
        assert container["image"] == Settings.model_fields["kube_image"].default
        assert container["command"] == ["sleep", "infinity"] and "env" not in container
        assert container["securityContext"] == {
            "runAsNonRoot": True,
            "readOnlyRootFilesystem": True,
            "allowPrivilegeEscalation": False,
            "privileged": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        }
        limits = _sandbox0(backend).limits
        assert container["resources"]["limits"] == {
            "cpu": "1",
            "memory": f"{limits.memory_mb + limits.tmp_mb}Mi",
            "ephemeral-storage": f"{limits.disk_mb}Mi",
        }
        assert spec["volumes"] == [
            {"name": "work", "emptyDir": {"sizeLimit": f"{limits.disk_mb}Mi"}},
            {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "8Mi"}},
        ]

    async def test_the_policy_lets_out_only_the_injector(
        self, backend: SandboxBackend, sandbox: str, kube: FakeKube, egress: Listener
    ) -> None:
        name = object_name(sandbox)
        spec = kube.policies[name]["spec"]
        assert spec["podSelector"] == {"matchLabels": {SANDBOX_LABEL: sandbox}}
        assert spec["policyTypes"] == ["Ingress", "Egress"] and spec["ingress"] == []
        assert spec["egress"] == [
            {
                "to": [{"ipBlock": {"cidr": "127.0.0.1/32"}}],
                "ports": [{"protocol": "TCP", "port": egress.port}],
            }
        ]
        # The pod is never without its policy.
        assert kube.log.index(("create", "networkpolicies", name)) < kube.log.index(
            ("create", "pods", name)
        )

    async def test_a_model_proxy_joins_the_policy_for_its_command(
        self, backend: SandboxBackend, sandbox: str, kube: FakeKube, egress: Listener
    ) -> None:
        name = object_name(sandbox)
        async with Listener(b"model-pong\n") as model:
            env = {"BW_MODEL_PROXY_URL": f"http://127.0.0.1:{model.port}/v1"}
            show = "import os; print(os.environ['HTTPS_PROXY'], os.environ['NO_PROXY'])"
            for _ in range(2):
                result = await self.run(backend, sandbox, ["python", "-c", show], env=env)
                assert result.exit_code == 0, result.stderr
        proxy, no_proxy = result.stdout.split()
        assert proxy == f"http://127.0.0.1:{egress.port}" and "127.0.0.1" in no_proxy.split(",")
        ports = [rule["ports"] for rule in kube.policies[name]["spec"]["egress"]]
        assert sorted(p[0]["port"] for p in ports) == sorted([egress.port, model.port])
        assert kube.log.count(("replace", "networkpolicies", name)) == 1

    async def test_a_run_s_proxy_on_loopback_is_the_injector_as_pods_reach_it(
        self, backend: SandboxBackend, sandbox: str, kube: FakeKube, egress: Listener
    ) -> None:
        show = "import os; print(os.environ['HTTPS_PROXY'])"
        env = {"HTTPS_PROXY": "http://run-key:secret@localhost:9/"}
        result = await self.run(backend, sandbox, ["python", "-c", show], env=env)
        assert result.stdout.strip() == f"http://run-key:secret@127.0.0.1:{egress.port}/"
        assert ("replace", "networkpolicies", object_name(sandbox)) not in kube.log

    async def test_kill_deletes_the_pod_then_its_policy(
        self, backend: SandboxBackend, kube: FakeKube
    ) -> None:
        sandbox_id = f"sbx_{uuid.uuid4()}"
        name = object_name(sandbox_id)
        await _sandbox0(backend).create(sandbox_id, role="work")
        assert kube.pods[name]["metadata"]["labels"][ROLE_LABEL] == "work"
        await backend.kill(sandbox_id)
        assert name not in kube.pods and name not in kube.policies
        assert kube.grace[name] == "1"  # not 0: a forced deletion leaves containers running
        assert kube.log.index(("delete", "pods", name)) < kube.log.index(
            ("delete", "networkpolicies", name)
        )
        await backend.kill(sandbox_id)  # nothing left: nothing to do

    async def test_a_sandboxs_own_directories_are_volumes_of_its_pod(
        self, backend: SandboxBackend, task_sandbox: str, kube: FakeKube
    ) -> None:
        spec = kube.pods[object_name(task_sandbox)]["spec"]
        (container,) = spec["containers"]
        assert container["volumeMounts"][2:] == [
            {"name": "dir-0", "mountPath": "/app"},
            {"name": "dir-1", "mountPath": "/logs"},
        ]
        disk = f"{_sandbox0(backend).limits.disk_mb}Mi"
        assert spec["volumes"][2:] == [
            {"name": "dir-0", "emptyDir": {"sizeLimit": disk}},
            {"name": "dir-1", "emptyDir": {"sizeLimit": disk}},
        ]
        # The root filesystem stays read-only: the volumes are the only new writable places.
        assert container["securityContext"]["readOnlyRootFilesystem"] is True

    async def test_a_tasks_own_image_is_the_pods(
        self, backend: SandboxBackend, kube: FakeKube
    ) -> None:
        assert backend.runs_images
        sandbox_id = f"sbx_{uuid.uuid4()}"
        await backend.create(sandbox_id, dirs=["/app"], image="python:3.12-slim")
        try:
            (container,) = kube.pods[object_name(sandbox_id)]["spec"]["containers"]
            assert container["image"] == "python:3.12-slim"
        finally:
            await backend.kill(sandbox_id)

    async def test_a_command_sees_nothing_of_the_container(
        self, backend: SandboxBackend, sandbox: str
    ) -> None:
        script = (
            "import json, os\n"
            "parent = open(f'/proc/{os.getppid()}/environ', 'rb').read().split(b'\\0')\n"
            "print(json.dumps([dict(os.environ), [v.decode() for v in parent if v]]))\n"
        )
        result = await self.run(backend, sandbox, ["python", "-c", script], env={"GIVEN": "1"})
        env, launcher_env = json.loads(result.stdout)
        assert not [k for k in env if k.startswith(("KUBERNETES_", "BENCHWRIGHT_", "HOSTNAME"))]
        assert env["GIVEN"] == "1" and env["HOME"] == "/work" and env["PATH"]
        assert [v.split("=", 1)[0] for v in launcher_env] == ["PATH"]

    async def test_exec_lines_overrunning_its_clock_fails(
        self, backend: SandboxBackend, sandbox: str
    ) -> None:
        started = time.monotonic()
        with pytest.raises(BackendError, match="overran its 1s wall clock"):
            async for _ in backend.exec_lines(
                sandbox, ["sleep", "30"], stdin_lines=[], env={}, timeout_s=1
            ):
                pass
        assert time.monotonic() - started < 10


# -- refusals ---------------------------------------------------------------------------
async def _refusal(tmp_path: Path, **settings: Any) -> str:
    backend = get_backend(
        "sandbox0", tmp_path / "sandboxes", Settings(data_dir=tmp_path / "data", **settings)
    )
    await backend.start()  # never raises
    try:
        with pytest.raises(IsolationUnavailableError) as refused:
            await backend.create(f"sbx_{uuid.uuid4()}")
    finally:
        await backend.close()
    return str(refused.value)


async def test_no_cluster_is_a_clear_refusal_at_create(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert "BW_KUBE_CONFIG" in await _refusal(tmp_path)
    absent = tmp_path / "absent.yaml"
    assert f"BW_KUBE_CONFIG names {str(absent)!r}" in await _refusal(tmp_path, kube_config=absent)
    broken = tmp_path / "broken.yaml"
    broken.write_text("clusters: [")
    assert "BW_KUBE_CONFIG" in await _refusal(tmp_path, kube_config=broken)


async def test_an_unreachable_cluster_is_a_clear_refusal_at_create(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = tmp_path / "kubeconfig"
    config.write_text(
        json.dumps(
            {
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    refusal = await _refusal(tmp_path, kube_config=config)
    assert f"127.0.0.1:{port}" in refusal and "BW_KUBE_CONFIG" in refusal


async def test_refused_credentials_are_a_clear_refusal_at_create(
    tmp_path: Path, kube: FakeKube
) -> None:
    config = kube.kubeconfig(tmp_path / "kubeconfig")
    config.write_text(config.read_text().replace(kube.token, "not-the-token"))
    refusal = await _refusal(tmp_path, kube_config=config, kube_namespace=NAMESPACE)
    assert "refused" in refusal and "BW_KUBE_CONFIG" in refusal
    refusal = await _refusal(
        tmp_path, kube_config=kube.kubeconfig(tmp_path / "good"), kube_namespace="elsewhere"
    )
    assert "BW_KUBE_NAMESPACE" in refusal
    assert not kube.pods and not kube.policies


def test_the_service_starts_without_importing_the_client(tmp_path: Path) -> None:
    script = (
        "import asyncio, pathlib, sys\n"
        "from benchwright_sandbox_manager.backends import get_backend\n"
        "backend = get_backend('sandbox0', pathlib.Path(sys.argv[1]))\n"
        "asyncio.run(backend.start())\n"
        "print('kubernetes' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BW_", "KUBERNETES_"))}
    shown = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        env={**env, "BW_DATA_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert shown.stdout.strip() == "False"


# -- the launcher, as a pod runs it: one PID namespace for all of a pod's commands --------
LIMITS = {
    "cpu_seconds": 60,
    "memory_mb": 1024,
    "file_size_mb": 64,
    "max_procs": 4096,
    "disk_mb": 64,
}


def _launch(config: dict[str, Any], data: bytes = b"", token: str = "") -> subprocess.Popen[bytes]:
    """The launcher under the exec's own command line, on this host, outside any sandbox."""
    token = token or f"test-{uuid.uuid4()}"
    command = ["/bin/sh", "-c", SHELL, "bw", launcher.BOOT, "bw-launcher", token]
    proc = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"PATH": os.environ["PATH"]},
    )
    assert proc.stdin
    proc.stdin.write(payload(config, data))
    proc.stdin.flush()
    return proc


def _run_config(tmp_path: Path, script: str, timeout_s: float = 30) -> dict[str, Any]:
    return {
        "op": "run",
        "argv": [sys.executable, "-c", script],
        "env": {"HOME": str(tmp_path)},
        "cwd": str(tmp_path),
        "stdin": None,
        "timeout_s": timeout_s,
        "limits": LIMITS,
    }


async def _finish(proc: subprocess.Popen[bytes]) -> tuple[int, bytes, bytes]:
    out, err = await asyncio.to_thread(proc.communicate, None, 60)
    return proc.returncode, out, err


async def test_the_launcher_leaves_no_daemon_behind(tmp_path: Path) -> None:
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
    code, _, err = await _finish(_launch(_run_config(tmp_path, script)))
    assert code == 0, err
    assert await gone(f"sleep {mark}")


async def test_the_launcher_kills_the_tree_at_its_clock(tmp_path: Path) -> None:
    mark = marker()
    script = (
        "import subprocess, time\n"
        f"subprocess.Popen(['sleep', '{mark}'])\n"
        "print('started', flush=True)\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    code, out, err = await _finish(_launch(_run_config(tmp_path, script, timeout_s=1)))
    assert time.monotonic() - started < 10
    assert (code, out) == (launcher.EXIT_KILLED, b"started\n")
    assert err.decode().rstrip().splitlines()[-1].startswith(launcher.TIMEOUT_NOTE)
    assert await gone(f"sleep {mark}")


async def test_a_reap_ends_a_command_whose_stream_went_away(tmp_path: Path) -> None:
    mark, token = marker(), f"test-{uuid.uuid4()}"
    script = f"import os; os.execvp('sleep', ['sleep', '{mark}'])"
    running = _launch(_run_config(tmp_path, script), token=token)
    for _ in range(200):
        if host_processes(f"sleep {mark}"):
            break
        await asyncio.sleep(0.05)
    reap = _launch({"op": "reap", "token": f"test-{uuid.uuid4()}"})
    assert (await _finish(reap))[0] == 0
    assert host_processes(f"sleep {mark}"), "another token's command is left alone"
    reap = _launch({"op": "reap", "token": token})
    assert (await _finish(reap))[0] == 0
    assert await gone(f"sleep {mark}")
    assert (await _finish(running))[0] != 0


async def test_the_launcher_keeps_paths_inside_its_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    (root / "up").symlink_to("..")
    for path in ("up/outside.txt", "../outside.txt", "/etc/passwd"):
        proc = _launch({"op": "get", "root": str(root), "path": path, "stdin": None})
        code, out, _ = await _finish(proc)
        assert (code, out) == (launcher.EXIT_UNSAFE, b"")
