"""A sandbox's own absolute directories (``CreateSandbox.dirs``), as a Harbor task has them.

The checks every backend passes are in the conformance suite; here: the rules on
paths, where the local backend keeps the directories and who owns them, what the
unisolated mode refuses, and the whole path through the manager's handlers.
"""

import asyncio
import json
import os
from pathlib import Path

import pytest

from benchwright_sandbox_manager.backends import get_backend
from benchwright_sandbox_manager.backends.local import LocalBackend
from benchwright_sandbox_manager.ports import (
    MAX_SANDBOX_DIRS,
    IsolationUnavailableError,
    UnsafePathError,
    sandbox_cwd,
    sandbox_dirs,
    sandbox_path,
    split_path,
)
from benchwright_shared import subjects
from benchwright_shared.bus import jetstream
from benchwright_shared.contracts import (
    CreateSandbox,
    ExecInSandbox,
    KillSandbox,
    SandboxCommandFailed,
    SandboxCreated,
    SandboxExecFinished,
    SandboxFile,
    SandboxKilled,
    SnapshotSandbox,
)
from benchwright_shared.settings import Settings
from tests.sandbox_manager.conftest import SandboxService, new_id

HARBOR_DIRS = ["/app", "/logs", "/tests", "/solution"]


# -- the rules ------------------------------------------------------------------------
def test_a_harbor_tasks_directories_are_taken() -> None:
    assert sandbox_dirs(HARBOR_DIRS) == tuple(HARBOR_DIRS)
    assert sandbox_dirs(["/home/agent", "/srv/a", "/srv/b", "/opt/task"]) == (
        "/home/agent",
        "/srv/a",
        "/srv/b",
        "/opt/task",
    )
    assert sandbox_dirs([]) == ()


@pytest.mark.parametrize(
    ("dirs", "named"),
    [
        (["app"], "'app'"),
        (["/"], "'/'"),
        (["/app/"], "'/app/'"),
        (["/app/.."], "'/app/..'"),
        (["/a/../b"], "'/a/../b'"),
        (["/a/./b"], "'/a/./b'"),
        (["//app"], "'//app'"),
        (["/app\x00"], "'/app\\x00'"),
        (["/app\nx"], "'/app\\nx'"),
        (["/etc"], "/etc"),
        (["/etc/app"], "/etc"),
        (["/usr/local/app"], "/usr"),
        (["/bin"], "/bin"),
        (["/lib"], "/lib"),
        (["/lib64/x"], "/lib64"),
        (["/proc/x"], "/proc"),
        (["/dev"], "/dev"),
        (["/tmp/app"], "/tmp"),
        (["/run"], "/run"),
        (["/opt/benchwright/site"], "/opt/benchwright"),
        (["/opt"], "/opt/benchwright"),  # over a system place hides it just the same
        (["/work"], "/work"),
        (["/work/app"], "/work"),
        (["/app", "/app"], "overlaps"),
        (["/app", "/app/sub"], "overlaps"),
        (["/app/sub", "/app"], "overlaps"),
    ],
)
def test_bad_directories_are_refused_by_name(dirs: list[str], named: str) -> None:
    with pytest.raises(UnsafePathError) as refused:
        sandbox_dirs(dirs)
    assert named in str(refused.value)


def test_at_most_sixteen_directories() -> None:
    many = [f"/d{i}" for i in range(MAX_SANDBOX_DIRS)]
    assert len(sandbox_dirs(many)) == MAX_SANDBOX_DIRS
    with pytest.raises(UnsafePathError, match="at most 16"):
        sandbox_dirs([*many, "/one-more"])


def test_file_paths_are_relative_or_inside_a_directory() -> None:
    dirs = ("/app", "/logs")
    assert sandbox_path("data/x.txt", dirs) == "data/x.txt"
    assert sandbox_path("/app/x.txt", dirs) == "/app/x.txt"
    assert sandbox_path("/logs/verifier/reward.txt", dirs) == "/logs/verifier/reward.txt"
    for bad in ("/etc/passwd", "/app/../etc/x", "/app", "/application/x", "/app//x", "../x"):
        with pytest.raises(UnsafePathError) as refused:
            sandbox_path(bad, dirs)
        assert repr(bad) in str(refused.value)
    with pytest.raises(UnsafePathError, match="none"):
        sandbox_path("/app/x.txt", ())
    assert split_path("/logs/verifier/reward.txt", dirs) == ("/logs", "verifier/reward.txt")
    assert split_path("/app", dirs) == ("/app", "")


