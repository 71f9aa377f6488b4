"""A task sandbox's exec server (docs/decisions/0051): one server for all of a sandbox's
commands, a wall clock that kills what a command started, commands side by side, a
server that dies or hangs never hangs an exec and is started again, and a kill that
leaves nothing behind. Real bubblewrap sandboxes; the conformance suite covers the
rest of what a command gets through it."""

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from benchwright_sandbox_manager.backends.local import LocalBackend
from benchwright_sandbox_manager.ports import ExecResult
from benchwright_shared.settings import Settings
from tests.sandbox_manager.probes import gone, host_processes, marker

SANDBOX = "sbx_served"


@pytest.fixture
async def backend(tmp_path: Path) -> AsyncIterator[LocalBackend]:
    backend = LocalBackend(tmp_path, Settings(data_dir=tmp_path))
    await backend.start()
    if backend.isolation != "bubblewrap":
        pytest.skip("bubblewrap cannot build sandboxes here")
    await backend.create(SANDBOX, dirs=["/app"])
    yield backend
    await backend.kill(SANDBOX)
    await backend.close()


async def run(
    backend: LocalBackend, command: str, *, timeout_s: float = 30, stdin: bytes | None = None
) -> ExecResult:
    return await backend.exec(
        SANDBOX, ["sh", "-c", command], stdin=stdin, env={}, timeout_s=timeout_s, cwd="/app"
    )


def server_pids(tmp_path: Path) -> list[str]:
    """The host's bubblewrap processes holding the sandbox's directory: its exec server's."""
    return host_processes(str(tmp_path / SANDBOX / "work"))


def server_init(bubblewrap_pid: str) -> int:
    """The host pid of the server itself (bubblewrap's child, the sandbox's PID 1)."""
    children = Path(f"/proc/{bubblewrap_pid}/task/{bubblewrap_pid}/children").read_text()
    return int(children.split()[0])


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie has ended: only its parent's wait is left)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


async def test_one_server_runs_every_command_of_a_sandbox(
    backend: LocalBackend, tmp_path: Path
) -> None:
    first = await run(backend, "echo one > /tmp/seen; id -un; pwd")
    assert (first.exit_code, first.stdout) == (0, "sandbox\n/app\n"), first.stderr
    servers = server_pids(tmp_path)
    assert len(servers) == 1
    second = await run(backend, "cat /tmp/seen; cat /proc/1/cmdline | tr '\\0' ' '")
    assert second.stdout.startswith("one\n") and "control_fd" in second.stdout
    assert server_pids(tmp_path) == servers
    echoed = await run(backend, "cat; exit 7", stdin=b"typed")
    assert (echoed.exit_code, echoed.stdout) == (7, "typed")


async def test_a_command_gets_its_stdio_alone_a_session_of_its_own_and_its_limits(
    backend: LocalBackend,
) -> None:
    done = await run(backend, "echo $$ $(cut -d' ' -f6 /proc/$$/stat); ulimit -c; ls /proc/self/fd")
    assert done.exit_code == 0, done.stderr
    session, core, *listed = done.stdout.splitlines()
    assert listed == ["0", "1", "2", "3"]  # 3: the listing's own; nothing of the server's
    shell, leader = session.split()
    assert shell == leader  # the command leads a session of its own
    assert core == "0"  # started under the request's rlimits


async def test_a_timeout_kills_all_the_command_started(
    backend: LocalBackend, tmp_path: Path
) -> None:
    child, daemon = marker(), marker()
    script = (
        f"sleep {child} & "
        f"setsid sh -c 'sleep {daemon}' </dev/null >/dev/null 2>&1 & "
        "echo started; wait"
    )
    started = time.monotonic()
    result = await run(backend, script, timeout_s=1)
    assert result.timed_out and result.stdout == "started\n" and result.exit_code == -9
    assert time.monotonic() - started < 10
    assert await gone(f"sleep {child}") and await gone(f"sleep {daemon}")
    after = await run(backend, "ls /proc | grep -c '^[0-9]'")
    assert after.exit_code == 0 and int(after.stdout) <= 5  # server, shepherd, sh, ls, grep
    assert len(server_pids(tmp_path)) == 1


