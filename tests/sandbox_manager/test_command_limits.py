"""``runtime.command_limits``, the launchers' one copy of rlimits, disk measure and
tree kill, and ``launcher_source``, which ships each launcher as one file with it."""

import json
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchwright_sandbox_manager.backends import isolation
from benchwright_sandbox_manager.backends.e2b import backend as e2b
from benchwright_sandbox_manager.backends.sandbox0 import session
from benchwright_sandbox_manager.runtime import LIMITS_MODULE, launcher_source
from benchwright_sandbox_manager.runtime.command_limits import MIB, set_limits, tree_size

RUNTIME = Path(isolation.LAUNCHER).parent
LAUNCHERS = {
    "sandbox_init": isolation.LAUNCHER,
    "e2b": e2b.LAUNCHER,
    "sandbox0": Path(session.launcher.__file__),
}
# The oldest interpreter the e2b and sandbox0 launchers promise to run on, where installed.
PYTHON_38 = Path.home() / ".pyenv/versions/3.8.18/bin/python3.8"
SHARED = ("set_limits", "tree_size", "kill_tree", "descendants", "parents", "reap", "MIB")


def _run_in_child(code: str, python: str = sys.executable) -> dict[str, object]:
    """Run ``code`` (the inlined module's source, then ``code``) in a fresh interpreter."""
    shared = (RUNTIME / "command_limits.py").read_text()
    done = subprocess.run(
        [python, "-I", "-S", "-c", shared + "\n" + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return found


# -- the limits ---------------------------------------------------------------------------
def _limits_after(limits: dict[str, int], ceiling_mb: int | None = None) -> dict[str, list[int]]:
    """The rlimits a command started under ``set_limits(limits)`` sees."""
    code = f"""
    import json, resource
    if {ceiling_mb!r} is not None:
        resource.setrlimit(resource.RLIMIT_AS, ({ceiling_mb!r} * MIB, {ceiling_mb!r} * MIB))
    set_limits({limits!r})
    names = ("CPU", "AS", "FSIZE", "NPROC", "CORE")
    print(json.dumps({{n: resource.getrlimit(getattr(resource, "RLIMIT_" + n)) for n in names}}))
    """
    found = _run_in_child(code)
    return {name: list(value) for name, value in found.items()}


LIMITS = {"cpu_seconds": 7, "memory_mb": 512, "file_size_mb": 3, "max_procs": 50}


def test_a_command_gets_its_limits() -> None:
    seen = _limits_after(LIMITS)
    assert seen["CPU"] == [7, 8]  # SIGXCPU at 7 s, SIGKILL a second later
    assert seen["AS"] == [512 * MIB] * 2
    assert seen["FSIZE"] == [3 * MIB] * 2
    assert seen["NPROC"] == [50, 50]
    assert seen["CORE"] == [0, 0]


def test_a_limit_never_rises_above_what_the_launcher_may_use() -> None:
    seen = _limits_after({**LIMITS, "memory_mb": 4096}, ceiling_mb=256)
    assert seen["AS"] == [256 * MIB] * 2


def test_without_max_procs_the_process_count_is_left_alone() -> None:
    """The local backend's unisolated mode: outside a user namespace the count would
    take in every process of the service's user."""
    before = list(resource.getrlimit(resource.RLIMIT_NPROC))
    seen = _limits_after({k: v for k, v in LIMITS.items() if k != "max_procs"})
    assert seen["NPROC"] == before
    assert seen["FSIZE"] == [3 * MIB] * 2


def test_limits_given_as_json_numbers_of_any_kind_are_whole() -> None:
    seen = _limits_after({**LIMITS, "cpu_seconds": 7.0})
    assert seen["CPU"] == [7, 8]


def test_the_limits_hold_in_this_process_too() -> None:
    """The function the launchers call before exec, called in a forked child here."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: reports through the pipe
        try:
            set_limits(LIMITS)
            os.write(write, json.dumps(resource.getrlimit(resource.RLIMIT_FSIZE)).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    with os.fdopen(read) as pipe:
        assert json.loads(pipe.read()) == [3 * MIB, 3 * MIB]


# -- the disk -----------------------------------------------------------------------------
def test_tree_size_counts_written_blocks_not_links_or_holes(tmp_path: Path) -> None:
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "deep" / "er" / "data").write_bytes(os.urandom(MIB))
    with open(tmp_path / "sparse", "wb") as f:
        f.truncate(64 * MIB)  # a hole: no block written
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "big").write_bytes(os.urandom(2 * MIB))
    (tmp_path / "link").symlink_to(outside, target_is_directory=True)
    size = tree_size(str(tmp_path))
    assert MIB <= size < 2 * MIB
    assert tree_size(str(tmp_path / "missing")) == 0


# -- the tree -----------------------------------------------------------------------------
def test_kill_tree_ends_a_daemon_that_left_its_session() -> None:
    """A subreaper's whole tree, a double-forked ``setsid`` daemon included, is killed and
    reaped: nothing is left below it, not even a zombie."""
    code = """
    import ctypes, json, os, time
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    read, write = os.pipe()
    if os.fork() == 0:
        if os.fork() == 0:
            os.setsid()
            os.write(write, b"%d\\n" % os.getpid())
            time.sleep(600)
        time.sleep(600)
    daemon = int(os.fdopen(read).readline())
    before = descendants(os.getpid())
    kill_tree(os.getpid())
    print(json.dumps({"daemon": daemon, "before": before, "after": descendants(os.getpid())}))
    """
    found = _run_in_child(code)
    assert found["daemon"] in found["before"]
    assert len(found["before"]) == 2
    assert found["after"] == []
    assert not Path(f"/proc/{found['daemon']}").exists()


def test_the_module_runs_on_the_oldest_python_a_launcher_promises() -> None:
    if not PYTHON_38.exists():
        pytest.skip("no Python 3.8 on this machine")
    code = """
    import json, os
    print(json.dumps({"me": os.getpid() in parents(), "size": tree_size("/nonexistent")}))
    """
    assert _run_in_child(code, str(PYTHON_38)) == {"me": True, "size": 0}
    for path in LAUNCHERS.values():
        source = launcher_source(path)
        check = [
            str(PYTHON_38),
            "-I",
            "-S",
            "-c",
            "import sys; compile(sys.stdin.read(), 'l', 'exec')",
        ]
        done = subprocess.run(check, input=source, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (path.name, done.stderr)


# -- shipping -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", LAUNCHERS)
def test_every_launcher_ships_as_one_file_with_the_module_inlined(name: str) -> None:
    path = LAUNCHERS[name]
    assert f"from {LIMITS_MODULE} import" in path.read_text()
    source = launcher_source(path)
    compile(source, name, "exec")
    assert "import benchwright" not in source and "from benchwright" not in source
    assert source.count("def set_limits(") == 1
    assert source.count("MIB = ") == 1


def test_the_backends_send_the_inlined_launchers(tmp_path: Path) -> None:
    assert launcher_source(LAUNCHERS["sandbox0"]).encode() == session.LAUNCHER_SOURCE
    assert e2b.E2BBackend(tmp_path)._launcher == launcher_source(LAUNCHERS["e2b"])
    assert launcher_source(LAUNCHERS["sandbox_init"]) == isolation.LAUNCHER_SOURCE


def _launcher(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "launcher.py"
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        ('"""No import."""\nfrom __future__ import annotations\n', "must import"),
        (
            f"from __future__ import annotations\nfrom {LIMITS_MODULE} import MIB as M\n",
            "without 'as'",
        ),
        (f"from {LIMITS_MODULE} import MIB\n", "from __future__"),
        (
            f"from __future__ import annotations\nfrom {LIMITS_MODULE} import nothing\n",
            "has no nothing",
        ),
        (
            f"from __future__ import annotations\nfrom {LIMITS_MODULE} import MIB\nMIB = 2\n",
            "defines MIB again",
        ),
    ],
)
def test_a_launcher_that_cannot_be_inlined_safely_is_refused(
    tmp_path: Path, text: str, refusal: str
) -> None:
    with pytest.raises(ValueError, match=refusal):
        launcher_source(_launcher(tmp_path, text))


def test_the_module_takes_the_place_of_the_import(tmp_path: Path) -> None:
    path = _launcher(
        tmp_path,
        f'''\
        """A launcher."""

        from __future__ import annotations

        import os

        from {LIMITS_MODULE} import {", ".join(SHARED)}

        print(tree_size(os.devnull))
        ''',
    )
    source = launcher_source(path)
    head, tail = source.split(f"# -- {LIMITS_MODULE}, inlined --\n")
    assert head.endswith("import os\n\n")
    assert tail.endswith(f"# -- end of {LIMITS_MODULE} --\n\nprint(tree_size(os.devnull))\n")
    assert source.count("from __future__") == 1
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", source], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (0, "0\n")