def test_a_command_starts_in_the_working_directory_or_a_directory() -> None:
    dirs = ("/app", "/logs")
    assert sandbox_cwd(None, dirs) is None and sandbox_cwd(".", dirs) is None
    assert sandbox_cwd("sub/dir", dirs) == "sub/dir"
    assert sandbox_cwd("/app", dirs) == "/app"
    assert sandbox_cwd("/logs/verifier", dirs) == "/logs/verifier"
    for bad in ("/etc", "/work", "/", "/app/../etc", "../x", "/application"):
        with pytest.raises(UnsafePathError) as refused:
            sandbox_cwd(bad, dirs)
        assert repr(bad) in str(refused.value)


# -- the local backend ----------------------------------------------------------------
def _local(tmp_path: Path, settings: Settings | None = None) -> LocalBackend:
    backend = get_backend("local", tmp_path, settings or Settings())
    assert isinstance(backend, LocalBackend)
    return backend


async def test_the_folders_behind_the_directories_are_out_of_sight_of_work(
    tmp_path: Path,
) -> None:
    backend = _local(tmp_path)
    await backend.create("s1", dirs=["/app", "/srv/task/logs"])
    await backend.put_file("s1", "/app/x.txt", b"given")
    await backend.put_file("s1", "/srv/task/logs/deep/y.txt", b"deep")
    sandbox = tmp_path / "s1"
    assert (sandbox / "dirs" / "app" / "x.txt").read_bytes() == b"given"
    assert (sandbox / "dirs" / "srv" / "task" / "logs" / "deep" / "y.txt").read_bytes() == b"deep"
    script = (
        "import json, os\n"
        "print(json.dumps({'work': sorted(os.listdir('/work')), 'root': sorted(os.listdir('/')),"
        " 'up': os.path.exists('/work/../dirs'), 'srv': sorted(os.listdir('/srv/task'))}))"
    )
    result = await backend.exec("s1", ["python", "-c", script], stdin=None, env={}, timeout_s=30)
    assert result.exit_code == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["work"] == [] and not seen["up"]
    assert {"app", "srv"} <= set(seen["root"]) and "dirs" not in seen["root"]
    assert seen["srv"] == ["logs"]
    # Closed to others by the sandbox, /app is still where its next command starts.
    closed = await backend.exec("s1", ["chmod", "700", "/app"], stdin=None, env={}, timeout_s=30)
    assert closed.exit_code == 0, closed.stderr
    inside = await backend.exec(
        "s1", ["cat", "x.txt"], stdin=None, env={}, timeout_s=30, cwd="/app"
    )
    assert (inside.exit_code, inside.stdout) == (0, "given"), inside.stderr
    if os.geteuid() == 0:  # a root service: each folder is the sandbox's uid's, not the root
        uid = backend.bubblewrap.uid("s1")
        assert (sandbox / "dirs" / "app").stat().st_uid == uid
        assert (sandbox / "dirs" / "app" / "x.txt").stat().st_uid == uid
        assert (sandbox / "dirs" / "srv" / "task" / "logs" / "deep").stat().st_uid == uid
        assert (sandbox / "dirs" / "srv").stat().st_uid == 0
        assert (sandbox / "dirs").stat().st_uid == 0
    await backend.kill("s1")
    assert not sandbox.exists()
    await backend.close()


async def test_a_directory_over_the_runtime_is_refused(tmp_path: Path) -> None:
    backend = _local(tmp_path)
    prefix = backend.bubblewrap.runtime.prefix
    top = "/" + Path(prefix).parts[1]
    if top in ("/usr", "/opt"):
        pytest.skip(f"the runtime ({prefix}) is in a place every sandbox refuses already")
    with pytest.raises(UnsafePathError, match="Python runtime"):
        await backend.create("s1", dirs=[top])
    assert not (tmp_path / "s1").exists()
    await backend.close()


