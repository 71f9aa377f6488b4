"""The bubblewrap layout a non-root service uses: a user namespace, rlimits inside it.

This machine runs the service as root, where each sandbox gets a uid of its own
(the rest of the suite covers that). Here the same layout is started the way a
non-root service starts it: bubblewrap as an unprivileged user, with the
system's Python as the sandbox's runtime.
"""

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchwright_sandbox_manager.backends import bwrap
from benchwright_sandbox_manager.backends.isolation import LAUNCHER_SOURCE

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap") or not os.path.exists(SYSTEM_PYTHON),
    reason="needs root (to become an unprivileged user), bubblewrap and a system Python",
)

SCRIPT = """
import json, os, socket
n, error = 0, None
try:
    for _ in range(100):
        if os.fork() == 0:
            import time; time.sleep(20); os._exit(0)
        n += 1
except OSError as exc:
    error = type(exc).__name__
open("written", "w").write("by the sandbox")
print(json.dumps({
    "uid": os.getuid(), "env": dict(os.environ), "forks": n, "error": error,
    "interfaces": [name for _, name in socket.if_nameindex()],
    "root": sorted(os.listdir("/")), "passwd": open("/etc/passwd").read(),
}))
"""


@pytest.fixture
def place() -> Iterator[Path]:
    """A directory the unprivileged user can reach (pytest's own is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="bw-layout-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path)


def as_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def test_an_unprivileged_service_sandboxes_in_a_user_namespace(place: Path) -> None:
    work, private = place / "work", place / "private"
    work.mkdir()
    bwrap.write_identity(private, bwrap.USERNS_ID, [])
    launcher = place / "init.py"
    launcher.write_text(LAUNCHER_SOURCE)  # as the backend writes it: one file
    for path in (work, private, private / "net", *private.iterdir()):
        os.chown(path, NOBODY, NOBODY)
    help_text = subprocess.run(["bwrap", "--help"], capture_output=True, text=True).stdout
    layout = bwrap.Layout(
        bwrap=shutil.which("bwrap") or "bwrap",
        features=bwrap.parse_features(help_text),
        privileged=False,
        runtime=bwrap.Runtime(executable=os.path.realpath(SYSTEM_PYTHON), prefix="/usr"),
        launcher=launcher,
        workdir=work,
        private=private,
        tmp_mb=16,
    )
    env_read, env_write = os.pipe()
    os.write(env_write, json.dumps({"PATH": "/usr/bin:/bin", "GIVEN": "1"}).encode())
    os.close(env_write)
    config: dict[str, object] = {
        "env_fd": env_read,
        "uid": None,
        "gid": None,
        "limits": {"cpu_seconds": 20, "memory_mb": 1024, "file_size_mb": 8, "max_procs": 12},
        "forwards": [],
    }
    argv = layout.argv(config, ["python3", "-c", SCRIPT])
    assert "--unshare-user" in argv and "--cap-add" not in argv
    done = subprocess.run(
        argv,
        pass_fds=(env_read,),
        preexec_fn=as_nobody,
        env={"SERVICE_SECRET": "must-not-pass"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    os.close(env_read)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["uid"] == bwrap.USERNS_ID
    assert {k: v for k, v in seen["env"].items() if k != "LC_CTYPE"} == {
        "PATH": "/usr/bin:/bin",
        "GIVEN": "1",
    }
    # The process limit counts in the sandbox's own user namespace.
    assert seen["forks"] < 12 and seen["error"] == "BlockingIOError"
    assert seen["interfaces"] == ["lo"]
    assert "sandbox:x:1000:1000" in seen["passwd"]
    assert set(seen["root"]) <= {
        "bin",
        "dev",
        "etc",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "proc",
        "run",
        "sbin",
        "tmp",
        "usr",
        "work",
    }
    # Files the sandbox writes belong to the service's user on the host.
    assert (work / "written").stat().st_uid == NOBODY


TASK_SCRIPT = """
import json, os
open("written", "w").write("in /app")
os.makedirs("/logs/verifier")
open("/logs/verifier/reward.txt", "w").write("1")
print(json.dumps({
    "cwd": os.getcwd(), "uid": os.getuid(),
    "owners": {d: os.stat(d).st_uid for d in ("/app", "/logs", "/work")},
    "work": sorted(os.listdir("/work")),
}))
"""


def test_an_unprivileged_service_presents_a_sandboxs_own_directories(place: Path) -> None:
    """In a user namespace the service's user is the sandbox's: the folders behind /app
    and /logs are the sandbox user's inside, and what it writes there the service's."""
    sandbox = place / "sbx"
    work, private = sandbox / "work", place / "private"
    app, logs = sandbox / "dirs" / "app", sandbox / "dirs" / "logs"
    for folder in (work, app, logs):
        folder.mkdir(parents=True)
    bwrap.write_identity(private, bwrap.USERNS_ID, [])
    launcher = place / "init.py"
    launcher.write_text(LAUNCHER_SOURCE)
    for path in (*sandbox.rglob("*"), sandbox, private, private / "net", *private.iterdir()):
        os.chown(path, NOBODY, NOBODY)
    help_text = subprocess.run(["bwrap", "--help"], capture_output=True, text=True).stdout
    layout = bwrap.Layout(
        bwrap=shutil.which("bwrap") or "bwrap",
        features=bwrap.parse_features(help_text),
        privileged=False,
        runtime=bwrap.Runtime(executable=os.path.realpath(SYSTEM_PYTHON), prefix="/usr"),
        launcher=launcher,
        workdir=work,
        private=private,
        tmp_mb=16,
        dirs=(("/app", app), ("/logs", logs)),
    )
    env_read, env_write = os.pipe()
    os.write(env_write, json.dumps({"PATH": "/usr/bin:/bin"}).encode())
    os.close(env_write)
    config: dict[str, object] = {
        "env_fd": env_read,
        "uid": None,
        "gid": None,
        "limits": {"cpu_seconds": 20, "memory_mb": 1024, "file_size_mb": 8, "max_procs": 12},
        "forwards": [],
        "cwd": "/app",
    }
    done = subprocess.run(
        layout.argv(config, ["python3", "-c", TASK_SCRIPT]),
        pass_fds=(env_read,),
        preexec_fn=as_nobody,
        env={},
        capture_output=True,
        text=True,
        timeout=60,
    )
    os.close(env_read)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["cwd"] == "/app" and seen["work"] == []
    assert seen["owners"] == dict.fromkeys(("/app", "/logs", "/work"), bwrap.USERNS_ID)
    assert (app / "written").stat().st_uid == NOBODY
    assert (logs / "verifier" / "reward.txt").read_text() == "1"
