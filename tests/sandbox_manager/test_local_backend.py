"""The local backend: files stay inside, the environment is scrubbed, time limits kill;
without working bubblewrap it refuses, unless an operator opts out of isolation."""

import asyncio
import logging
import os
from pathlib import Path

import pytest

from benchwright_sandbox_manager.backends import UnknownBackendError, get_backend
from benchwright_sandbox_manager.backends.local import LocalBackend
from benchwright_sandbox_manager.ports import BackendError, IsolationUnavailableError
from benchwright_shared.settings import Settings


async def collect(backend: object, sandbox_id: str, argv: list[str], **kwargs: object) -> list[str]:
    return [line async for line in backend.exec_lines(sandbox_id, argv, **kwargs)]  # type: ignore[attr-defined]


async def test_files_commands_and_kill(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BW_OPENROUTER_API_KEY", "sk-must-not-leak")
    backend = get_backend("local", tmp_path)
    await backend.create("s1")
    await backend.put_file("s1", "data/x.txt", b"hello")
    assert await backend.get_file("s1", "data/x.txt") == b"hello"
    with pytest.raises(BackendError):
        await backend.put_file("s1", "../escape.txt", b"no")
    script = (
        "import os, sys\n"
        "for line in sys.stdin: print(line.strip().upper())\n"
        "print(sorted(os.environ))"
    )
    await backend.put_file("s1", "run.py", script.encode())
    lines = await collect(
        backend,
        "s1",
        ["python", "run.py"],
        stdin_lines=["a", "b"],
        env={"BW_MODEL_MODEL": "m"},
        timeout_s=30,
    )
    assert lines[:2] == ["A\n", "B\n"]
    env_names = lines[2]
    assert "BW_MODEL_MODEL" in env_names and "BW_OPENROUTER_API_KEY" not in env_names
    assert "sk-must-not-leak" not in "".join(lines)
    await backend.kill("s1")
    assert not (tmp_path / "s1").exists()


async def test_a_command_that_overruns_is_killed(tmp_path: Path) -> None:
    backend = get_backend("local", tmp_path)
    await backend.create("s2")
    await backend.put_file(
        "s2",
        "spin.py",
        b"import subprocess,time\nsubprocess.Popen(['sleep','60.4242'])\ntime.sleep(60)\n",
    )
    with pytest.raises(BackendError, match="wall clock"):
        await collect(backend, "s2", ["python", "spin.py"], stdin_lines=[], env={}, timeout_s=1)
    # The whole process group went, grandchildren included (a killed process may
    # take a moment to disappear from /proc; the odd duration names ours alone).
    for _ in range(40):
        leftovers = [
            p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p) == "sleep 60.4242"
        ]
        if not leftovers:
            break
        await asyncio.sleep(0.05)
    assert leftovers == []
    await backend.kill("s2")


async def test_a_failing_command_reports_its_exit_code(tmp_path: Path) -> None:
    backend = get_backend("local", tmp_path)
    await backend.create("s3")
    with pytest.raises(BackendError, match="exit code 3"):
        await collect(
            backend,
            "s3",
            ["python", "-c", "raise SystemExit(3)"],
            stdin_lines=[],
            env={},
            timeout_s=10,
        )


@pytest.mark.parametrize("sandbox_id", ["", ".", "..", "../s1", "s1/..", "a/b", "/etc"])
def test_a_sandbox_id_names_one_folder_below_the_root(tmp_path: Path, sandbox_id: str) -> None:
    backend = LocalBackend(tmp_path / "root")
    assert backend.workdir("s1").parent == (tmp_path / "root").resolve() / "s1"
    with pytest.raises(BackendError, match="bad sandbox id"):
        backend.workdir(sandbox_id)


def test_an_unknown_backend_is_named() -> None:
    with pytest.raises(UnknownBackendError, match="local"):
        get_backend("kubernetes-typo", Path("/tmp"))


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


@pytest.mark.parametrize(
    ("bwrap", "why"),
    [
        ("no-such-bwrap-here", "is not installed"),
        ("false", "cannot build a sandbox here"),  # found, but no sandbox comes up
    ],
)
async def test_without_working_bubblewrap_the_backend_refuses(
    tmp_path: Path, bwrap: str, why: str
) -> None:
    backend = get_backend("local", tmp_path, Settings(sandbox_bwrap=bwrap))
    await backend.start()
    with pytest.raises(IsolationUnavailableError) as refused:
        await backend.create("s1")
    assert why in str(refused.value) and "BW_SANDBOX_UNISOLATED=true" in str(refused.value)
    assert not (tmp_path / "s1").exists()
    await backend.close()


