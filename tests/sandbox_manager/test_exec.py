"""ExecInSandbox over a real NATS: exit codes, output, a scrubbed env, time limits, paths."""

import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from benchwright_shared.contracts import KillSandbox, SandboxCommandFailed, SandboxKilled
from tests.sandbox_manager.conftest import SandboxService, new_id

pytestmark = pytest.mark.connected

ENV_SCRIPT = """
import json, os, sys
print(json.dumps(dict(os.environ)))
print("to stderr", file=sys.stderr)
sys.exit(int(sys.stdin.read().strip()))
"""


async def test_exec_reports_exit_code_output_and_a_scrubbed_env(
    sandboxes: SandboxService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BW_OPENROUTER_API_KEY", "sk-must-not-leak")
    sandbox_id = await sandboxes.new_sandbox({"show_env.py": ENV_SCRIPT})
    result = await sandboxes.exec(
        sandbox_id, ["python", "show_env.py"], stdin="3\n", env={"BW_MODEL_MODEL": "m"}
    )
    assert result.exit_code == 3 and not result.timed_out
    assert result.sandbox_id == sandbox_id and result.run_id == "run_test"
    assert result.stderr == "to stderr\n"
    env = __import__("json").loads(result.stdout)
    assert env["BW_MODEL_MODEL"] == "m"
    assert "BW_OPENROUTER_API_KEY" not in env and "sk-must-not-leak" not in result.stdout
    # The sandbox's own directory, at the same place in every sandbox, and the
    # read-only scorer libraries after it.
    assert env["HOME"] == "/work"
    assert env["PYTHONPATH"] == "/work:/opt/benchwright/site" == "/work:" + env["BW_SCORER_PATH"]
    assert set(env) <= {
        "PATH",
        "LANG",
        "HOME",
        "PYTHONPATH",
        "BW_SCORER_PATH",
        "BW_HARNESS_PATH",  # where the Inspect harness's read-only libraries are mounted
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
        "BW_MODEL_MODEL",
        "LC_CTYPE",  # Python may set it for itself when it coerces the C locale
    }


async def test_files_written_by_exec_are_read_back_and_the_runtime_imports(
    sandboxes: SandboxService,
) -> None:
    sandbox_id = await sandboxes.new_sandbox()
    write = await sandboxes.exec(
        sandbox_id,
        ["python", "tools/write.py"],
        files={
            "data/in.txt": "héllo\n",
            "tools/write.py": (
                "import bench_task\n"  # importable from a subdirectory, as promised
                "text = open('data/in.txt', encoding='utf-8').read()\n"
                "open('data/out.txt', 'w', encoding='utf-8').write(text.upper())\n"
                "print(bench_task.BenchTask.__name__)\n"
            ),
        },
    )
    assert (write.exit_code, write.stdout) == (0, "BenchTask\n"), write.stderr
    read = await sandboxes.exec(sandbox_id, ["cat", "data/out.txt", "data/in.txt"])
    assert (read.exit_code, read.stdout) == (0, "HÉLLO\nhéllo\n")
    runner = await sandboxes.exec(sandbox_id, ["python", "-m", "bench_runner", "--help"])
    assert runner.exit_code == 0 and "--check" in runner.stdout
    # No argv: the files are written, nothing runs.
    only_files = await sandboxes.exec(sandbox_id, [], files={"note.txt": "n"})
    assert (only_files.exit_code, only_files.stdout) == (0, "")
    assert (await sandboxes.exec(sandbox_id, ["cat", "note.txt"])).stdout == "n"


async def test_a_missing_program_is_exit_code_127(sandboxes: SandboxService) -> None:
    sandbox_id = await sandboxes.new_sandbox()
    result = await sandboxes.exec(sandbox_id, ["no-such-program-here"])
    assert result.exit_code == 127 and "no-such-program-here" in result.stderr


async def test_output_is_cut_to_64_kib_each(sandboxes: SandboxService) -> None:
    sandbox_id = await sandboxes.new_sandbox()
    script = "import sys\nprint('o' * 200_000)\nsys.stderr.write('e' * 199_999 + 'END')\n"
    result = await sandboxes.exec(sandbox_id, ["python", "-c", script])
    assert result.exit_code == 0
    assert result.stdout == "o" * 65536  # the head of stdout
    assert len(result.stderr) == 65536 and result.stderr.endswith("END")  # the tail of stderr


async def test_a_timeout_kills_the_process_tree_and_the_sandbox_keeps_working(
    sandboxes: SandboxService,
) -> None:
    sandbox_id = await sandboxes.new_sandbox()
    # A unique duration names our grandchild among whatever else runs on this machine.
    marker = f"{60 + uuid.uuid4().int % 1000 / 1000:.3f}"
    script = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen(['sleep', '{marker}'])\n"
        "print('started', flush=True)\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    result = await sandboxes.exec(sandbox_id, ["python", "-c", script], timeout_s=1)
    assert result.timed_out and result.exit_code == -9
    assert result.stdout == "started\n"  # output up to the kill is kept
    assert 1000 <= result.duration_ms < 10_000 and time.monotonic() - started < 20
    assert _processes(f"sleep {marker}") == []
    again = await sandboxes.exec(sandbox_id, ["python", "-c", "print('still here')"])
    assert (again.exit_code, again.stdout, again.timed_out) == (0, "still here\n", False)


async def test_what_a_command_leaves_running_dies_with_it(sandboxes: SandboxService) -> None:
    sandbox_id = await sandboxes.new_sandbox()
    marker = f"{70 + uuid.uuid4().int % 1000 / 1000:.3f}"
    script = (
        "import subprocess\n"
        f"subprocess.Popen(['sleep', '{marker}'], stdout=subprocess.DEVNULL,"
        " stderr=subprocess.DEVNULL)\n"
    )
    result = await sandboxes.exec(sandbox_id, ["python", "-c", script], timeout_s=20)
    assert result.exit_code == 0 and not result.timed_out and result.duration_ms < 5000
    assert _processes(f"sleep {marker}") == []


@pytest.mark.parametrize("path", ["../escape.txt", "/tmp/abs.txt", "a/../../b.txt", "a/../b.txt"])
async def test_exec_refuses_paths_that_escape_the_sandbox(
    sandboxes: SandboxService, path: str
) -> None:
    sandbox_id = await sandboxes.new_sandbox()
    reply = await sandboxes.exec_reply(
        sandbox_id, ["touch", "ran"], files={"fine.txt": "x", path: "no"}
    )
    assert isinstance(reply, SandboxCommandFailed)
    assert reply.error_type == "unsafe_path" and path in reply.detail
    # Nothing was written and nothing ran.
    tree = await sandboxes.tree(sandbox_id)
    assert "fine.txt" not in tree and "ran" not in tree
    root = sandboxes.service.manager.root / "local"
    assert not (root / "escape.txt").exists() and not (root / "b.txt").exists()


async def test_create_refuses_paths_that_escape_the_sandbox(sandboxes: SandboxService) -> None:
    reply = await sandboxes.create({"../../outside.txt": "no"})
    assert isinstance(reply, SandboxCommandFailed) and reply.error_type == "unsafe_path"
    assert "escapes the sandbox" in reply.detail


async def test_exec_in_an_unknown_or_killed_sandbox_fails(sandboxes: SandboxService) -> None:
    unknown = await sandboxes.exec_reply(f"sbx_{uuid.uuid4()}", ["true"])
    assert isinstance(unknown, SandboxCommandFailed) and unknown.error_type == "no_sandbox"
    sandbox_id = await sandboxes.new_sandbox()
    assert (await sandboxes.exec(sandbox_id, ["true"])).exit_code == 0  # remembered as held
    killed = await sandboxes.send(
        KillSandbox(command_id=new_id(), run_id="run_test", sandbox_id=sandbox_id)
    )
    assert isinstance(killed, SandboxKilled)
    reply = await sandboxes.exec_reply(sandbox_id, ["true"])
    assert isinstance(reply, SandboxCommandFailed) and reply.error_type == "sandbox_killed"


async def test_a_held_sandbox_is_read_once_until_a_heartbeat_gap(
    sandboxes: SandboxService, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = sandboxes.service.manager
    sandbox_id = await sandboxes.new_sandbox()
    reads: list[str] = []
    read = manager.app.get

    def counted(wanted: str) -> Any:
        reads.append(wanted)
        return read(wanted)

    monkeypatch.setattr(manager.app, "get", counted)
    for _ in range(3):
        assert (await sandboxes.exec(sandbox_id, ["true"])).exit_code == 0
    assert reads == [sandbox_id]  # the first exec read the store; the others remembered
    # Another copy's reaper records the kill: it judged this copy dead, which it can
    # only do after a gap in this copy's heartbeats.
    await manager.store.run(
        lambda: manager.app.kill(sandbox_id, command_id=new_id(), reason="owner_lost", rate=0)
    )
    monkeypatch.setattr(
        type(manager.membership), "healthy_since", property(lambda _: time.monotonic())
    )
    reply = await sandboxes.exec_reply(sandbox_id, ["true"])
    assert isinstance(reply, SandboxCommandFailed) and reply.error_type == "sandbox_killed"
    assert reads == [sandbox_id, sandbox_id]


def _processes(cmdline: str) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            text = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text.strip() == cmdline:
            found.append(pid)
    return found