async def test_unisolated_sandboxes_cannot_present_directories(tmp_path: Path) -> None:
    settings = Settings(sandbox_bwrap="no-such-bwrap-here", sandbox_unisolated=True)
    backend = _local(tmp_path, settings)
    await backend.start()
    with pytest.raises(IsolationUnavailableError, match="a Harbor task's sandbox needs bubblewrap"):
        await backend.create("s1", dirs=["/app"])
    assert not (tmp_path / "s1").exists()
    # Without directories, the opted-out mode still works; a relative cwd is its own.
    await backend.create("s2")
    await backend.put_file("s2", "sub/x.txt", b"x")
    where = ["python", "-c", "import os; print(os.getcwd())"]
    result = await backend.exec("s2", where, stdin=None, env={}, timeout_s=30, cwd="sub")
    assert (result.exit_code, result.stdout.strip()) == (0, str(tmp_path / "s2" / "work" / "sub"))
    missing = await backend.exec("s2", ["true"], stdin=None, env={}, timeout_s=30, cwd="nope")
    assert missing.exit_code == 126 and "nope" in missing.stderr
    await backend.kill("s2")
    await backend.close()


# -- through the manager --------------------------------------------------------------
def _create(dirs: list[str], files: dict[str, str]) -> CreateSandbox:
    return CreateSandbox(
        command_id=new_id(),
        run_id="run_test",
        role="harbor_task_env",
        dirs=dirs,
        files=[SandboxFile(path=path, content=text) for path, text in files.items()],
    )


def _exec(sandbox_id: str, argv: list[str], **fields: object) -> ExecInSandbox:
    return ExecInSandbox(
        command_id=new_id(), run_id="run_test", sandbox_id=sandbox_id, argv=argv, **fields
    )


@pytest.mark.connected
async def test_a_harbor_step_through_the_handlers(sandboxes: SandboxService) -> None:
    created = await sandboxes.send(
        _create(HARBOR_DIRS, {"/app/x.txt": "given\n", "/tests/test.sh": "echo tested\n"})
    )
    assert isinstance(created, SandboxCreated), created
    assert created.metadata["dirs"] == HARBOR_DIRS
    assert created.metadata["isolation"] == "bubblewrap"
    assert created.metadata["benchwright_role"] == "harbor_task_env"
    sandbox_id = created.sandbox_id
    script = (
        "pwd; cat x.txt; mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; "
        "sh /tests/test.sh"
    )
    step = await sandboxes.send(
        _exec(
            sandbox_id,
            ["sh", "-c", script],
            cwd="/app",
            files=[SandboxFile(path="/solution/solve.sh", content="echo solved\n")],
            export=["/logs/verifier/reward.txt", "/logs/missing.txt"],
        )
    )
    assert isinstance(step, SandboxExecFinished), step
    assert (step.exit_code, step.stdout) == (0, "/app\ngiven\ntested\n"), step.stderr
    (exported,) = step.exported
    assert exported.path == "/logs/verifier/reward.txt" and exported.size_bytes == 2
    bucket = await jetstream(sandboxes.service.manager.bus()).object_store(
        subjects.ARTIFACTS_BUCKET
    )
    assert (await bucket.get(exported.object_name)).data == b"1\n"
    reward = await sandboxes.exec(sandbox_id, ["cat", "/logs/verifier/reward.txt"])
    assert (reward.exit_code, reward.stdout) == (0, "1\n")
    solved = await sandboxes.send(_exec(sandbox_id, ["sh", "solve.sh"], cwd="/solution"))
    assert isinstance(solved, SandboxExecFinished) and solved.stdout == "solved\n"
    # /work holds the runtime, never the directories' folders.
    listing = await sandboxes.exec(sandbox_id, ["ls", "-A", "/work"])
    assert not {"app", "logs", "tests", "solution", "dirs", "x.txt"} & set(listing.stdout.split())

    refused = await sandboxes.send(_exec(sandbox_id, ["true"], cwd="/etc"))
    assert isinstance(refused, SandboxCommandFailed) and refused.error_type == "unsafe_path"
    assert "'/etc'" in refused.detail
    for path in ("/etc/passwd", "/app/../etc/x"):
        escaped = await sandboxes.send(
            _exec(sandbox_id, ["touch", "/app/ran"], files=[SandboxFile(path=path, content="x")])
        )
        assert isinstance(escaped, SandboxCommandFailed), escaped
        assert escaped.error_type == "unsafe_path" and path in escaped.detail
    assert "ran" not in (await sandboxes.exec(sandbox_id, ["ls", "/app"])).stdout

    snapshot = await sandboxes.send(
        SnapshotSandbox(command_id=new_id(), run_id="run_test", sandbox_id=sandbox_id)
    )
    assert isinstance(snapshot, SandboxCommandFailed), snapshot
    assert snapshot.error_type == "snapshot_unsupported" and "/app" in snapshot.detail

    folder = sandboxes.service.manager.root / "local" / sandbox_id
    assert (folder / "dirs" / "app" / "x.txt").exists()
    killed = await sandboxes.send(
        KillSandbox(command_id=new_id(), run_id="run_test", sandbox_id=sandbox_id)
    )
    assert isinstance(killed, SandboxKilled)
    assert not folder.exists()