async def test_an_operator_can_opt_into_running_unisolated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(sandbox_bwrap="no-such-bwrap-here", sandbox_unisolated=True)
    backend = get_backend("local", tmp_path, settings)
    with caplog.at_level(logging.WARNING):
        await backend.start()
    assert "WITHOUT ISOLATION" in caplog.text and "is not installed" in caplog.text
    assert backend.isolation == "none"
    await backend.create("s1")
    # The old subprocess: the host's own view, the sandbox's directory by its host path.
    result = await backend.exec(
        "s1", ["python", "-c", "import os; print(os.getcwd())"], stdin=None, env={}, timeout_s=30
    )
    assert (result.exit_code, result.stdout.strip()) == (0, str(tmp_path / "s1" / "work"))
    await backend.kill("s1")
    await backend.close()


async def test_a_root_service_runs_each_sandbox_as_its_own_uid(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only a root service hands sandboxes uids of their own")
    backend = get_backend("local", tmp_path)
    await backend.create("s1")
    await backend.create("s2")
    await backend.put_file("s1", "given/file.txt", b"x")
    ids = "import os; print(os.getuid(), os.getgid(), os.getgroups())"
    seen = []
    for sandbox_id in ("s1", "s2"):
        result = await backend.exec(
            sandbox_id, ["python", "-c", ids], stdin=None, env={}, timeout_s=30
        )
        uid, gid, groups = result.stdout.split(maxsplit=2)
        assert uid == gid and int(uid) >= Settings().sandbox_uid_base and groups.strip() == "[]"
        seen.append(int(uid))
    assert seen[0] != seen[1]
    # What the service wrote is the sandbox's to change.
    assert (tmp_path / "s1" / "work" / "given" / "file.txt").stat().st_uid == seen[0]
    assert (tmp_path / "s1" / "work" / "given").stat().st_uid == seen[0]
    assert (tmp_path / "s1").stat().st_uid == 0  # the sandbox's own folder is the service's
    await backend.close()


async def test_scorers_can_import_requests_and_nothing_else_of_the_platform(
    tmp_path: Path,
) -> None:
    """The guide's scorers ``import requests``: it is there, read-only; the platform's
    own packages (and the rest of its environment) are not."""
    backend = get_backend("local", tmp_path)
    await backend.create("s1")
    script = (
        "import importlib.util, json, requests\n"
        "print(json.dumps({\n"
        "    'requests': requests.__version__,\n"
        "    'file': requests.__file__,\n"
        "    'platform': [n for n in ('benchwright_shared', 'benchwright_proxy', 'litellm',\n"
        "                 'fastapi') if importlib.util.find_spec(n)],\n"
        "}))\n"
        "try:\n"
        "    open(requests.__file__, 'a').write('#')\n"
        "except OSError as exc:\n"
        "    print(type(exc).__name__)\n"
    )
    result = await backend.exec("s1", ["python", "-c", script], stdin=None, env={}, timeout_s=30)
    assert result.exit_code == 0, result.stderr
    seen, written = result.stdout.splitlines()
    found = __import__("json").loads(seen)
    assert found["requests"] and found["file"].startswith("/opt/benchwright/site/")
    assert found["platform"] == []
    assert written in ("OSError", "PermissionError")
    await backend.kill("s1")


async def test_a_scorer_run_by_the_runner_imports_requests(tmp_path: Path) -> None:
    """bench_runner starts with -E (PYTHONPATH ignored): the libraries still load."""
    from benchwright_sandbox_manager.runtime import runtime_files

    backend = get_backend("local", tmp_path)
    await backend.create("s1")
    for name, text in runtime_files().items():
        await backend.put_file("s1", name, text.encode())
    scorer = (
        "import requests\n"
        "from bench_task import BenchTask\n\n"
        "class Task(BenchTask):\n"
        "    def solve(self, index, input):\n"
        "        return requests.__name__\n\n"
        "    def score(self, index, output, expected):\n"
        "        return 1.0 if output == expected else 0.0\n"
    )
    await backend.put_file("s1", "task_impl.py", scorer.encode())
    row = '{"task_id": "t0", "input": {}, "expected": "requests"}\n'
    await backend.put_file("s1", "tasks.jsonl", row.encode())
    argv = ["python", "-E", "-s", "bench_runner.py"]
    argv += ["--impl", "task_impl.py", "--data", "tasks.jsonl"]
    lines = await collect(
        backend, "s1", argv, stdin_lines=['{"index": 0, "trial": 0}'], env={}, timeout_s=60
    )
    result = __import__("json").loads(lines[-1])
    assert result["outcome"] == "pass", result
    await backend.kill("s1")