async def test_commands_run_side_by_side(backend: LocalBackend) -> None:
    started = time.monotonic()
    results = await asyncio.gather(*(run(backend, f"sleep 1; echo {n}") for n in range(4)))
    assert [r.stdout for r in results] == [f"{n}\n" for n in range(4)]
    assert all(r.exit_code == 0 for r in results)
    assert time.monotonic() - started < 3.5  # not one after the other


async def test_a_command_that_kills_its_shepherd_leaves_nothing_behind(
    backend: LocalBackend, tmp_path: Path
) -> None:
    """The command runs as the sandbox's uid, as its shepherd does: it may kill it."""
    await run(backend, "true")
    servers = server_pids(tmp_path)
    mark = marker()
    started = time.monotonic()
    result = await run(backend, f"sleep {mark} & kill -9 $PPID; wait", timeout_s=60)
    assert result.exit_code == -9 and not result.timed_out and "shepherd" in result.stderr
    assert time.monotonic() - started < 10
    assert await gone(f"sleep {mark}")
    again = await run(backend, "echo still")
    assert (again.exit_code, again.stdout) == (0, "still\n")
    assert server_pids(tmp_path) == servers  # the server itself went on


async def test_a_server_killed_mid_command_ends_it_and_is_started_again(
    backend: LocalBackend, tmp_path: Path
) -> None:
    await run(backend, "true")
    (server,) = server_pids(tmp_path)
    mark = marker()
    running = asyncio.create_task(run(backend, f"sleep {mark}"))
    for _ in range(200):
        if host_processes(f"sleep {mark}"):
            break
        await asyncio.sleep(0.02)
    os.kill(server_init(server), signal.SIGKILL)
    ended = await asyncio.wait_for(running, 10)
    assert ended.exit_code == -9 and "exec server ended" in ended.stderr
    assert await gone(f"sleep {mark}")
    again = await run(backend, "echo back")
    assert (again.exit_code, again.stdout) == (0, "back\n")
    (restarted,) = server_pids(tmp_path)
    assert restarted != server


async def test_a_stopped_server_costs_a_command_its_wall_clock_not_more(
    backend: LocalBackend, tmp_path: Path
) -> None:
    await run(backend, "true")
    (server,) = server_pids(tmp_path)
    stopped = server_init(server)
    os.kill(stopped, signal.SIGSTOP)
    started = time.monotonic()
    stuck = await run(backend, "echo never", timeout_s=1)
    assert stuck.timed_out and stuck.stdout == ""
    assert time.monotonic() - started < 15
    again = await run(backend, "echo back")
    assert (again.exit_code, again.stdout) == (0, "back\n")
    assert server_pids(tmp_path) != [server]
    assert not alive(stopped)  # killed, not left stopped


async def test_kill_takes_the_server_and_its_commands(
    backend: LocalBackend, tmp_path: Path
) -> None:
    mark = marker()
    running = asyncio.create_task(run(backend, f"sleep {mark}", timeout_s=120))
    for _ in range(200):
        if host_processes(f"sleep {mark}"):
            break
        await asyncio.sleep(0.02)
    (server,) = server_pids(tmp_path)
    init = server_init(server)
    await backend.kill(SANDBOX)
    assert not alive(init)
    ended = await asyncio.wait_for(running, 10)
    assert ended.exit_code != 0
    assert await gone(f"sleep {mark}")
    assert server_pids(tmp_path) == [] and not (tmp_path / SANDBOX).exists()


async def test_closing_the_backend_ends_every_server(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path, Settings(data_dir=tmp_path))
    await backend.start()
    if backend.isolation != "bubblewrap":
        pytest.skip("bubblewrap cannot build sandboxes here")
    inits = []
    for name in ("a", "b"):
        await backend.create(name)
        await backend.exec(name, ["true"], stdin=None, env={}, timeout_s=30)
        (server,) = host_processes(str(tmp_path / name / "work"))
        inits.append(server_init(server))
    await backend.close()
    assert not any(alive(pid) for pid in inits)