@pytest.mark.connected
@pytest.mark.parametrize(
    ("dirs", "files", "named"),
    [
        (["/etc/app"], {}, "/etc"),
        (["/app", "/app/x"], {}, "overlaps"),
        (["app"], {}, "'app'"),
        (["/app"], {"/logs/x.txt": "x"}, "/logs/x.txt"),
        (["/app"], {"/app/../etc/x": "x"}, "/app/../etc/x"),
    ],
)
async def test_bad_directories_and_paths_refuse_the_create(
    sandboxes: SandboxService, dirs: list[str], files: dict[str, str], named: str
) -> None:
    refused = await sandboxes.send(_create(dirs, files))
    assert isinstance(refused, SandboxCommandFailed), refused
    assert refused.error_type == "unsafe_path" and named in refused.detail
    assert list((sandboxes.service.manager.root / "local").iterdir()) == []


@pytest.mark.connected
async def test_an_image_is_refused_where_images_do_not_run(sandboxes: SandboxService) -> None:
    asked = _create(["/app"], {}).model_copy(update={"image": "ghcr.io/acme/task:1"})
    refused = await sandboxes.send(asked)
    assert isinstance(refused, SandboxCommandFailed), refused
    assert refused.error_type == "image_unsupported"
    assert "ghcr.io/acme/task:1" in refused.detail and "sandbox0" in refused.detail
    assert list((sandboxes.service.manager.root / "local").iterdir()) == []


@pytest.mark.connected
async def test_an_unisolated_service_refuses_a_harbor_sandbox(
    nats_url: str, tmp_path: Path
) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        nats_url=nats_url,
        sandbox_bwrap="no-bwrap",
        sandbox_unisolated=True,
    )
    service = await SandboxService(settings).start()
    try:
        refused = await service.send(_create(["/app"], {}))
        assert isinstance(refused, SandboxCommandFailed)
        assert refused.error_type == "isolation_unavailable"
        assert "needs bubblewrap" in refused.detail and "/app" in refused.detail
    finally:
        await service.close()


@pytest.mark.connected
async def test_a_dead_copys_directories_are_swept_with_it(sandboxes: SandboxService) -> None:
    created = await sandboxes.send(_create(["/app"], {"/app/x.txt": "x"}))
    assert isinstance(created, SandboxCreated), created
    old = sandboxes.service.manager.root
    assert (old / "local" / created.sandbox_id / "dirs" / "app" / "x.txt").exists()
    await sandboxes.restart()  # a new copy; the old one left on purpose
    manager = sandboxes.service.manager
    assert manager.root != old
    manager.membership.can_judge = lambda: True  # type: ignore[method-assign]
    for _ in range(50):
        await manager.reap()
        if not old.exists():
            break
        await asyncio.sleep(0.1)
    assert not old.exists()
